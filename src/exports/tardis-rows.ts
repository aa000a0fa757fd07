import type { Level } from '../book/index.js';
import { MAX_PLAIN_NUMBER_BYTES, writeInteger, writePlainNumber } from '../number-text.js';
import type { ChunkBuffer } from './chunk-buffer.js';

/**
 * Pieces of a Tardis CSV row written in JS (docs/TARDIS.md §1): `exchange,symbol,` (the same bytes
 * on every row of a file), the two µs timestamps, numbers in plain decimal text (writePlainNumber:
 * shortest round-trip digits, no exponent), empty cells for what is absent.
 */
export const COMMA = 44;
export const NEWLINE = 10;

/** The most bytes a µs timestamp and its comma take (16 digits until the year 2286). */
export const TIME_BYTES = 21;
/** The most bytes a number and the comma before it take. */
export const NUMBER_BYTES = MAX_PLAIN_NUMBER_BYTES + 1;

/** `prefix` (`exchange,symbol,`) and `timestamp,local_timestamp` at out.pos (room assumed). */
export function rowStart(out: ChunkBuffer, prefix: Buffer, us: number, localUs: number): void {
  const { buf } = out;
  buf.set(prefix, out.pos);
  let pos = writeInteger(buf, out.pos + prefix.length, us);
  buf[pos++] = COMMA;
  out.pos = writeInteger(buf, pos, localUs);
}

/** `,price,amount` of a level, or `,,` when there is none. */
export function levelCells(out: ChunkBuffer, level: Level | undefined): void {
  const { buf } = out;
  let pos = out.pos;
  buf[pos++] = COMMA;
  if (level) pos = writePlainNumber(buf, pos, level.price);
  buf[pos++] = COMMA;
  if (level) pos = writePlainNumber(buf, pos, level.size);
  out.pos = pos;
}

/** `,n` */
export function numberCell(out: ChunkBuffer, n: number | undefined): void {
  out.buf[out.pos++] = COMMA;
  if (n !== undefined) out.pos = writePlainNumber(out.buf, out.pos, n);
}

export function endRow(out: ChunkBuffer): void {
  out.buf[out.pos++] = NEWLINE;
}
