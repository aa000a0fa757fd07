import { ByteWriter, type ParquetWriter } from 'hyparquet-writer';
import { writeColumn } from 'hyparquet-writer/src/column.js';
import { encodeNestedValues } from 'hyparquet-writer/src/dremel.js';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import { schemaPathResolver } from 'hyparquet-writer/src/schema.js';
import { snappyCompress } from 'hyparquet-writer/src/snappy.js';
import { LoopBreaks } from '../event-loop.js';

/** hyparquet-writer's own types (it depends on a hyparquet of its own). */
type Schema = ConstructorParameters<typeof ParquetWriter>[0]['schema'];
type RowGroup = ParquetWriter['row_groups'][number];
type ColumnChunk = RowGroup['columns'][number];
/**
 * One column of a row group: its values, and whether it carries min/max statistics. A Float64Array is
 * an optional DOUBLE column whose NaN are nulls, turned into values with nulls only when the column is
 * encoded: the values of a group wait as doubles, never as a boxed number each (those outlived V8's
 * young generation while the group filled, and piled up in the old one).
 */
export interface ParquetColumn {
  name: string;
  data: BigInt64Array | Float64Array | (number | null)[];
  statistics?: boolean;
}

/**
 * A column's values as hyparquet-writer takes them: a Float64Array's NaN as null, written into `into`
 * (one array a file, reused column after column: the encoder keeps no reference past writeColumn). An
 * index loop, not Array.from(data, fn): that walks the typed array through the iterator protocol, an
 * object per value: half of what a Parquet book export allocated (2.5 of 5.6 GB for 200,000 rows at
 * depth 100, sampled).
 */
function withNulls(data: ParquetColumn['data'], into: (number | null)[]): ParquetColumn['data'] {
  if (!(data instanceof Float64Array)) return data;
  into.length = data.length;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    into[i] = Number.isNaN(v) ? null : v;
  }
  return into;
}

/** 'PAR1' as the little-endian word Parquet files begin and end with. */
const MAGIC = 0x31524150;
/** ParquetWriter's defaults, which the files were written with until issue 35: one page per column chunk of a group. */
const PAGE_BYTES = 1 << 20;
const COMPRESSORS = { SNAPPY: snappyCompress };

/**
 * A flat Parquet file (required or optional primitive columns, SNAPPY) written row group by row group,
 * each group's bytes handed out as soon as it is encoded, with the footer kept as bytes, not objects.
 * The bytes are exactly those hyparquet-writer's ParquetWriter writes for the same groups
 * (test/parquet-file.test.ts compares them); what differs is what is kept, and when the work is done:
 *   - ParquetWriter keeps every column chunk's metadata as JS objects until the footer is written:
 *     ~625 bytes a column chunk measured, about two thirds of the file itself at depth 100 (a 1 GB book
 *     export held ~680 MB), for as long as the export runs. Here each row group's footer entry is
 *     serialized (Thrift compact) once the group is written: ~50 bytes a column chunk.
 *   - ParquetWriter encodes a row group in one synchronous call (15–60 ms for 131,072 cells here);
 *     here its columns are encoded a few at a time, with a turn of the event loop every few ms
 *     (issue 35: /healthz waited behind the encodes of every export under way).
 * The footer of Parquet grows with the file (an entry per column chunk), so a file is bounded in
 * column chunks (`maxColumnChunks`): a row group past it throws, and the export is aborted (never
 * silently short). Routes refuse such a request before its first byte where they can tell
 * (routes/orderbook-export.ts).
 */
export class ParquetFile {
  private readonly writer = new TakenWriter();
  private readonly pathOf: ReturnType<typeof schemaPathResolver>;
  /** Each written row group's entry of FileMetaData.row_groups, serialized. */
  private readonly groups: Buffer[] = [];
  private rows = 0n;
  private columnChunks = 0;
  /** Where a row group's entry sits in a serialized FileMetaData with that one group (see entryOf). */
  private layout: { head: number; tail: number } | undefined;
  /** Per column: the metadata chunkEntry cuts a chunk's entry out of, without the chunk. */
  private readonly withoutChunk = new Map<string, Buffer>();
  /** The values of the column being encoded (withNulls). */
  private readonly nullable: (number | null)[] = [];
  constructor(
    private readonly schema: Schema,
    private readonly maxColumnChunks: number,
    /** How often the encoding of a row group waits for a turn of the event loop (every 5 ms of it). */
    private readonly breaks = new LoopBreaks(5),
  ) {
    this.pathOf = schemaPathResolver(schema);
    this.writer.appendUint32(MAGIC);
  }

  /** The bytes before the first row group (the magic). */
  start(): Buffer[] {
    return this.writer.take();
  }

