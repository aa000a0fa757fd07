import { describe, expect, it } from 'vitest';
import { GatheredReads } from '../src/book-history/gathered-reads.js';
import { SnapshotDirectory } from '../src/book-history/snapshot-directory.js';

/**
 * The two pieces a cold lookup goes through before its read (src/book-history/): the gathering of
 * concurrent misses into shared reads, and the snapshot directory that names a miss's segment.
 * Pure logic, driven step by step: every read here is a promise the test settles itself.
 */

/** A read function whose calls wait until the test answers them. */
function controlledReads() {
  const calls: { group: string; items: number[]; answer: (values?: Map<number, string>) => void; fail: (err: Error) => void }[] = [];
  const read = (group: string, items: number[]) =>
    new Promise<Map<number, string>>((resolve, reject) => {
      calls.push({
        group,
        items: [...items],
        answer: (values) => resolve(values ?? new Map(items.map((i) => [i, `${group}:${i}`]))),
        fail: reject,
      });
    });
  return { calls, read };
}

/** Lets every settled promise's callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('gathered reads', () => {
  it('read at once while fewer than `concurrent` reads of the group run; the requests that come meanwhile share the next read', async () => {
    const { calls, read } = controlledReads();
    const reads = new GatheredReads<number, number, string>(read, 2, 32);
    const first = reads.get('a', 1, 1);
    const second = reads.get('a', 2, 2);
    // Two reads run, one key each: nothing gathered yet.
    expect(calls.map((c) => c.items)).toEqual([[1], [2]]);
    const later = [3, 4, 5].map((k) => reads.get('a', k, k));
    expect(calls).toHaveLength(2);
    expect(reads.waiting).toBe(5);
    calls[0].answer();
    expect(await first).toBe('a:1');
    await settle();
    // The three that waited go in one read, as soon as one of the two ended.
    expect(calls.map((c) => c.items)).toEqual([[1], [2], [3, 4, 5]]);
    calls[2].answer();
    expect(await Promise.all(later)).toEqual(['a:3', 'a:4', 'a:5']);
    calls[1].answer();
    expect(await second).toBe('a:2');
    await settle();
    expect(reads.waiting).toBe(0);
    expect(calls).toHaveLength(3);
  });

  it('a key already asked for shares its read, queued or running; groups read independently', async () => {
    const { calls, read } = controlledReads();
    const reads = new GatheredReads<number, number, string>(read, 1, 32);
    const running = reads.get('a', 7, 7);
    const again = reads.get('a', 7, 7);
    const queued = reads.get('a', 8, 8);
    const queuedAgain = reads.get('a', 8, 8);
    const other = reads.get('b', 7, 7);
    expect(calls.map((c) => [c.group, c.items])).toEqual([
      ['a', [7]],
      ['b', [7]],
    ]);
    expect(reads.waiting).toBe(3);
    calls[0].answer();
    await settle();
    expect(calls.map((c) => [c.group, c.items])[2]).toEqual(['a', [8]]);
    calls[1].answer();
    calls[2].answer();
    expect(await Promise.all([running, again, queued, queuedAgain, other])).toEqual(['a:7', 'a:7', 'a:8', 'a:8', 'b:7']);
  });

  it('a read takes at most `most` requests; a key it leaves out gets undefined; a failed read fails all its requests, and the next ones read', async () => {
    const { calls, read } = controlledReads();
    const reads = new GatheredReads<number, number, string>(read, 1, 3);
    const first = reads.get('a', 0, 0);
    const rest = [1, 2, 3, 4, 5].map((k) => reads.get('a', k, k));
    calls[0].answer(new Map());
    expect(await first).toBeUndefined();
    await settle();
    expect(calls[1].items).toEqual([1, 2, 3]);
    calls[1].fail(new Error('disk on fire'));
    for (const failed of rest.slice(0, 3)) await expect(failed).rejects.toThrow('disk on fire');
    await settle();
    expect(calls[2].items).toEqual([4, 5]);
    calls[2].answer();
    expect(await Promise.all(rest.slice(3))).toEqual(['a:4', 'a:5']);
  });

  it('turn() resolves at once with nothing waiting, else when the next read ends: work that yields to requests goes between reads', async () => {
    const { calls, read } = controlledReads();
    const reads = new GatheredReads<number, number, string>(read, 1, 32);
    let turned = false;
    await reads.turn();
    void reads.get('a', 1, 1);
    void reads.get('a', 2, 2);
    void reads.turn().then(() => (turned = true));
    await settle();
    expect(turned).toBe(false);
    calls[0].answer();
    await settle();
    expect(turned).toBe(true);
    // Still one waiting (key 2, now read): the next turn waits for that read.
    turned = false;
    void reads.turn().then(() => (turned = true));
    await settle();
    expect(turned).toBe(false);
    calls[1].answer();
    await settle();
    expect(turned).toBe(true);
    expect(reads.waiting).toBe(0);
  });
});

describe('snapshot directory', () => {
  const directory = () => new SnapshotDirectory('a', new Float64Array([100, 200, 300]));

  it('names the gap of an instant: from the latest snapshot at or before it to the next one', () => {
    const d = directory();
    expect(d.gap(0)).toEqual({ start: 0, end: 100, index: 0, first: true, long: false });
    expect(d.gap(99)).toEqual({ start: 0, end: 100, index: 0, first: true, long: false });
    expect(d.gap(100)).toEqual({ start: 100, end: 200, index: 1, first: false, long: false });
    expect(d.gap(199)).toEqual({ start: 100, end: 200, index: 1, first: false, long: false });
    expect(d.gap(300)).toEqual({ start: 300, end: Infinity, index: 3, first: false, long: false });
    expect(d.gap(1e15)).toEqual({ start: 300, end: Infinity, index: 3, first: false, long: false });
    expect(new SnapshotDirectory('b', new Float64Array()).gap(5)).toEqual({ start: 0, end: Infinity, index: 0, first: true, long: false });
  });

  it('learns snapshot times a read found, in any order, known ones ignored; a gap they split is no longer long', () => {
    const d = directory();
    d.markLong(100);
    d.markLong(300);
    expect(d.gap(150).long).toBe(true);
    const bytes = d.bytes;
    d.learn([350, 150, 200, 150, 50]);
    expect(d.size).toBe(6);
    expect(d.bytes).toBe(bytes + 3 * 8);
    expect(d.gap(10)).toEqual({ start: 0, end: 50, index: 0, first: true, long: false });
    expect(d.gap(120)).toEqual({ start: 100, end: 150, index: 2, first: false, long: false });
    expect(d.gap(160)).toEqual({ start: 150, end: 200, index: 3, first: false, long: false });
    expect(d.gap(320)).toEqual({ start: 300, end: 350, index: 5, first: false, long: false });
    expect(d.gap(400)).toEqual({ start: 350, end: Infinity, index: 6, first: false, long: false });
  });
});
