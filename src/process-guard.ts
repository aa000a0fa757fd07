import { currentRequestScope } from './http/request-scope.js';
import { errorText, log } from './log.js';
import { metrics } from './metrics.js';

const uncaught = metrics.counter('tickhouse_uncaught_errors_total', 'Errors nothing caught (logged and answered, never fatal), by kind');

/**
 * No single request may stop the service: an exception or a promise rejection that nothing caught
 * is logged (with the id of the request whose work raised it, when it came from one) and, when it
 * did, that request is answered with a 500 or its connection cut (request-scope.ts). Node's default
 * is to exit. Installed once by main.ts; the error handling of each request path stays the first
 * line (Hono's onError, the replay's run()), this is the net under it.
 */
export function guardProcess(): void {
  const handle = (kind: 'exception' | 'rejection') => (err: unknown) => {
    const scope = currentRequestScope();
    uncaught.inc({ kind });
    log.error(kind === 'exception' ? 'uncaught exception' : 'unhandled rejection', {
      request_id: scope?.requestId,
      error: errorText(err, 'stack'),
    });
    scope?.fail();
  };
  process.on('uncaughtException', handle('exception'));
  process.on('unhandledRejection', handle('rejection'));
}
