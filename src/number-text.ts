/**
 * String(n), faster for the numbers markets are made of. Prices (the exchange's 0.001 grid) and sizes
 * (cents) have at most three decimals, and are written from their integer thousandths k: String()
 * costs ~140 ns for such a number, and a book export or a replay writes millions. It prints the
 * same: below 2^40 the rounding interval of a double is narrower than 0.001, so k / 1000 is the only
 * decimal of at most three places that reads back as the double, and any other that does has more
 * digits. Every other number goes to String().
 */
const MAX_THOUSANDTHS = 2 ** 40 * 1000;
/** '.5' for 500, '.05' for 50, '' for 0: the decimals of a thousandth, trailing zeros dropped. */
const FRACTION = Array.from({ length: 1000 }, (_, f) => (f === 0 ? '' : `.${String(f).padStart(3, '0').replace(/0+$/, '')}`));

/** The text of every thousandth from 0 to 1, by its k: the numbers a market's prices are. */
const UNIT = Array.from({ length: 1001 }, (_, k) => (k === 1000 ? '1' : `0${FRACTION[k]}`));

/** n's integer thousandths when n is exactly one (k / 1000) within ±2^40, NaN otherwise: the one test both writers use. */
function thousandths(n: number): number {
  const k = Math.round(n * 1000);
  return k / 1000 === n && k < MAX_THOUSANDTHS && k > -MAX_THOUSANDTHS ? k : NaN;
}

export function numberText(n: number): string {
  const k = thousandths(n);
  if (Number.isNaN(k)) return String(n);
  // Prices and best bids/asks (0 to 1): their text made once (-0 too: k is then -0, and UNIT[-0] is UNIT[0]).
  if (k >= 0 && k <= 1000) return UNIT[k];
  const abs = Math.abs(k);
  const int = Math.floor(abs / 1000);
  const text = String(int) + FRACTION[abs - int * 1000];
  return k < 0 ? `-${text}` : text;
}

/**
 * numberText without the exponent form String() switches to below 1e-6 and from 1e21: the decimal
 * text exchanges and Tardis files write (Polymarket never sends such a number, but a stored value
 * must still print as one).
 */
export function plainNumberText(n: number): string {
  const s = numberText(n);
  if (!s.includes('e')) return s;
  const [digits, exp] = s.split('e');
  const e = Number(exp);
  const negative = digits.startsWith('-');
  const [int, frac = ''] = (negative ? digits.slice(1) : digits).split('.');
  const all = int + frac;
  const point = int.length + e;
  const body =
    point <= 0 ? `0.${'0'.repeat(-point)}${all}` : point >= all.length ? all + '0'.repeat(point - all.length) : `${all.slice(0, point)}.${all.slice(point)}`;
  return negative ? `-${body}` : body;
}

/** writeNumber, with plainNumberText's digits for the numbers String() writes with an exponent. */
export function writePlainNumber(buf: Buffer, pos: number, n: number): number {
  const abs = Math.abs(n);
  if (abs === 0 || (abs >= 1e-6 && abs < 1e21) || Number.isNaN(n)) return writeNumber(buf, pos, n);
  return writeText(buf, pos, plainNumberText(n));
}

/** Bytes numberText may need: the longest String() of a double has 25 characters (-0.0000012345678901234567). */
export const MAX_NUMBER_BYTES = 25;

/** Bytes writePlainNumber may need: the plain digits of the smallest double (5e-324) take 326, a sign one more. */
export const MAX_PLAIN_NUMBER_BYTES = 330;

/**
 * The decimals of each thousandth as bytes, '.' and up to three digits packed little-endian in one
 * number (0 for none), and how many bytes they take: FRACTION's text, for writeNumber.
 */
const FRACTION_BYTES = new Uint32Array(FRACTION.map((text) => [...text].reduceRight((packed, ch) => packed * 256 + ch.charCodeAt(0), 0)));
const FRACTION_LENGTH = new Uint8Array(FRACTION.map((text) => text.length));

