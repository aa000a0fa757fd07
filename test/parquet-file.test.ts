import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { LoopBreaks } from '../src/event-loop.js';
import { type ParquetColumn, ParquetFile } from '../src/exports/parquet-file.js';

/**
 * ParquetFile (src/exports/parquet-file.ts, issue 35) writes exactly the bytes hyparquet-writer's
 * ParquetWriter writes for the same row groups, while keeping each group's footer entry as bytes
 * instead of objects. The reference is the library itself, writing the whole file into one buffer.
 */
type Schema = ConstructorParameters<typeof ParquetWriter>[0]['schema'];
type Columns = ParquetColumn[];

/** A book-export-like schema: timestamp Int64, `doubles` nullable Float64 columns. */
function schemaOf(doubles: number): Schema {
  return [
    { name: 'root', num_children: doubles + 1 },
    { name: 'timestamp', type: 'INT64', repetition_type: 'REQUIRED' },
    ...Array.from({ length: doubles }, (_, i) => ({ name: `c${i}`, type: 'DOUBLE' as const, repetition_type: 'OPTIONAL' as const })),
  ];
}

/** Row group `g` of `rows` rows: nulls, repeated values (dictionary pages) and distinct ones (plain pages). */
function groupOf(doubles: number, g: number, rows: number): Columns {
  const times = BigInt64Array.from({ length: rows }, (_, i) => BigInt(1_700_000_000_000 + g * rows + i));
  return [
    { name: 'timestamp', data: times, statistics: true },
    ...Array.from({ length: doubles }, (_, c) => ({
      name: `c${c}`,
      data: Array.from({ length: rows }, (_, i) => (c % 5 === 0 ? null : c % 3 === 0 ? 0.5 : (i * 7919 + g * 31 + c) / 1e4)),
    })),
  ];
}

function reference(schema: Schema, groups: Columns[]): Buffer {
  const writer = new ByteWriter();
  const parquet = new ParquetWriter({ writer, schema, statistics: false });
  for (const columns of groups) void parquet.write({ columnData: columns, rowGroupSize: columns[0].data.length });
  void parquet.finish();
  return Buffer.from(writer.getBytes());
}

async function written(schema: Schema, groups: Columns[], maxColumnChunks = 1 << 20): Promise<Buffer> {
  const file = new ParquetFile(schema, maxColumnChunks);
  const out = [...file.start()];
  for (const columns of groups) out.push(...(await file.writeGroup(columns, columns[0].data.length)));
  out.push(...file.finish());
  return Buffer.concat(out);
}

describe('ParquetFile: a Parquet file row group by row group, its footer kept as bytes (issue 35)', () => {
  it.each([
    ['no row group', 3, []],
    ['one row group', 3, [100]],
    ['14 row groups (the last list size in the header byte)', 5, Array(14).fill(50)],
    ['15 row groups (the first with a size of its own)', 5, Array(15).fill(50)],
    ['130 row groups (a two-byte size), the last one short', 1, [...Array(129).fill(20), 7]],
    ['depth 100 (403 columns), three groups', 402, [325, 325, 12]],
  ])('%s: the same bytes as ParquetWriter', async (_name, doubles, sizes) => {
    const groups = (sizes as number[]).map((rows, g) => groupOf(doubles as number, g, rows));
    const expected = reference(schemaOf(doubles as number), groups);
    const actual = await written(schemaOf(doubles as number), groups);
    expect(actual.length).toBe(expected.length);
    expect(actual.equals(expected)).toBe(true);
  });

  it('a Float64Array column is the optional column whose NaN are nulls: the same bytes as the values with nulls', async () => {
    const groups = [groupOf(40, 0, 300), groupOf(40, 1, 300)];
    const asDoubles = groups.map((g) =>
      g.map((c) => (Array.isArray(c.data) ? { ...c, data: Float64Array.from(c.data as (number | null)[], (v) => v ?? Number.NaN) } : c)),
    );
    expect((await written(schemaOf(40), asDoubles)).equals(reference(schemaOf(40), groups))).toBe(true);
  });

  it('hands out each row group as it is written, and keeps ~50 bytes of footer per column chunk', async () => {
    const file = new ParquetFile(schemaOf(402), 1 << 20);
    const sizes: number[] = [];
    for (let g = 0; g < 20; g++) sizes.push(Buffer.concat(await file.writeGroup(groupOf(402, g, 325), 325)).length);
    // Every group's bytes left with it: each is a whole column set (403 chunks of 325 values).
    expect(Math.min(...sizes)).toBeGreaterThan(403 * 325 * 2);
    expect(file.footerBytes / (20 * 403)).toBeLessThan(64);
  });

  it('refuses the row group that would pass its bound on column chunks', async () => {
    const file = new ParquetFile(schemaOf(3), 8);
    await file.writeGroup(groupOf(3, 0, 10), 10);
    await file.writeGroup(groupOf(3, 1, 10), 10);
    await expect(file.writeGroup(groupOf(3, 2, 10), 10)).rejects.toThrow('a Parquet file of more than 8 column chunks');
  });

  it('encodes a row group in slices, with turns of the event loop between them (issue 35)', async () => {
    // A break due after every column (0 ms): the timer gets a turn between columns, not only after the group.
    const file = new ParquetFile(schemaOf(402), 1 << 20, new LoopBreaks(0));
    let turns = 0;
    let encoding = true;
    const other = () => {
      turns++;
      if (encoding) setImmediate(other);
    };
    setImmediate(other);
    await file.writeGroup(groupOf(402, 0, 325), 325);
    encoding = false;
    // Other work ran beside the encoding of 403 columns, once per turn it gave.
    expect(turns).toBeGreaterThan(100);
  });
});
