/**
 * Lines of a byte stream (`\n` or `\r\n`), each decoded as UTF-8 once complete. A line spread over
 * many chunks is joined once, not re-copied per chunk.
 */
export async function* splitLines(chunks: AsyncIterable<Buffer>): AsyncIterable<string> {
  let pending: Buffer[] = [];
  for await (const chunk of chunks) {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      let line = chunk.subarray(start, nl);
      if (pending.length > 0) {
        pending.push(line);
        line = Buffer.concat(pending);
        pending = [];
      }
      yield decodeLine(line);
      start = nl + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
  if (pending.length > 0) yield decodeLine(Buffer.concat(pending));
}

function decodeLine(line: Buffer): string {
  const end = line.length > 0 && line[line.length - 1] === 13 ? line.length - 1 : line.length;
  return line.toString('utf8', 0, end);
}
