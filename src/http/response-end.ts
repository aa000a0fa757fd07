import type { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import type { AppEnv } from './context.js';
import { abortedByService } from './stream.js';

/**
 * How a response ended: `delivered` (completely, or the client left), or `failed` on the service's
 * side: a 5xx, or a stream the service aborted after its headers (stream.ts).
 */
export type ResponseOutcome = 'delivered' | 'failed';

/**
 * Runs `then` once the response the rest of the chain produced has ended: after its last byte, or
 * the client leaving, or the service aborting it — a stream's end, not its handler's return. For
 * middleware, after `await next()`: a heavy request's slot is held until then, and a failed answer
 * is not counted (src/auth/).
 */
export function whenResponseEnds(c: Context<AppEnv>, then: (outcome: ResponseOutcome) => void): void {
  const status = c.res.status;
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (outgoing) {
    const ended = () => then(status >= 500 || abortedByService.has(outgoing) ? 'failed' : 'delivered');
    if (outgoing.closed) ended();
    else outgoing.once('close', ended);
    return;
  }
  // The app driven through fetch (tests, the replay's handshake): the body is pulled through here. A
  // HEAD request's body is dropped by Hono after the chain (it answers the GET's headers only): ended now.
  const body = c.req.raw.method === 'HEAD' ? null : c.res.body;
  if (!body) return then(status >= 500 ? 'failed' : 'delivered');
  let done = false;
  const end = (outcome: ResponseOutcome) => {
    if (done) return;
    done = true;
    then(outcome);
  };
  const reader = body.getReader();
  const through = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await reader.read();
          if (next.done) {
            controller.close();
            end(status >= 500 ? 'failed' : 'delivered');
          } else controller.enqueue(next.value);
        } catch (err) {
          end('failed');
          controller.error(err);
        }
      },
      cancel(reason) {
        end('delivered');
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  c.res = new Response(through, c.res);
}
