import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { replayLines } from '../src/ingest/replay.js';
import { startReplayService } from './support/replay-service.js';
const POLYMARKET_SAMPLES = 'test/fixtures/polymarket';

it('smoke', async () => {
  const lines = readFileSync(`${POLYMARKET_SAMPLES}/ws-frames.jsonl`, 'utf8').split('\n').filter(Boolean);
  const svc = await startReplayService(Date.UTC(2027, 0, 1));
  await replayLines(svc.te.engine, lines, { sourceId: 'smoke' });
  console.log(await svc.te.engine.rows('SELECT asset_id, toUnixTimestamp64Milli(t) t, seq, event, book_side FROM ticks ORDER BY t, seq'));
  const ws = await svc.connect({ from: 1766481546487, to: 1766481547845, speed: 'max', key: svc.key });
  const got: string[] = [];
  ws.on('message', (d) => got.push(d.toString()));
  const closed = new Promise((r) => ws.on('close', (code, reason) => r([code, reason.toString()])));
  ws.send(JSON.stringify({ assets_ids: ['25245433628208476987364023432306599125597948324625578977436890641930158259698', '20168250870314270898487593595943592687458358996170785976290704639743788087191'], type: 'market' }));
  ws.send('PING');
  console.log(await closed);
  console.log(got.map((g) => g.slice(0, 300)));
  const bad = await fetch(svc.replayUrl({ from: 5, to: 1 }).replace('ws', 'http'), { headers: { Upgrade: 'websocket', Connection: 'Upgrade', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13' } }).catch((e) => e);
  console.log(bad);
  await svc.close();
}, 60_000);
