/**
 * --inspect=stately end to end: a local WebSocket server stands in for Stately's relay, the agent
 * runs in-process on sim:// pointed at it with --inspect-url, and the inspection records that
 * arrive name the syncLoop actor.
 */
import { writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocketServer } from 'ws';
import { parseCommandLine } from '../../src/cli/flags.ts';
import { type SimAgent, startSimAgent } from '../support/inProcessAgent.ts';

const manifest = `
apiVersion: v1
kind: Pod
metadata:
  name: inspected
  annotations: { example.com/token: annotation-secret-value }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: statelet.local/busybox:1
      command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
      env:
        - { name: TOKEN, value: hunter2 }
`;

/** The fields of a record that @statelyai/inspect documents (StatelyInspectionEvent). */
interface Record {
  type: string;
  sessionId: string;
  name?: string;
  _version?: string;
  event?: { type?: string };
}

let sim: SimAgent | undefined;
let server: WebSocketServer | undefined;
afterEach(async () => {
  await sim?.stop();
  if (server) {
    for (const client of server.clients) client.terminate();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
  }
  sim = undefined;
  server = undefined;
});

describe('--inspect=stately', () => {
  it('sends inspection records about the syncLoop actor to the WebSocket at --inspect-url', async () => {
    const records: Record[] = [];
    const raw: string[] = [];
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    server = wss;
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    wss.on('connection', (socket) => {
      socket.on('message', (data) => {
        raw.push(String(data));
        records.push(JSON.parse(String(data)) as Record);
      });
    });
    const { port } = wss.address() as AddressInfo;

    sim = await startSimAgent('stately-node', ['--inspect=stately', '--inspect-url', `ws://127.0.0.1:${port}`]);
    const { agent, manifests } = sim;

    const syncLoopId = agent.syncLoop.sessionId;
    await vi.waitFor(
      () => {
        const actor = records.find((r) => r.type === '@xstate.actor' && r.sessionId === syncLoopId);
        expect(actor?.name).toBe('syncLoop');
        expect(records.some((r) => r.type === '@xstate.snapshot' && r.sessionId === syncLoopId)).toBe(true);
        expect(records.some((r) => r.type === '@xstate.event' && r.sessionId === syncLoopId)).toBe(true);
      },
      { timeout: 15_000, interval: 100 },
    );

    // A static pod's spec reaches the inspector (as CONFIG.ADD), without its env values or annotations.
    await writeFile(path.join(manifests, 'inspected.yaml'), manifest);
    await vi.waitFor(
      () => expect(raw.some((text) => text.includes('"CONFIG.ADD"') && text.includes('inspected-stately-node'))).toBe(true),
      { timeout: 15_000, interval: 100 },
    );
    // The pod actor's own snapshots, which carry the spec in their context, follow.
    await vi.waitFor(
      () => expect(raw.some((text) => text.includes('"@xstate.snapshot"') && text.includes('inspected-stately-node'))).toBe(true),
      { timeout: 15_000, interval: 100 },
    );
    const text = raw.join('\n');
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('annotation-secret-value');
    for (const record of records) {
      expect(['@xstate.actor', '@xstate.event', '@xstate.snapshot']).toContain(record.type);
      expect(typeof record._version).toBe('string');
    }
  });

  it('rejects an --inspect-url that is not a WebSocket URL', () => {
    expect(() => parseCommandLine(['--inspect=stately', '--inspect-url', 'http://localhost:8080'])).toThrow(/--inspect-url: expected a ws:\/\/ or wss:\/\/ URL/);
  });
});
