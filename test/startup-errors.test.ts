import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/global-setup.js';
import { startService } from './support/service-process.js';

/** Start-up failures an operator meets: one line on stderr naming the problem, exit 1, no lock left behind. */
let dataDir: string;
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-startup-'));
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Lock files: the embedded account store's, and the embedded engine's `status` (holds its PID). */
const locks = (dir: string) => readdirSync(dir).filter((f) => f === 'accounts.lock' || f === 'status');

describe('start-up errors', () => {
  it('PORT in use: one line, exit 1, no lock file left behind', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
    try {
      const service = startService({ DATA_DIR: dataDir, PORT: String(port) });
      expect(await service.exited).toBe(1);
      expect(service.output().stderr).toBe(`tickhouse: PORT ${port} is already in use on 127.0.0.1: stop the process listening there or set another PORT\n`);
      expect(locks(dataDir)).toEqual([]);
    } finally {
      taken.close();
    }
  });

  it('the account store held by another process: one line, exit 1, that process keeps its lock, the engine lets go', { timeout: 60_000 }, async () => {
    // This test process stands for the other one: alive, and not the child.
    writeFileSync(join(dataDir, 'accounts.lock'), String(process.pid));
    const service = startService({ DATA_DIR: dataDir, PORT: String(await freePort()) });
    expect(await service.exited).toBe(1);
    expect(service.output().stderr).toBe(
      `tickhouse: The embedded account store in ${dataDir} is in use by another process (pid ${process.pid}). ` +
        'Stop that process first, or set REDIS_URL so several processes can share the accounts.\n',
    );
    expect(locks(dataDir)).toEqual(['accounts.lock']);
    expect(readFileSync(join(dataDir, 'accounts.lock'), 'utf8')).toBe(String(process.pid));
    rmSync(join(dataDir, 'accounts.lock'));
  });
});
