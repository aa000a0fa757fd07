import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Engine } from './engine.js';

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'clickhouse');

export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

/** `clickhouse/NNN_name.sql`, in order; statements split on `;` at the end of a line. */
export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_.+\.sql$/.test(f))
    .sort()
    .map((file) => {
      const text = readFileSync(join(dir, file), 'utf8');
      const statements = text
        .split(/;\s*$/m)
        .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
        .filter(Boolean);
      return { version: Number(file.split('_')[0]), name: file, statements };
    });
}

/** Applies every migration not yet recorded in `schema_migrations`; returns the names applied. */
export async function runMigrations(engine: Engine, dir = MIGRATIONS_DIR): Promise<string[]> {
  await engine.command(
    `CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, applied_at DateTime('UTC') DEFAULT now())
     ENGINE = MergeTree ORDER BY version`,
  );
  const done = new Set((await engine.rows<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => Number(r.version)));
  const applied: string[] = [];
  for (const m of loadMigrations(dir)) {
    if (done.has(m.version)) continue;
    // Statements are idempotent (IF NOT EXISTS), so a migration cut short is safely re-run.
    for (const statement of m.statements) await engine.command(statement);
    await engine.command('INSERT INTO schema_migrations (version, name) VALUES ({v:UInt32}, {n:String})', {
      params: { v: m.version, n: m.name },
    });
    applied.push(m.name);
  }
  return applied;
}
