/**
 * A small seeded PRNG (mulberry32) so every fuzz case is reproducible from (seed, category, index):
 * `caseRng(seed, 'framing', 17)` gives case 17 of the framing category the same values on every run,
 * whatever ran before it, which is what lets `npm run fuzz -- --seed S --only framing:17` replay one case.
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (!items.length) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)];
  }

  /** `n` distinct items (fewer if the list is shorter), in random order. */
  sample<T>(items: readonly T[], n: number): T[] {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [copy[i], copy[j]] = [copy[j], copy[i]];
    }
    return copy.slice(0, n);
  }
}

/** FNV-1a over the text, for mixing a category name into a seed. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The generator of one case: depends only on the run's seed, the category and the case's index. */
export function caseRng(seed: number, category: string, index: number): Rng {
  return new Rng(hash(`${seed >>> 0}:${category}:${index}`));
}
