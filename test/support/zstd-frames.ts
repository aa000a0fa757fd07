/**
 * The frames and blocks of a zstd stream, walked from their headers as RFC 8878 §3.1.1 lays them out
 * (written from the RFC): a frame is the magic number, a frame header, blocks until the one marked
 * last, and an optional 4-byte checksum. Throws on anything else, so a count is never a guess.
 */
export function zstdFrames(data: Buffer): { frames: number; blocks: number } {
  let pos = 0;
  let frames = 0;
  let blocks = 0;
  while (pos < data.length) {
    if (data.readUInt32LE(pos) !== 0xfd2fb528) throw new Error(`no zstd frame at byte ${pos}`);
    const descriptor = data[pos + 4];
    const contentSizeFlag = descriptor >> 6;
    const singleSegment = (descriptor >> 5) & 1;
    const checksum = (descriptor >> 2) & 1;
    const dictionaryIdBytes = [0, 1, 2, 4][descriptor & 3];
    const contentSizeBytes = [singleSegment ? 1 : 0, 2, 4, 8][contentSizeFlag];
    pos += 5 + (singleSegment ? 0 : 1) + dictionaryIdBytes + contentSizeBytes;
    for (let last = 0; !last; ) {
      const header = data.readUIntLE(pos, 3);
      last = header & 1;
      const type = (header >> 1) & 3;
      if (type === 3) throw new Error(`reserved block type at byte ${pos}`);
      pos += 3 + (type === 1 ? 1 : header >>> 3);
      blocks++;
    }
    pos += checksum ? 4 : 0;
    frames++;
  }
  if (pos !== data.length) throw new Error(`the last frame ends at byte ${pos}, past the data's ${data.length}`);
  return { frames, blocks };
}
