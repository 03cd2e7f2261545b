import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import type { WirePicture, WireRecord } from '../../src/visualizer/wire.ts';
import { type VisualizerServer, startVisualizerServer } from '../../src/visualizer/server.ts';
import { VisualizerHub } from '../../src/visualizer/stream.ts';
import { forbidden, secretPod, startPodSystem, tick } from './helpers.ts';

let hub: VisualizerHub | undefined;
let server: VisualizerServer | undefined;
afterEach(async () => {
  await server?.close();
  hub?.close();
  server = undefined;
  hub = undefined;
});

interface SseMessage {
  event: string;
  data: unknown;
}

/** Opens /api/stream and collects its messages until `done` says enough. */
function readStream(url: string, done: (messages: SseMessage[]) => boolean, timeoutMs = 5_000): Promise<{ messages: SseMessage[]; raw: string; contentType: string }> {
  return new Promise((resolve, reject) => {
    const messages: SseMessage[] = [];
    let raw = '';
    let buffer = '';
    const req = http.get(url, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += chunk;
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event && data) messages.push({ event, data: JSON.parse(data) });
        }
        if (done(messages)) {
          clearTimeout(timer);
          req.destroy();
          resolve({ messages, raw, contentType: String(res.headers['content-type']) });
        }
      });
    });
    req.on('error', (err) => {
      if (!req.destroyed) reject(err);
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`stream: timed out with ${JSON.stringify(messages)}`));
    }, timeoutMs);
  });
}

async function get(url: string): Promise<{ status: number; contentType: string; body: string }> {
  const res = await fetch(url);
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.text() };
}

