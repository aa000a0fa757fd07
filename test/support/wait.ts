/**
 * Waiting in tests (issue 25): a test waits for state it can observe (a message received, a metric,
 * a query gone from the engine's process list), never for a fixed time. The time-out only says when
 * to call it a failure, so it is generous: seconds that a 2-core machine under load still meets.
 */
export const GENEROUS_MS = 30_000;

/** Resolves once `condition` holds (polled every 10 ms); rejects after `timeoutMs` naming `what`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = GENEROUS_MS): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
