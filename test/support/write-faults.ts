import { rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Real write failures for the embedded account store, as the kernel reports them, whoever runs the
 * tests (root ignores a read-only directory mode): its snapshot's temporary file
 * (`accounts.json.<pid>.tmp`, written then renamed) becomes a link to a device that refuses it.
 *   ENOSPC: /dev/full accepts the open and fails every write, as a full disk does.
 *   EACCES: /proc/sys/kernel/ostype is mode 0444 for everyone, root included.
 * Returns the repair.
 */
export function breakAccountWrites(dataDir: string, errno: 'ENOSPC' | 'EACCES'): () => void {
  const tmp = join(dataDir, `accounts.json.${process.pid}.tmp`);
  rmSync(tmp, { force: true });
  symlinkSync(errno === 'ENOSPC' ? '/dev/full' : '/proc/sys/kernel/ostype', tmp);
  return () => rmSync(tmp, { force: true });
}