describe('visualizer server', () => {
  it('serves the page, the picture and the stream', async () => {
    hub = new VisualizerHub({ flushMs: 20 });
    server = await startVisualizerServer(new Map([['n1', { hub }]]), '127.0.0.1', 0);
    const base = `http://127.0.0.1:${server.port}`;
    const { actor } = startPodSystem(hub, secretPod());
    await tick();

    const page = await get(`${base}/`);
    expect(page.status).toBe(200);
    expect(page.contentType).toMatch(/text\/html/);
    // The built page, or (before `npm run build:visualizer`) a note saying to build it.
    expect(page.body).toContain('<title>statelet visualizer</title>');

    const snapshot = await get(`${base}/api/snapshot`);
    expect(snapshot.contentType).toBe('application/json');
    const picture = JSON.parse(snapshot.body) as WirePicture;
    expect(picture.actors[0]?.snapshot?.value).toEqual({ syncing: { worker: 'idle', progress: 'running' } });

    expect((await get(`${base}/nope`)).status).toBe(404);

    // A client connecting late gets the picture first, then batches.
    const streamed = readStream(`${base}/api/stream`, (m) => m.some((x) => x.event === 'batch'));
    await vi.waitFor(() => expect(hub!.subscribers).toBe(1));
    actor.send({ type: 'POD.UPDATE', pod: secretPod(), updateType: 'update' });
    const { messages, raw, contentType } = await streamed;
    expect(contentType).toMatch(/^text\/event-stream/);
    expect(messages[0]?.event).toBe('picture');
    expect((messages[0]?.data as WirePicture).actors[0]?.actor.pod).toEqual({ namespace: 'default', name: 'web', uid: 'uid-1' });
    const batch = messages.find((m) => m.event === 'batch')?.data as WireRecord[];
    expect(batch.some((r) => r.kind === 'event' && r.type === 'POD.UPDATE')).toBe(true);
    for (const word of forbidden) {
      expect(raw).not.toContain(word);
      expect(snapshot.body).not.toContain(word);
    }
    // The client disconnects once it has what it waited for; the hub lets go of it.
    await vi.waitFor(() => expect(hub!.subscribers).toBe(0));

    // The actor's history: what happened before anyone watched, sanitized like the stream.
    const history = await get(`${base}/api/history?actor=${encodeURIComponent(actor.sessionId)}`);
    expect(history.contentType).toBe('application/json');
    const records = JSON.parse(history.body) as WireRecord[];
    expect(records[0]).toMatchObject({ kind: 'event', type: 'xstate.init', payload: { pod: { name: 'web' } } });
    expect(records).toContainEqual(expect.objectContaining({ kind: 'step', transitions: [{ source: 'pod.syncing.worker.working', targets: ['pod.syncing.worker.idle'] }] }));
    expect(records.some((r) => r.kind === 'event' && r.type === 'POD.UPDATE')).toBe(true);
    const seqs = records.map((r) => (r.kind === 'event' || r.kind === 'step' ? r.seq : 0));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    for (const word of forbidden) expect(history.body).not.toContain(word);
    expect(JSON.parse((await get(`${base}/api/history?actor=x:999`)).body)).toEqual([]);
  });

  it('with several nodes: lists them, serves each one\'s picture and stream by name (the first by default), and 404 for a node it does not show', async () => {
    hub = new VisualizerHub({ flushMs: 20 });
    const other = new VisualizerHub({ flushMs: 20 });
    try {
      const nodes = new Map([['hollow-0', { hub }], ['hollow-1', { hub: other }]]);
      server = await startVisualizerServer(nodes, '127.0.0.1', 0);
      const base = `http://127.0.0.1:${server.port}`;
      startPodSystem(other, secretPod());
      await tick();
      expect(JSON.parse((await get(`${base}/api/nodes`)).body)).toEqual(['hollow-0', 'hollow-1']);
      const pictureOf = async (query: string) => (JSON.parse((await get(`${base}/api/snapshot${query}`)).body) as WirePicture).actors.map((a) => a.actor.pod?.name);
      expect(await pictureOf('')).toEqual([]);
      expect(await pictureOf('?node=hollow-0')).toEqual([]);
      expect(await pictureOf('?node=hollow-1')).toEqual(['web']);
      const streamed = await readStream(`${base}/api/stream?node=hollow-1`, (m) => m.some((x) => x.event === 'picture'));
      expect((streamed.messages[0]?.data as WirePicture).actors[0]?.actor.pod?.name).toBe('web');
      expect(await get(`${base}/api/snapshot?node=hollow-7`)).toMatchObject({ status: 404, body: 'node "hollow-7" is not shown here' });
      // A node that stops is taken out; the server goes on with the others.
      nodes.delete('hollow-0');
      expect(JSON.parse((await get(`${base}/api/nodes`)).body)).toEqual(['hollow-1']);
      expect(await pictureOf('')).toEqual(['web']);
    } finally {
      other.close();
    }
  });

  it('serves a pod\'s log tail, each container\'s or why it has none, and 404 for a pod it does not have', async () => {
    hub = new VisualizerHub({ flushMs: 20 });
    const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-viz-logs-'));
    try {
      await writeFile(path.join(dir, '0.log'), Array.from({ length: 150 }, (_, i) => `2026-11-25T10:00:00Z stdout F line ${i}\n`).join(''));
      const pod = {
        ...secretPod(),
        spec: { containers: [{ name: 'app', image: 'busybox' }, { name: 'side', image: 'busybox' }] },
        status: {
          containerStatuses: [
            { name: 'app', containerID: 'sim://c1', state: { running: {} }, lastState: {}, ready: true, restartCount: 0, image: '', imageID: '' },
            { name: 'side', state: { waiting: { reason: 'ContainerCreating' } }, lastState: {}, ready: false, restartCount: 0, image: '', imageID: '' },
          ],
        },
      } as unknown as Pod;
      server = await startVisualizerServer(new Map([['n1', { hub, logs: { pods: () => [pod], runtime: { containerStatus: async () => ({ logPath: path.join(dir, '0.log'), state: 'CONTAINER_RUNNING' }) as never }, now: Date.now } }]]), '127.0.0.1', 0);
      const base = `http://127.0.0.1:${server.port}`;
      const tails = JSON.parse((await get(`${base}/api/logs?namespace=default&name=web`)).body) as { container: string; text?: string; error?: string }[];
      expect(tails.map((t) => t.container)).toEqual(['app', 'side']);
      expect(tails[0]!.text!.split('\n').slice(0, -1)).toEqual(Array.from({ length: 100 }, (_, i) => `line ${i + 50}`));
      expect(tails[1]).toEqual({ container: 'side', error: 'container "side" in pod "web" is waiting to start: ContainerCreating' });
      expect(await get(`${base}/api/logs?namespace=default&name=nope`)).toMatchObject({ status: 404, body: 'pod "nope" does not exist' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
