/**
 * The visualizer end to end: the agent in-process on sim:// with --visualizer-port, a static pod
 * added while a client streams, and the picture served at /api/snapshot.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Agent, startAgent } from '../../src/agent/agent.ts';
import { parseCommandLine } from '../../src/cli/flags.ts';
import { silentLogger } from '../../src/log.ts';
import type { WirePicture } from '../../src/visualizer/projection.ts';

const image = 'statelet.local/busybox:1';
const manifest = `
apiVersion: v1
kind: Pod
metadata:
  name: visual
  annotations: { example.com/token: annotation-secret-value }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${image}
      command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
      env:
        - { name: TOKEN, value: hunter2 }
        - name: SECRET
          valueFrom: { secretKeyRef: { name: db-credentials, key: password } }
`;
const forbidden = ['hunter2', 'secretKeyRef', 'db-credentials', 'password', 'annotation-secret-value', 'TOKEN'];

let dir: string | undefined;
let agent: Agent | undefined;
afterEach(async () => {
  await agent?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
  agent = undefined;
  dir = undefined;
});

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Collects the raw text of /api/stream until stopped. */
function collectStream(url: string): { text: () => string; stop: () => void } {
  let raw = '';
  const req = http.get(url, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (raw += chunk));
  });
  req.on('error', () => {});
  return { text: () => raw, stop: () => req.destroy() };
}

const progressOf = (value: unknown) => (value as { syncing?: { progress?: unknown } } | undefined)?.syncing?.progress;

describe('visualizer in the agent (sim://)', () => {
  it('serves a running pod actor in /api/snapshot after a static pod is added', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-visualizer-'));
    const manifests = path.join(dir, 'manifests');
    await mkdir(manifests);
    const port = await freePort();
    const parsed = parseCommandLine([
      '--container-runtime-endpoint', 'sim://',
      '--root-dir', path.join(dir, 'root'),
      '--pod-logs-dir', path.join(dir, 'logs'),
      '--pod-manifest-path', manifests,
      '--file-check-frequency', '1s',
      '--hostname-override', 'visual-node',
      '--address', '127.0.0.1',
      '--read-only-port', '0',
      '--healthz-port', '0',
      '--visualizer-port', String(port),
    ]);
    if (parsed.kind !== 'run') throw new Error(`expected a run result, got ${parsed.kind}`);
    agent = await startAgent(parsed.config, silentLogger);
    expect(agent.visualizerUrl).toBe(`http://127.0.0.1:${port}`);
    const base = agent.visualizerUrl!;

    const stream = collectStream(`${base}/api/stream`);
    try {
      await writeFile(path.join(manifests, 'visual.yaml'), manifest);
      const picture = await vi.waitFor(
        async () => {
          const res = await fetch(`${base}/api/snapshot`);
          const body = (await res.json()) as WirePicture;
          const pod = body.actors.find((a) => a.actor.machineId === 'pod' && a.actor.pod?.name === 'visual-visual-node');
          expect(progressOf(pod?.snapshot?.value)).toBe('running');
          return body;
        },
        { timeout: 15_000, interval: 100 },
      );
      expect(picture.definitions.map((d) => d.machineId).sort()).toEqual(expect.arrayContaining(['pleg', 'pod', 'syncLoop']));
      const names = picture.actors.map((a) => a.actor.name);
      expect(names).toEqual(expect.arrayContaining(['syncLoop', 'pods', 'sources', 'pleg']));
      const pod = picture.actors.find((a) => a.actor.machineId === 'pod')!;
      expect(pod.snapshot?.pod).toMatchObject({ progress: { stage: 'running' } });
      expect(pod.actor.pod?.namespace).toBe('default');

      await new Promise((r) => setTimeout(r, 300)); // one more flush for the stream
      const streamed = stream.text();
      expect(streamed).toContain('event: picture');
      expect(streamed).toContain('CONFIG.ADD');
      expect(streamed).toContain('POD.UPDATE');
      const snapshotText = JSON.stringify(picture);
      for (const word of forbidden) {
        expect(streamed).not.toContain(word);
        expect(snapshotText).not.toContain(word);
      }
    } finally {
      stream.stop();
    }
  });
});
