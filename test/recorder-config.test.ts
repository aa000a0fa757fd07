import { createReadStream, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGunzip, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { splitLines } from '../src/ingest/lines.js';
import { FrameArchive } from '../src/ingest/recorder/frame-archive.js';
import { loadRecorderOptions } from '../src/ingest/recorder/options.js';

describe('recorder options', () => {
  it('has production defaults and takes flags over environment variables', () => {
    const o = loadRecorderOptions({ RECORDER_ASSETS: '11,22', RECORDER_BATCH_ROWS: '500', GAMMA_URL: 'http://gamma.local/' }, [
      '--batch-rows',
      '700',
      '--archive',
      '/tmp/a',
    ]);
    expect(o).toMatchObject({
      wsUrl: 'wss://ws-subscriptions-clob.polymarket.com/ws/market',
      gammaUrl: 'http://gamma.local',
      assets: ['11', '22'],
      batchRows: 700,
      archiveDir: '/tmp/a',
      pingIntervalMs: 10_000,
      assetsPerSocket: 500,
      discoveryIntervalMs: 300_000,
    });
    expect(loadRecorderOptions({}, ['--all', '--max-assets', '50'])).toMatchObject({ assets: null, maxAssets: 50 });
    // The flag's earlier name does the same.
    expect(loadRecorderOptions({}, ['--active'])).toMatchObject({ assets: null, maxAssets: 0 });
  });

  it('refuses bad or missing values with one line naming them', () => {
    const error = (env: NodeJS.ProcessEnv, argv: string[] = []) => {
      try {
        loadRecorderOptions(env, argv);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message.split('\n')[0];
      }
      throw new Error('accepted');
    };
    expect(error({})).toBe('the recorder needs exactly one of --all (RECORDER_ACTIVE=1) or --assets <id,...> (RECORDER_ASSETS)');
    expect(error({}, ['--all', '--assets', '1'])).toMatch(/exactly one of/);
    // Polymarket serves at most 500 assets a connection.
    expect(error({}, ['--all', '--assets-per-socket', '501'])).toBe(
      'Invalid recorder configuration: RECORDER_ASSETS_PER_SOCKET="501": Too big: expected number to be <=500',
    );
    expect(error({ RECORDER_ACTIVE: '1' }, ['--assets', '1'])).toMatch(/exactly one of/);
    expect(error({ RECORDER_ACTIVE: '1', RECORDER_PING_INTERVAL_MS: 'soon' })).toMatch(/^Invalid recorder configuration: RECORDER_PING_INTERVAL_MS="soon": /);
    expect(error({ RECORDER_ACTIVE: '1' }, ['--ws-url', 'http://x'])).toBe(
      'Invalid recorder configuration: POLYMARKET_WS_URL="http://x": must start with ws:// or wss://',
    );
    expect(error({}, ['--assets', '0xabc'])).toMatch(/^Invalid recorder configuration: RECORDER_ASSETS="0xabc": asset ids are decimal token ids/);
    expect(error({ RECORDER_ACTIVE: '1' }, ['--frobnicate', '1'])).toBe('unknown argument --frobnicate');
    expect(error({ RECORDER_ACTIVE: '1' }, ['--ping-interval-ms', '40000'])).toBe(
      'Invalid recorder configuration: RECORDER_STALE_AFTER_MS must be longer than RECORDER_PING_INTERVAL_MS',
    );
  });
});

describe('one schema for the whole environment', () => {
  it('the service and the recorder parse the same variables: a bad recorder value stops the service too', () => {
    expect(loadConfig({ RECORDER_BATCH_ROWS: '250' }).RECORDER_BATCH_ROWS).toBe(250);
    expect(loadRecorderOptions({ RECORDER_ACTIVE: '1', RECORDER_BATCH_ROWS: '250' }).batchRows).toBe(250);
    expect(() => loadConfig({ RECORDER_BATCH_ROWS: '0' })).toThrow(
      new ConfigError('Invalid configuration: RECORDER_BATCH_ROWS="0": Too small: expected number to be >=1'),
    );
    expect(() => loadRecorderOptions({ RECORDER_ACTIVE: '1', PORT: 'x' })).toThrow(/^Invalid recorder configuration: PORT="x": /);
  });
});

describe('the frame archive', () => {
  it('appends complete gzip members to one file per UTC day, read back as one stream of lines', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tickhouse-archive-'));
    try {
      const archive = new FrameArchive(dir, { chunkChars: 30 });
      const day1 = Date.parse('2026-03-01T23:59:59.900Z');
      const day2 = Date.parse('2026-03-02T00:00:00.100Z');
      const frames = Array.from({ length: 10 }, (_, i) => `{"n":${i},"text":"ü \\" ${'x'.repeat(i)}"}`);
      frames.slice(0, 6).forEach((f) => archive.append(f, day1));
      frames.slice(6).forEach((f) => archive.append(f, day2));
      await archive.flush();
      expect(readdirSync(dir).sort()).toEqual(['polymarket-2026-03-01.jsonl.gz', 'polymarket-2026-03-02.jsonl.gz']);
      const first = readFileSync(join(dir, 'polymarket-2026-03-01.jsonl.gz'));
      // Several members, each starting with the gzip magic and deflate method bytes.
      expect(first.filter((b, i) => b === 0x1f && first[i + 1] === 0x8b && first[i + 2] === 8).length).toBeGreaterThan(1);
      expect(gunzipSync(first).toString('utf8')).toBe(`${frames.slice(0, 6).join('\n')}\n`);
      const lines: string[] = [];
      for await (const line of splitLines(createReadStream(join(dir, 'polymarket-2026-03-02.jsonl.gz')).pipe(createGunzip()))) lines.push(line);
      expect(lines).toEqual(frames.slice(6));
      expect(archive.stats).toMatchObject({ frames: 10, pendingChars: 0, failures: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
