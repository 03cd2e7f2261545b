/**
 * `--manifest-url` end to end: the statelet command on sim:// with its static pods served by an
 * HTTP server of the test's (pkg/kubelet/config/http.go), observed through /pods and the log.
 */
import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentProcess, runStatelet } from '../support/agentProcess.ts';

const IMAGE = 'statelet.local/busybox:1';
const longRunning = `trap 'exit 0' TERM; while true; do sleep 1; done`;
const pod = (name: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'app', image: IMAGE, command: ['sh', '-c', longRunning] }] },
});

describe('statelet --manifest-url on sim://', () => {
  let server: Server;
  let url: string;
  let answer: { status: number; body: string };
  const requests: IncomingHttpHeaders[] = [];
  let agent: AgentProcess;

  beforeAll(async () => {
    answer = { status: 200, body: JSON.stringify(pod('url-web')) };
    server = createServer((req, res) => {
      requests.push(req.headers);
      res.writeHead(answer.status);
      res.end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods`;
    agent = await runStatelet([
      '--container-runtime-endpoint',
      'sim://',
      '--manifest-url',
      url,
      '--manifest-url-header',
      'X-Node:e2e-node,Authorization:Bearer t0ken',
      '--http-check-frequency',
      '300ms',
    ]);
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }, 60_000);

  it('runs the pod the URL serves as a static pod of source http, asking with the headers', async () => {
    const running = await agent.waitForPod('url-web', (p) => p.status?.phase === 'Running');
    expect(running.metadata.annotations).toMatchObject({ 'kubernetes.io/config.source': 'http', 'kubernetes.io/config.hash': running.metadata.uid });
    expect(running.spec.nodeName).toBe('e2e-node');
    expect(requests[0]).toMatchObject({ 'x-node': 'e2e-node', authorization: 'Bearer t0ken' });
  }, 60_000);

  it('follows the URL: a PodList replaces the pod, a failing answer keeps the pods and is logged with the URL', async () => {
    const web = await agent.waitForPod('url-web', (p) => p.status?.phase === 'Running');
    answer = { status: 200, body: JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [pod('url-db'), pod('url-cache')] }) };
    await agent.waitForPod('url-db', (p) => p.status?.phase === 'Running');
    await agent.waitForPod('url-cache', (p) => p.status?.phase === 'Running');
    await expect.poll(async () => (await agent.pods()).map((p) => p.metadata.uid), { timeout: 30_000 }).not.toContain(web.metadata.uid);

    answer = { status: 503, body: 'maintenance' };
    const line = await agent.waitForLog(/Failed to read pods from URL/);
    expect(line).toContain(`${url}: 503 Service Unavailable`);
    const names = (await agent.pods()).map((p) => p.metadata.name).sort();
    expect(names).toEqual(['url-cache-e2e-node', 'url-db-e2e-node']);

    answer = { status: 200, body: JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [pod('url-db'), { ...pod('bad'), spec: { containers: [{ name: 'app' }] } }] }) };
    const invalid = await agent.waitForLog(/items\[1\]\.spec\.containers\[0\]\.image/);
    expect(invalid).toContain(url);
    expect(invalid).toContain('bad');
    expect((await agent.pods()).map((p) => p.metadata.name).sort()).toEqual(['url-cache-e2e-node', 'url-db-e2e-node']);
  }, 90_000);
});
