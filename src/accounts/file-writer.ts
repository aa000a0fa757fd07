import { Worker } from 'node:worker_threads';

/**
 * Synced file writes on a thread of their own, for the embedded account store. Node's async fs runs
 * on libuv's thread pool, and so does every query of the embedded engine (chDB): with each pool
 * thread inside a long query or export, an account write waited for them to end (measured: four
 * 3-second queries held a new account's write for 3 s, and counters reached disk as late). A worker
 * doing synchronous writes needs no pool thread, so account writes and counter flushes keep their
 * pace under any engine load.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
function synced(path, body) {
  const fd = fs.openSync(path, 'w');
  try { fs.writeFileSync(fd, body); fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
}
parentPort.on('message', ({ id, op, file, temp, body }) => {
  try {
    if (op === 'replace') { synced(temp, body); fs.renameSync(temp, file); }
    else { synced(temp, 'probe'); fs.unlinkSync(temp); }
    parentPort.postMessage({ id });
  } catch (err) {
    parentPort.postMessage({ id, error: { message: err.message, code: err.code } });
  }
});`;

type Job = { resolve(): void; reject(err: Error): void };

export class FileWriter {
  private worker: Worker | undefined;
  private readonly jobs = new Map<number, Job>();
  private nextId = 0;

  /** Writes `body` to `temp`, syncs it and renames it over `file`: a crash leaves the old file or the new one. */
  replace(file: string, temp: string, body: string): Promise<void> {
    return this.run({ op: 'replace', file, temp, body });
  }

  /** Creates, fills, syncs and removes `temp`: fails as a write would (a full disk, a read-only directory). */
  probe(temp: string): Promise<void> {
    return this.run({ op: 'probe', temp });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private run(message: { op: 'replace' | 'probe'; temp: string; file?: string; body?: string }): Promise<void> {
    const worker = this.started();
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.jobs.set(id, { resolve, reject });
      // Held only while a write is under way: an idle writer never keeps the process alive.
      worker.ref();
      worker.postMessage({ id, ...message });
    });
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    worker.unref();
    worker.on('message', ({ id, error }: { id: number; error?: { message: string; code?: string } }) => {
      const job = this.jobs.get(id);
      this.jobs.delete(id);
      if (this.jobs.size === 0) worker.unref();
      if (!job) return;
      if (!error) return job.resolve();
      job.reject(Object.assign(new Error(error.message), { code: error.code }));
    });
    // The thread died (it should not): fail what it held, start a new one on the next write.
    worker.on('error', (err: Error) => this.abandon(worker, err));
    worker.on('exit', () => this.abandon(worker, new Error('the account store writer thread exited')));
    this.worker = worker;
    return worker;
  }

  private abandon(worker: Worker, err: Error): void {
    if (this.worker === worker) this.worker = undefined;
    for (const job of this.jobs.values()) job.reject(err);
    this.jobs.clear();
  }
}