  /** Writes one row group (every column `rows` long) and returns its bytes. */
  async writeGroup(columns: ParquetColumn[], rows: number): Promise<Buffer[]> {
    this.columnChunks += columns.length;
    if (this.columnChunks > this.maxColumnChunks) throw new Error(`a Parquet file of more than ${this.maxColumnChunks} column chunks`);
    const groupStart = this.writer.offset;
    // Each column chunk's footer entry, serialized as soon as the chunk is written: its metadata objects
    // (~600 bytes each) die young. Kept through the group's turns, they survived scavenges, V8 pretenured
    // their allocation sites, and the export's garbage went straight to the old generation: +80–115 MB
    // of heap during one export at depth 100 (the fuzz harness's stalled Parquet case, issue 35).
    const chunks: Buffer[] = [];
    let uncompressed = 0n;
    for (const { name, data, statistics = false } of columns) {
      if (data.length !== rows) throw new Error('parquet columns must have the same length');
      // A flat schema: the column's path is root → column, its only leaf.
      const path = this.pathOf([name]);
      const schemaPath = path.map((node) => node.element);
      const column = {
        columnName: name,
        element: schemaPath[schemaPath.length - 1],
        schemaPath,
        codec: 'SNAPPY' as const,
        compressors: COMPRESSORS,
        stats: statistics,
        pageSize: PAGE_BYTES,
        columnIndex: false,
        offsetIndex: true,
      };
      const written = writeColumn({ writer: this.writer, column, pageData: encodeNestedValues(path, withNulls(data, this.nullable)) });
      // Page indexes and bloom filters would be written after the last row group: a chunk needs none.
      if (written.columnIndex || written.offsetIndex || written.bloomFilter) throw new Error('a column chunk of several pages or with a bloom filter');
      uncompressed += written.chunk.meta_data?.total_uncompressed_size ?? 0n;
      chunks.push(this.chunkEntry(written.chunk, column.element));
      if (this.breaks.due()) await this.breaks.turn();
    }
    this.rows += BigInt(rows);
    // The group's entry with no columns, then its column list put in: field 1 (a list, the first field:
    // header 0x19) and its size, the chunks' entries, the group's other fields.
    const empty = this.entryOf({
      columns: [],
      total_byte_size: uncompressed,
      num_rows: BigInt(rows),
      total_compressed_size: BigInt(this.writer.offset - groupStart),
    });
    if (empty[0] !== 0x19) throw new Error('unexpected row group layout');
    this.groups.push(Buffer.concat([empty.subarray(0, 1), listHeader(chunks.length), ...chunks, empty.subarray(2)]));
    return this.writer.take();
  }

  /**
   * A column chunk's entry as writeMetadata serializes it inside RowGroup.columns: cut out of the
   * metadata of a file whose schema is that one column and whose one group holds that one chunk (the
   * entry depends on the chunk and its schema element only; the rest is shorter than the full schema).
   */
  private chunkEntry(chunk: ColumnChunk, element: Schema[number]): Buffer {
    const schema = [{ name: 'root', num_children: 1 }, element];
    const group = (columns: ColumnChunk[]) => [{ columns, total_byte_size: 0n, num_rows: 0n }];
    const one = serializedMetadata(schema, group([chunk]), 0n);
    let none = this.withoutChunk.get(element.name);
    if (!none) this.withoutChunk.set(element.name, (none = serializedMetadata(schema, group([]), 0n)));
    // The first byte that differs is the columns list's header; the entry follows it.
    let at = 0;
    while (one[at] === none[at]) at++;
    return Buffer.from(one.subarray(at + 1, at + 1 + one.length - none.length));
  }

  /** Bytes of footer held so far (the row groups' entries): what the file keeps until it ends. */
  get footerBytes(): number {
    return this.groups.reduce((n, entry) => n + entry.length, 0);
  }

  /** The footer (metadata, its length, the magic): the file's last bytes. */
  finish(): Buffer[] {
    const empty = this.metadata([], this.rows);
    let metadata = empty;
    if (this.layout) {
      // The metadata without row groups around the row_groups list: its header (size, element type
      // struct) in place of the empty list's, then the entries.
      const { tail } = this.layout;
      metadata = Buffer.concat([
        empty.subarray(0, empty.length - tail - 1),
        listHeader(this.groups.length),
        ...this.groups,
        empty.subarray(empty.length - tail),
      ]);
    }
    const end = Buffer.alloc(8);
    end.writeUInt32LE(metadata.length, 0);
    end.writeUInt32LE(MAGIC, 4);
    return [metadata, end];
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
    return serializedMetadata(this.schema, rowGroups, numRows);
  }
}

function serializedMetadata(schema: Schema, rowGroups: RowGroup[], numRows: bigint): Buffer {
  const out = new ByteWriter();
  writeMetadata(out, { version: 2, created_by: 'hyparquet', schema, num_rows: numRows, row_groups: rowGroups, metadata_length: 0 });
  return Buffer.from(out.getBytes().subarray(0, out.index - 4));
}

/** Thrift compact's header of a list of `n` structs: the size in the high nibble up to 14, else on its own. */
function listHeader(n: number): Buffer {
  return n > 14 ? Buffer.concat([Buffer.of(0xfc), varint(n)]) : Buffer.of((n << 4) | 0x0c);
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
