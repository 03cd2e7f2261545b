/**
 * Faults between the agent and a real API server, with the node's identity only: the API server
 * away for 30 s and back (pods keep running, nothing starts twice, the statuses written meanwhile
 * catch up, the watch comes back, through a relist when its version is gone), and a request the
 * node may not make (403), logged once and not retried on every pass.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentProcess, containerStatus, runStatelet } from '../support/agentProcess.ts';
import { type ControlPlane, nodes, pods, startControlPlane } from '../support/controlPlane.ts';

const NODE = 'node-f';
let cp: ControlPlane | null = null;
let agent: AgentProcess | undefined;
let manifests: string;
const OUTAGE_MS = 30_000;

// NodeRestriction lets a node create a mirror pod only if it references no service account,
// secret or config map: this one's mirror is refused with a 403.
const STATIC_WITH_SA = `apiVersion: v1
kind: Pod
metadata: {name: static-sa, namespace: default}
spec:
  serviceAccountName: builder
  containers:
  - {name: app, image: busybox, command: [sh, -c, 'while true; do sleep 1; done']}
`;

beforeAll(async () => {
  cp = await startControlPlane({ nodeNames: [NODE] });
  if (!cp) return;
  manifests = await mkdtemp(path.join(os.tmpdir(), 'statelet-faults-manifests-'));
  await writeFile(path.join(manifests, 'static-sa.yaml'), STATIC_WITH_SA);
  agent = await runStatelet([
    `--pod-manifest-path=${manifests}`,
    '--container-runtime-endpoint=sim://',
    `--kubeconfig=${cp.nodeKubeconfig(NODE)}`,
    `--hostname-override=${NODE}`,
  ]);
}, 15 * 60_000);

afterAll(async () => {
  await agent?.stop();
  await cp?.close();
  if (manifests) await rm(manifests, { recursive: true, force: true });
});

const running = { apiVersion: 'v1', kind: 'Pod' } as const;

describe('faults between the agent and the API server (sim://)', () => {
  it('keeps its pods through a 30 s API server outage and catches up after it', { timeout: 180_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const namespace = await cp.namespace('outage');
    const create = (name: string, command: string, restartPolicy: 'Always' | 'Never' = 'Always') =>
      cp!.core.createNamespacedPod({
        namespace,
        body: { ...running, metadata: { name }, spec: { nodeName: NODE, restartPolicy, containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', command] }] } },
      });
    await create('steady', 'while true; do sleep 1; done');
    // Runs 8 s, then succeeds: while the API server is away.
    await create('finisher', 'sleep 8; exit 0', 'Never');
    const before = (await cp.waitFor<V1Pod>(pods(namespace), 'steady', (p) => p?.status?.phase === 'Running'))!;
    await cp.waitFor<V1Pod>(pods(namespace), 'finisher', (p) => p?.status?.phase === 'Running');
    const steadyId = before.status!.containerStatuses![0]!.containerID;

    await cp.stop({ crash: true });
    const outageStart = Date.now();
    // Meanwhile the agent keeps running its pods and the finisher completes: its status has nowhere to go.
    const local = (await agent!.pods()).find((p) => p.metadata.name === 'finisher' && p.metadata.namespace === namespace)!;
    expect(local.status?.phase, 'the finisher must still run when the API server goes away').toBe('Running');
    await agent!.waitForPod('finisher', (p) => p.status?.phase === 'Succeeded', 20_000, namespace);
    const steadyLocal = (await agent!.pods()).find((p) => p.metadata.name === 'steady' && p.metadata.namespace === namespace)!;
    expect(containerStatus(steadyLocal, 'app')).toMatchObject({ restartCount: 0, containerID: steadyId, state: { running: expect.anything() } });
    expect((await agent!.healthz()).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, OUTAGE_MS - (Date.now() - outageStart))));
    await cp.restart();

    // The status written during the outage catches up; the running container is the same one.
    await cp.waitFor<V1Pod>(pods(namespace), 'finisher', (p) => p?.status?.phase === 'Succeeded', 60_000);
    const after = (await cp.core.readNamespacedPod({ namespace, name: 'steady' })).status!.containerStatuses![0]!;
    expect(after).toMatchObject({ restartCount: 0, containerID: steadyId });
    // The outage itself does not make the Node NotReady (only its Lease expiring would, which is
    // the node lifecycle controller's call): it is Ready once the agent writes again.
    const ready = (n: V1Node | null) => n?.status?.conditions?.find((c) => c.type === 'Ready');
    const node = await cp.waitFor<V1Node>(nodes, NODE, (n) => ready(n)?.status === 'True', 30_000).catch(async (err) => {
      throw new Error(`${err}: ${JSON.stringify(ready((await cp!.core.readNode({ name: NODE })) as V1Node))}`);
    });
    expect(ready(node)?.reason).toBe('KubeletReady');
    await create('newcomer', 'while true; do sleep 1; done');
    await cp.waitFor<V1Pod>(pods(namespace), 'newcomer', (p) => p?.status?.phase === 'Running', 60_000);
    // The agent saw the watch drop and came back (resuming, or relisting on 410 when its version was gone).
    expect(agent!.output()).toMatch(/Pod watch failed; retrying/);
    // Every container started exactly once.
    const started = agent!.output().match(new RegExp(`"Started".*pod="${namespace}/[a-z]+"`, 'g')) ?? [];
    expect(started).toHaveLength(3);
  });

  it('logs a refused mirror pod (403) once and does not ask again on every pass', { timeout: 60_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const line = await agent!.waitForLog(/refused the mirror pod.*default\/static-sa/, 30_000);
    expect(line).toMatch(/forbidden|Forbidden|403/);
    // The static pod itself runs.
    await agent!.waitForPod('static-sa', (p) => p.status?.phase === 'Running', 20_000);
    // Housekeeping passes every 2 s; over 10 s of them the refusal is neither logged again nor asked again.
    // The window is the point of the check: what the agent does over several passes.
    const count = () => (agent!.output().match(/refused the mirror pod/g) ?? []).length;
    const logged = count();
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    expect(count()).toBe(logged);
    expect(logged).toBe(1);
  });
});
