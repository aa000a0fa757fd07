import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';

export function registerMarketsRoutes(_app: OpenAPIHono<AppEnv>, _deps: AppDeps): void {}
