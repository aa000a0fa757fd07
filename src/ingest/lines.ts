/** A line longer than this is not read into memory: it is reported and stands as a malformed line. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** What stands for an over-long line: no reader accepts it (not JSON, not a receive time, not CSV of any shape). */
export const OVERLONG_LINE = '\u0000';

export interface LineOptions {
  maxLineBytes?: number;
  /** An over-long line: its 1-based number and the byte offset it starts at (it is yielded as OVERLONG_LINE). */
  onOverlong?: (line: number, offset: number) => void;
}

/** Lines of a byte stream one by one (lineBatches). */
export async function* splitLines(chunks: AsyncIterable<Buffer>, options: LineOptions = {}): AsyncIterable<string> {
  for await (const batch of lineBatches(chunks, options)) yield* batch;
}

/**
 * Lines of a byte stream (`\n` or `\r\n`), each decoded as UTF-8 once complete, the lines each chunk
 * completes as one array: a consumer of millions of lines awaits once per chunk, not once per line. A
 * line spread over many chunks is joined once, not re-copied per chunk. A line longer than `maxLineBytes`
 * is skipped to its end without being kept (input without a newline, /dev/zero say, would otherwise
 * grow without bound) and stands as OVERLONG_LINE, so the lines after it keep their numbers.
 */
export async function* lineBatches(chunks: AsyncIterable<Buffer>, options: LineOptions = {}): AsyncIterable<string[]> {
  const max = options.maxLineBytes ?? MAX_LINE_BYTES;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let skipping = false;
  let lineNo = 0;
  let lineStart = 0;
  let offset = 0;
  const overlong = () => {
    options.onOverlong?.(lineNo, lineStart);
    return OVERLONG_LINE;
  };
  for await (const chunk of chunks) {
    const batch: string[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      lineNo++;
      if (skipping || pendingBytes + nl - start > max) {
        batch.push(overlong());
      } else {
        let line = chunk.subarray(start, nl);
        if (pending.length > 0) {
          pending.push(line);
          line = Buffer.concat(pending);
        }
        batch.push(decodeLine(line));
      }
      pending = [];
      pendingBytes = 0;
      skipping = false;
      start = nl + 1;
      lineStart = offset + start;
    }
    if (start < chunk.length && !skipping) {
      pendingBytes += chunk.length - start;
      if (pendingBytes > max) {
        skipping = true;
        pending = [];
      } else pending.push(chunk.subarray(start));
    }
    offset += chunk.length;
    if (batch.length > 0) yield batch;
  }
  if (skipping) {
    lineNo++;
    yield [overlong()];
  } else if (pending.length > 0) yield [decodeLine(Buffer.concat(pending))];
}

function decodeLine(line: Buffer): string {
  const end = line.length > 0 && line[line.length - 1] === 13 ? line.length - 1 : line.length;
  return line.toString('utf8', 0, end);
}
