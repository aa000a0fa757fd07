/**
 * A small Prometheus text-format registry: counters, gauges read at scrape time, and histograms.
 * The service needs a dozen series; a client library would be more code than this.
 */
type Labels = Record<string, string>;

const key = (labels: Labels) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
    .join(',');

interface Metric {
  render(): string;
}

export class Counter implements Metric {
  private readonly values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: Labels = {}, by = 1) {
    const k = key(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }
  get(labels: Labels = {}) {
    return this.values.get(key(labels)) ?? 0;
  }
  render() {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const [k, v] of this.values) lines.push(`${this.name}${k ? `{${k}}` : ''} ${v}`);
    return lines.join('\n');
  }
}

/** A value read when scraped (buffer sizes, connected sockets; `counter`: a count that only grows, kept by its owner). */
export class Gauge implements Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => number,
    private readonly type: 'gauge' | 'counter' = 'gauge',
  ) {}
  render() {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`, `${this.name} ${this.read()}`].join('\n');
  }
}

export class Histogram implements Metric {
  private readonly series = new Map<string, { counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  ) {}
  observe(labels: Labels, seconds: number) {
    const k = key(labels);
    let s = this.series.get(k);
    if (!s) this.series.set(k, (s = { counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    for (let i = 0; i < this.buckets.length; i++) if (seconds <= this.buckets[i]) s.counts[i]++;
    s.sum += seconds;
    s.count++;
  }
  render() {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [k, s] of this.series) {
      const sep = k ? `${k},` : '';
      this.buckets.forEach((b, i) => lines.push(`${this.name}_bucket{${sep}le="${b}"} ${s.counts[i]}`));
      lines.push(`${this.name}_bucket{${sep}le="+Inf"} ${s.count}`);
      lines.push(`${this.name}_sum${k ? `{${k}}` : ''} ${s.sum}`);
      lines.push(`${this.name}_count${k ? `{${k}}` : ''} ${s.count}`);
    }
    return lines.join('\n');
  }
}

export class Registry {
  private readonly metrics = new Map<string, Metric>();
  counter(name: string, help: string) {
    return this.add(name, () => new Counter(name, help)) as Counter;
  }
  histogram(name: string, help: string) {
    return this.add(name, () => new Histogram(name, help)) as Histogram;
  }
  gauge(name: string, help: string, read: () => number) {
    this.metrics.set(name, new Gauge(name, help, read));
  }
  /** A counter its owner keeps (a cache's hits), read when scraped. */
  counterOf(name: string, help: string, read: () => number) {
    this.metrics.set(name, new Gauge(name, help, read, 'counter'));
  }
  /** Series its owner renders itself when scraped (HELP and TYPE lines included): one per name. */
  collect(name: string, render: () => string) {
    this.metrics.set(name, { render });
  }
  render() {
    return `${[...this.metrics.values()].map((m) => m.render()).join('\n')}\n`;
  }
  private add(name: string, make: () => Metric) {
    let m = this.metrics.get(name);
    if (!m) this.metrics.set(name, (m = make()));
    return m;
  }
}

/** The process-wide registry served at /metrics. */
export const metrics = new Registry();
