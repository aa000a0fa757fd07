import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';

/** hyparquet-writer's own types (it depends on a hyparquet of its own). */
type Schema = ConstructorParameters<typeof ParquetWriter>[0]['schema'];
type RowGroup = ParquetWriter['row_groups'][number];

/**
 * A Parquet file written row group by row group, each group's bytes handed out as soon as it is
 * encoded, whose footer is kept as bytes, not objects. hyparquet-writer keeps every column chunk's
 * metadata as JS objects until the footer is written: ~625 bytes a column chunk measured, about two
 * thirds of the file itself at depth 100 (a 1 GB book export held ~680 MB), growing for as long as
 * the export runs. Here each row group's metadata is serialized (Thrift compact) once the group is
 * written: ~50 bytes a column chunk, which the footer concatenates. The bytes are exactly those
 * ParquetWriter writes for the same calls (test/parquet-file.test.ts compares them).
 *
 * The footer of Parquet grows with the file (one entry per column chunk), so a file is bounded in
 * column chunks (`maxColumnChunks`): a row group past it throws, and the export is aborted (never
 * silently short). Routes refuse such a request before its first byte where they can tell
 * (routes/orderbook-export.ts).
 */
export class ParquetFile {
  private readonly writer = new TakenWriter();
  private readonly parquet: ParquetWriter;
  /** Each written row group's entry of FileMetaData.row_groups, serialized. */
  private readonly groups: Buffer[] = [];
  private columnChunks = 0;
  /** Where a row group's entry sits in a serialized FileMetaData with that one group (see entryOf). */
  private layout: { head: number; tail: number } | undefined;

  constructor(
    private readonly schema: Schema,
    private readonly maxColumnChunks: number,
  ) {
    this.parquet = new ParquetWriter({ writer: this.writer, schema, statistics: false });
  }

  /** Writes one row group (every column `rows` long) and returns its bytes. */
  writeGroup(columnData: Parameters<ParquetWriter['write']>[0]['columnData'], rows: number): Buffer[] {
    this.columnChunks += columnData.length;
    if (this.columnChunks > this.maxColumnChunks) throw new Error(`a Parquet file of more than ${this.maxColumnChunks} column chunks`);
    void this.parquet.write({ columnData, rowGroupSize: rows });
    for (const pending of this.parquet.pendingIndexes.splice(0)) {
      // Page indexes and bloom filters are written after the last row group: none may be pending.
      if (pending.columnIndex || pending.offsetIndex || pending.bloomFilter) throw new Error('a column chunk of several pages or with a bloom filter');
    }
    for (const group of this.parquet.row_groups.splice(0)) this.groups.push(this.entryOf(group));
    return this.writer.take();
  }

  /** Bytes of footer held so far (the row groups' entries): what the file keeps until it ends. */
  get footerBytes(): number {
    return this.groups.reduce((n, entry) => n + entry.length, 0);
  }

  /** The footer (metadata, its length, the magic bytes): the file's last bytes. */
  finish(): Buffer[] {
    const empty = this.metadata([], this.parquet.num_rows);
    let metadata = empty;
    if (this.layout) {
      // The metadata without row groups around the row_groups list: its header (size, element type
      // struct) in place of the empty list's, then the entries.
      const { tail } = this.layout;
      const n = this.groups.length;
      const listHeader = n > 14 ? Buffer.concat([Buffer.of(0xfc), varint(n)]) : Buffer.of((n << 4) | 0x0c);
      metadata = Buffer.concat([empty.subarray(0, empty.length - tail - 1), listHeader, ...this.groups, empty.subarray(empty.length - tail)]);
    }
    const length = Buffer.alloc(4);
    length.writeUInt32LE(metadata.length);
    this.writer.take();
    return [metadata, length, Buffer.from('PAR1', 'latin1')];
  }

  /** The bytes written before the first row group (the magic). */
  start(): Buffer[] {
    return this.writer.take();
  }

  /**
   * A row group's entry as writeMetadata serializes it inside FileMetaData.row_groups: cut out of the
   * metadata of a file holding that one group. Where it sits is learnt once, from the metadata with
   * the group once and twice (the entries differ from the rest by their length only).
   */
  private entryOf(group: RowGroup): Buffer {
    const one = this.metadata([group], 0n);
    if (!this.layout) {
      const two = this.metadata([group, group], 0n);
      const size = two.length - one.length;
      let head = 0;
      while (one[head] === two[head]) head++;
      this.layout = { head, tail: one.length - head - 1 - size };
    }
    return Buffer.from(one.subarray(this.layout.head + 1, one.length - this.layout.tail));
  }

  /** FileMetaData as ParquetWriter.finish writes it, without its length. */
  private metadata(rowGroups: RowGroup[], numRows: bigint): Buffer {
    const out = new ByteWriter();
    writeMetadata(out, { version: 2, created_by: 'hyparquet', schema: this.schema, num_rows: numRows, row_groups: rowGroups, metadata_length: 0 });
    return Buffer.from(out.getBytes().subarray(0, out.index - 4));
  }
}

/** Unsigned LEB128, as Thrift's compact protocol writes a list's size. */
function varint(n: number): Buffer {
  const bytes: number[] = [];
  for (; n > 0x7f; n >>>= 7) bytes.push((n & 0x7f) | 0x80);
  bytes.push(n);
  return Buffer.from(bytes);
}

/** A ByteWriter whose bytes are taken after every row group: the writer never holds the file. */
class TakenWriter extends ByteWriter {
  take(): Buffer[] {
    if (this.index === 0) return [];
    const out = Buffer.from(this.buffer.slice(0, this.index));
    this.index = 0;
    return [out];
  }
}
