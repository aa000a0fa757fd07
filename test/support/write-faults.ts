import { spawnSync } from 'node:child_process';
import { rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Real write failures for the embedded account store, as the kernel reports them, whoever runs the
 * tests (root ignores a read-only directory mode): its snapshot's temporary file
 * (`accounts.json.<pid>.tmp`, written then renamed) and its readiness probe's file
 * (`accounts.json.<pid>.probe`) become links to a device that refuses them.
 *   ENOSPC: /dev/full accepts the open and fails every write, as a full disk does.
 *   EACCES: /proc/sys/kernel/ostype is mode 0444 for everyone, root included.
 * Returns the repair.
 */
export function breakAccountWrites(dataDir: string, errno: 'ENOSPC' | 'EACCES'): () => void {
  const files = ['tmp', 'probe'].map((ext) => join(dataDir, `accounts.json.${process.pid}.${ext}`));
  for (const file of files) {
    rmSync(file, { force: true });
    symlinkSync(errno === 'ENOSPC' ? '/dev/full' : '/proc/sys/kernel/ostype', file);
  }
  return () => files.forEach((file) => rmSync(file, { force: true }));
}

/**
 * A disk that refuses every write of a running process (issue 35): its soft RLIMIT_FSIZE becomes
 * `bytes` (prlimit(1): no privilege is needed to lower a limit of one's own child), so a write past that
 * offset fails with EFBIG, as one on a full disk fails with ENOSPC: the kernel refuses it, whoever
 * writes (the engine's own writer included). Node ignores the SIGXFSZ that comes with it. Returns the
 * repair.
 */
export function refuseFileWrites(pid: number, bytes = 0): () => void {
  const set = (limit: string) => {
    const r = spawnSync('prlimit', ['--pid', String(pid), `--fsize=${limit}:`], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`prlimit failed (${r.status}): ${r.stderr || r.error?.message}`);
  };
  set(String(bytes));
  return () => set('unlimited');
}
