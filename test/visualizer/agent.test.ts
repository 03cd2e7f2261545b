/**
 * The visualizer end to end: the agent in-process on sim:// with --visualizer-port, a static pod
 * added while a client streams, and the picture served at /api/snapshot.
 */
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { freePort } from '../support/agentProcess.ts';
import { type SimAgent, startSimAgent } from '../support/inProcessAgent.ts';
import type { WirePicture } from '../../src/visualizer/wire.ts';

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

let sim: SimAgent | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

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
    const port = await freePort();
    sim = await startSimAgent('visual-node', ['--visualizer-port', String(port)]);
    const { agent, manifests } = sim;
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

      // The pod's events reach the stream with the hub's next flush.
      await vi.waitFor(() => expect(stream.text()).toContain('POD.UPDATE'), { timeout: 5_000, interval: 50 });
      const streamed = stream.text();
      expect(streamed).toContain('event: picture');
      expect(streamed).toContain('CONFIG.ADD');
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
