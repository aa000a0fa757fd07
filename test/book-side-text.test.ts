import { describe, expect, it } from 'vitest';
import { type Level, OrderBook } from '../src/book/index.js';
import { NO_SEPARATOR, SideText } from '../src/exports/side-text.js';

/**
 * SideText copies the bytes of levels the previous row had instead of writing them again. Whatever
 * it copies, each row's bytes must be the levels written one by one: checked against that, over
 * books changed as the exchange changes them (OrderBook: sizes replaced, levels inserted and
 * removed, whole books replaced) and over lists that reuse level objects in any order, with rows
 * landing in fresh chunks now and then (the previous row then sits in another buffer).
 */
const DEPTH = 10;
const text = (level: Level) => `${String(level.price)}:${String(level.size)}`;
/** A writer of its own (not the export's): `price:size`, two numbers written by String(). */
const writeLevel = (buf: Buffer, pos: number, level: Level) => pos + buf.write(text(level), pos, 'latin1');

let seed = 7;
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const pick = (n: number) => Math.floor(random() * n);

/** Writes each row's side after a one-byte row mark, into chunks that are sometimes replaced, and returns every row's text. */
function writeRows(rows: (readonly Level[])[], separator: number): string[] {
  const side = new SideText(DEPTH, writeLevel, separator);
  let chunk = Buffer.alloc(4096);
  let pos = 0;
  const out: string[] = [];
  for (const levels of rows) {
    if (pos > 3000 || random() < 0.05) {
      chunk = Buffer.alloc(4096);
      pos = 0;
    }
    chunk[pos++] = 0x7c; // '|': something written between two rows' sides
    const start = pos;
    pos = side.write(chunk, pos, levels);
    out.push(chunk.toString('latin1', start, pos));
  }
  return out;
}

const expected = (levels: readonly Level[], separator: string) => levels.slice(0, DEPTH).map(text).join(separator);

describe('SideText', () => {
  const book = new OrderBook();
  const rows: Level[][] = [];
  for (let r = 0; r < 20_000; r++) {
    const events = 1 + pick(3);
    for (let e = 0; e < events; e++) {
      if (random() < 0.002) {
        const levels = Array.from({ length: pick(15) }, () => ({ price: (1 + pick(99)) / 100, size: 1 + pick(500) }));
        book.replace(levels, []);
      } else {
        // Mostly near the top, where the written depth is; a size 0 removes the level.
        const price = (99 - Math.min(pick(40), pick(40))) / 100;
        book.apply('bid', price, random() < 0.3 ? 0 : Math.round(random() * 1e5) / 100 + (random() < 0.1 ? 1e-9 : 0));
      }
    }
    rows.push(book.levels('bid'));
  }

  it('writes what writing every level would, for books changed by the exchange (no separator, and a comma)', () => {
    for (const [separator, mark] of [
      [NO_SEPARATOR, ''],
      [44, ','],
    ] as const) {
      const got = writeRows(rows, separator);
      const wrong = rows.map((levels, r) => [r, expected(levels, mark)] as const).filter(([r, want]) => got[r] !== want);
      expect(wrong.slice(0, 3)).toEqual([]);
    }
  });

  it('writes what writing every level would when level objects come back in any order, repeated, or past the depth', () => {
    const pool = Array.from({ length: 14 }, (_, i) => ({ price: i / 7, size: 10 + i }));
    const shuffled: Level[][] = [];
    for (let r = 0; r < 20_000; r++) {
      const prev = shuffled[r - 1] ?? [];
      const next = random() < 0.5 ? prev.slice() : Array.from({ length: pick(14) }, () => pool[pick(pool.length)]);
      if (next.length && random() < 0.5) next.splice(pick(next.length), 1);
      if (random() < 0.5) next.splice(pick(next.length + 1), 0, random() < 0.5 ? pool[pick(pool.length)] : { price: random(), size: 1 });
      shuffled.push(next);
    }
    const got = writeRows(shuffled, 44);
    const wrong = shuffled.map((levels, r) => [r, expected(levels, ',')] as const).filter(([r, want]) => got[r] !== want);
    expect(wrong.slice(0, 3)).toEqual([]);
  });
});
