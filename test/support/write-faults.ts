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
