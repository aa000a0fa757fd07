# The API and the recorder share this image; docker-compose.yml picks the command.
# Node 24: the current LTS (20 reached its end of life on 2026-04-30); CI runs the suite on both.

# Build: every dependency (TypeScript is a dev dependency), src/ compiled to dist/, then the dev
# dependencies pruned so the runtime stage copies production node_modules only.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs ./scripts/build.mjs
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Read at run time: the migrations (dist/clickhouse/migrations.js resolves ../../clickhouse).
COPY clickhouse ./clickhouse
# The operator CLIs run from source under tsx (a production dependency):
#   docker compose exec api npm run admin -- create-account --email a@b.c --plan monthly
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
EXPOSE 8080
# node itself is PID 1 (exec form, no npm or shell in between): SIGTERM from `docker stop` reaches
# the service's own handler, which drains (src/main.ts). It starts no child processes, so it has no
# zombies to reap; docker-compose.yml adds `init: true` all the same, for processes that
# `docker compose exec` leaves behind.
CMD ["node", "dist/main.js"]
