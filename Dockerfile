# The API and the recorder share this image; docker-compose.yml picks the command.
# Node 24: the current LTS (20 reached its end of life on 2026-04-30); CI runs the suite on both.
FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
COPY clickhouse ./clickhouse
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0
EXPOSE 8080
CMD ["npm", "start"]