/**
 * numberText(n) written into `buf` at `pos` (room for MAX_NUMBER_BYTES assumed); returns the
 * position after it. Thousandths are written from tables, with no string made: a book export writes
 * some forty numbers a row. The four fraction bytes are always stored and only as many kept as the
 * fraction has: bytes past the returned position are the next write's to overwrite.
 */
export function writeNumber(buf: Buffer, pos: number, n: number): number {
  const k = thousandths(n);
  if (Number.isNaN(k)) return writeOther(buf, pos, n);
  // -0 is written "0", as String(-0).
  if (k < 0) buf[pos++] = 45; // '-'
  const abs = Math.abs(k);
  const int = Math.floor(abs / 1000);
  if (int < 10) buf[pos++] = 48 + int;
  else pos = writeInteger(buf, pos, int);
  const fraction = abs - int * 1000;
  const packed = FRACTION_BYTES[fraction];
  buf[pos] = packed & 0xff;
  buf[pos + 1] = (packed >>> 8) & 0xff;
  buf[pos + 2] = (packed >>> 16) & 0xff;
  buf[pos + 3] = packed >>> 24;
  return pos + FRACTION_LENGTH[fraction];
}

/**
 * String() of the numbers off the grid, remembered by value in a small direct-mapped table, slot by
 * their nearest thousandth, as bytes: copying them costs less than reading a string's characters.
 * Such numbers come from arithmetic (0.47000000000000003) or carry more decimals, a book keeps a
 * level's price for many rows, and String() costs ~90 ns each time: a book export of the bench's
 * asset writes three or four of them a row.
 */
const OTHER_SLOTS = 1024;
const otherKeys = new Float64Array(OTHER_SLOTS).fill(NaN);
const otherBytes = new Uint8Array(OTHER_SLOTS * MAX_NUMBER_BYTES);
const otherLengths = new Uint8Array(OTHER_SLOTS);

function writeOther(buf: Buffer, pos: number, n: number): number {
  const slot = Math.round(n * 1000) & (OTHER_SLOTS - 1);
  const at = slot * MAX_NUMBER_BYTES;
  // NaN is never equal, so never remembered; 0 and -0 are equal, and String() writes both "0".
  if (otherKeys[slot] !== n) {
    const text = String(n);
    for (let i = 0; i < text.length; i++) otherBytes[at + i] = text.charCodeAt(i);
    otherLengths[slot] = text.length;
    otherKeys[slot] = n;
  }
  const length = otherLengths[slot];
  for (let i = 0; i < length; i++) buf[pos + i] = otherBytes[at + i];
  return pos + length;
}

/** An integer's decimal digits at `pos` (String(n) for any other number); returns the position after them. */
export function writeInteger(buf: Buffer, pos: number, n: number): number {
  if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER && Number.isInteger(n))) return writeText(buf, pos, String(n));
  if (n < 1e8) return writeSmall(buf, pos, n);
  // Above 1e8 (every timestamp): the high digits, then the low eight, in 32-bit integer arithmetic.
  const high = Math.floor(n / 1e8);
  pos = writeInteger(buf, pos, high);
  let low = n - high * 1e8;
  for (let i = pos + 7; i >= pos; i--) {
    const q = (low / 10) | 0;
    buf[i] = 48 + (low - q * 10);
    low = q;
  }
  return pos + 8;
}

/** The digits of an integer in [0, 1e8). */
function writeSmall(buf: Buffer, pos: number, n: number): number {
  let end = pos + 1;
  for (let p = 10; p <= n; p *= 10) end++;
  for (let i = end - 1; i >= pos; i--) {
    const q = (n / 10) | 0;
    buf[i] = 48 + (n - q * 10);
    n = q;
  }
  return end;
}

/** Latin-1 text at `pos` (numbers' text is ASCII); a loop, cheaper than Buffer#write for a few bytes. */
function writeText(buf: Buffer, pos: number, text: string): number {
  for (let i = 0; i < text.length; i++) buf[pos + i] = text.charCodeAt(i);
  return pos + text.length;
}
