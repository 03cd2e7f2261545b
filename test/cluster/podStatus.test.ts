/**
 * Pod statuses as the kubelet writes them, seen through a real kube-apiserver (its watch), with
 * statelet on sim:// as the node:
 *   - a pod past its activeDeadlineSeconds keeps its phase in the API while its container stops,
 *     then is Failed / DeadlineExceeded (status_manager.go mergePodStatus);
 *   - an init container failing under restartPolicy Never: every status shows the app container
 *     waiting PodInitializing, the pod ends Failed (the upstream conformance spec "should not start
 *     app containers and fail the pod if init containers fail on a RestartNever pod");
 *   - a pod deleted while Pending ends Failed before it goes (TerminatePod);
 *   - status.observedGeneration and each condition's follow metadata.generation, also when the
 *     update changes nothing else (the conformance specs "pod generation should start at 1 and
 *     increment per update" and "issue 500 podspec updates and verify generation and
 *     observedGeneration eventually converge");
 *   - after a restart of the agent, a pod that had Succeeded is not admitted again on a node it no
 *     longer fits, and its record stays as it was.
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PatchStrategy, setHeaderOptions, type V1Pod, type V1PodStatus } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentProcess, runStatelet } from '../support/agentProcess.ts';
import { removeAgentDir } from '../support/removeAgentDir.ts';
import { type ControlPlane, pods, startControlPlane } from '../support/controlPlane.ts';

const NODE = 'node-status';
let cp: ControlPlane | null = null;
let agent: AgentProcess | undefined;
let rootDir: string | undefined;

const agentArgs = (extra: string[] = []) => [
  '--container-runtime-endpoint=sim://',
  `--kubeconfig=${cp!.nodeKubeconfig(NODE)}`,
  `--hostname-override=${NODE}`,
  '--node-ip=127.0.0.1',
  ...extra,
];

beforeAll(async () => {
  cp = await startControlPlane({ nodeNames: [NODE] });
  if (!cp) return;
  rootDir = await mkdtemp(path.join(os.tmpdir(), 'statelet-pod-status-'));
  agent = await runStatelet(agentArgs(), { rootDir });
}, 5 * 60_000);

afterAll(async () => {
  await agent?.stop();
  await cp?.close();
  if (rootDir) await removeAgentDir(rootDir);
}, 180_000);

/** Runs until told to stop, and then stops at once (a container whose image changes is restarted within the spec's 20 s). */
const forever = ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"];
const condition = (status: V1PodStatus | undefined, type: string) => status?.conditions?.find((c) => c.type === type);

/** Every status the API's watch shows of the pod until `until` holds (or the pod is gone, with `untilGone`). */
async function statusesUntil(namespace: string, name: string, until: (pod: V1Pod | null) => boolean, timeoutMs = 60_000): Promise<V1PodStatus[]> {
  const seen: V1PodStatus[] = [];
  await cp!.waitFor<V1Pod>(
    pods(namespace),
    name,
    (pod) => {
      if (pod?.status) seen.push(structuredClone(pod.status));
      return until(pod);
    },
    timeoutMs,
  );
  return seen;
}

describe('pod statuses through the API (sim://)', () => {
  it('a pod past its activeDeadlineSeconds stays Running in the API while its container stops, then is Failed with DeadlineExceeded', { timeout: 120_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const namespace = await cp.namespace('deadline');
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'deadline' },
        spec: {
          nodeName: NODE,
          activeDeadlineSeconds: 4,
          terminationGracePeriodSeconds: 15,
          // Takes 5 s to stop once told to.
          containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', "trap 'sleep 5; exit 0' TERM; while true; do sleep 1; done"] }],
        },
      },
    });
    const seen = await statusesUntil(namespace, 'deadline', (p) => p?.status?.phase === 'Failed');
    const final = seen.at(-1)!;
    expect(final).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' });
    expect(final.containerStatuses?.[0]?.state?.terminated).toMatchObject({ exitCode: 0 });
    // While its container was being stopped the API showed it Running, no longer ready.
    const stopping = seen.filter((s) => s.phase === 'Running' && condition(s, 'Ready')?.reason === 'PodFailed');
    expect(stopping.length, JSON.stringify(seen.map((s) => [s.phase, condition(s, 'Ready')?.reason]))).toBeGreaterThan(0);
    expect(stopping[0]?.containerStatuses?.[0]?.state?.running).toBeTruthy();
    expect(stopping[0]?.reason).toBeUndefined();
    // Never Failed with a container still running.
    for (const s of seen.filter((x) => x.phase === 'Failed')) expect(s.containerStatuses?.[0]?.state?.running).toBeFalsy();
    // The phase came a good while after the deadline: once the container had taken its 5 s to stop.
    const finishedAt = Date.parse(String(final.containerStatuses?.[0]?.state?.terminated?.finishedAt));
    const startedAt = Date.parse(String(final.startTime));
    expect(finishedAt - startedAt).toBeGreaterThanOrEqual(8_000);
  });

  it('an init container failing under restartPolicy Never: the app container stays waiting PodInitializing in every status, the pod Failed', { timeout: 120_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const namespace = await cp.namespace('initfail');
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'init-fail' },
        spec: {
          nodeName: NODE,
          restartPolicy: 'Never',
          initContainers: [
            { name: 'init1', image: 'busybox', command: ['/bin/true'] },
            { name: 'init2', image: 'busybox', command: ['/bin/false'] },
          ],
          containers: [{ name: 'run1', image: 'busybox', command: ['/bin/true'], resources: { limits: { cpu: '100m' } } }],
        },
      },
    });
    const seen = await statusesUntil(namespace, 'init-fail', (p) => p?.status?.phase === 'Failed' || p?.status?.phase === 'Succeeded');
    for (const s of seen) {
      for (const c of s.containerStatuses ?? []) expect(c.state?.waiting?.reason, JSON.stringify(c)).toBe('PodInitializing');
    }
    const final = seen.at(-1)!;
    expect(final.phase).toBe('Failed');
    expect(condition(final, 'Initialized')).toMatchObject({ status: 'False', reason: 'ContainersNotInitialized', message: 'containers with incomplete status: [init2]' });
    expect(final.initContainerStatuses?.map((c) => [c.name, c.state?.terminated?.exitCode])).toEqual([
      ['init1', 0],
      ['init2', 1],
    ]);
    expect(final.containerStatuses?.[0]?.state?.waiting).toBeTruthy();
  });

  it('a pod deleted while Pending is Failed before it goes', { timeout: 120_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const namespace = await cp.namespace('pendingdelete');
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'stuck' },
        spec: { nodeName: NODE, containers: [{ name: 'app', image: 'example.com/absent:1', imagePullPolicy: 'Never', command: forever }] },
      },
    });
    await cp.waitFor<V1Pod>(pods(namespace), 'stuck', (p) => p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ErrImageNeverPull');
    const gone = statusesUntil(namespace, 'stuck', (p) => p === null);
    await cp.core.deleteNamespacedPod({ namespace, name: 'stuck' });
    const seen = await gone;
    expect(seen.map((s) => s.phase)).toContain('Failed');
    const last = seen.at(-1)!;
    expect(last.phase).toBe('Failed');
    expect(last.containerStatuses?.[0]?.state?.terminated).toMatchObject({ exitCode: 137, reason: 'ContainerStatusUnknown' });
  });

  it('follows metadata.generation in status.observedGeneration and in each condition, also for an update that changes nothing else', { timeout: 180_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const namespace = await cp.namespace('generation');
    const name = 'gen';
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name, labels: { app: 'gen' } },
        spec: {
          nodeName: NODE,
          activeDeadlineSeconds: 5000,
          initContainers: [{ name: 'init-container', image: 'busybox', command: ['/bin/true'] }],
          containers: [{ name: 'app', image: 'busybox', command: forever }],
        },
      },
    });
    const observed = (generation: number) => (p: V1Pod | null) => p?.status?.observedGeneration === generation;
    const running = (await cp.waitFor<V1Pod>(pods(namespace), name, (p) => p?.status?.phase === 'Running' && observed(1)(p)))!;
    expect(running.metadata?.generation).toBe(1);
    expect(running.status?.conditions?.map((c) => [c.type, c.observedGeneration])).toEqual([
      ['PodReadyToStartContainers', 1],
      ['Initialized', 1],
      ['Ready', 1],
      ['ContainersReady', 1],
      ['PodScheduled', 1],
    ]);

    const patch = async (body: object) =>
      (await cp!.core.patchNamespacedPod({ namespace, name, body }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch))).metadata?.generation;
    const updates: [what: string, body: object, bumps: boolean][] = [
      ['tolerations', { spec: { tolerations: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule' }] } }, true],
      ['activeDeadlineSeconds', { spec: { activeDeadlineSeconds: 4999 } }, true],
      ['the container image', { spec: { containers: [{ name: 'app', image: 'busybox:1.36' }] } }, true],
      ['the init container image', { spec: { initContainers: [{ name: 'init-container', image: 'registry.k8s.io/pause:3.9' }] } }, true],
      ['annotations only', { metadata: { annotations: { key: 'value' } } }, false],
      ['labels only', { metadata: { labels: { app: 'gen', more: 'yes' } } }, false],
    ];
    let expected = 1;
    for (const [what, body, bumps] of updates) {
      if (bumps) expected++;
      expect(await patch(body), what).toBe(expected);
      // The kubelet's conformance spec gives it 20 s.
      const seen = (await cp.waitFor<V1Pod>(pods(namespace), name, observed(expected), 20_000))!;
      expect(seen.status?.conditions?.every((c) => c.observedGeneration === expected), `${what}: ${JSON.stringify(seen.status?.conditions)}`).toBe(true);
    }
    // The new image runs.
    const restarted = (await cp.waitFor<V1Pod>(pods(namespace), name, (p) => p?.status?.containerStatuses?.[0]?.image === 'busybox:1.36' && !!p.status.containerStatuses[0].state?.running, 30_000))!;
    expect(restarted.status?.observedGeneration).toBe(expected);
  });

  it('issue 500 spec updates: status.observedGeneration converges on metadata.generation 500', { timeout: 300_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const namespace = await cp.namespace('generation500');
    const name = 'gen500';
    await cp.core.createNamespacedPod({
      namespace,
      body: { metadata: { name }, spec: { nodeName: NODE, activeDeadlineSeconds: 5000, containers: [{ name: 'app', image: 'busybox', command: forever }] } },
    });
    await cp.waitFor<V1Pod>(pods(namespace), name, (p) => p?.status?.phase === 'Running');
    for (let i = 1; i <= 499; i++) {
      await cp.core.patchNamespacedPod({ namespace, name, body: { spec: { activeDeadlineSeconds: 5000 - i } } }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch));
    }
    const pod = (await cp.waitFor<V1Pod>(pods(namespace), name, (p) => p?.status?.observedGeneration === 500, 120_000))!;
    expect(pod.metadata?.generation).toBe(500);
    expect(pod.status?.phase).toBe('Running');
  });

  // Last: it restarts the agent.
  it('after a restart of the agent, a pod that had Succeeded is not admitted again on a node it no longer fits: its record stays as it was', { timeout: 180_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const namespace = await cp.namespace('restart');
    await cp.core.createNamespacedPod({ namespace, body: { metadata: { name: 'steady' }, spec: { nodeName: NODE, containers: [{ name: 'app', image: 'busybox', command: forever }] } } });
    await cp.waitFor<V1Pod>(pods(namespace), 'steady', (p) => p?.status?.phase === 'Running');
    await cp.core.createNamespacedPod({
      namespace,
      body: { metadata: { name: 'done' }, spec: { nodeName: NODE, restartPolicy: 'Never', containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', 'exit 0'] }] } },
    });
    const done = (await cp.waitFor<V1Pod>(pods(namespace), 'done', (p) => p?.status?.phase === 'Succeeded' && !!p.status.containerStatuses?.[0]?.state?.terminated))!;

    // The same node comes back able to hold one pod only: `steady`, the oldest one still running
    // once the other tests' running pods are gone, takes it.
    const others = (await cp.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE}` })).items.filter(
      (p) => p.metadata?.namespace !== namespace && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed',
    );
    for (const p of others) await cp.core.deleteNamespacedPod({ namespace: p.metadata!.namespace!, name: p.metadata!.name!, gracePeriodSeconds: 0 });
    for (const p of others) await cp.waitFor<V1Pod>(pods(p.metadata!.namespace!), p.metadata!.name!, (x) => x === null);
    await agent!.stop();
    agent = await runStatelet(agentArgs(['--max-pods=1']), { rootDir: rootDir! });
    await agent.waitForPod('steady', (p) => p.status?.phase === 'Running' && !!p.status.containerStatuses?.[0]?.state?.running, 60_000, namespace);
    const local = await agent.waitForPod('done', (p) => p.status?.phase !== undefined, 30_000, namespace);
    expect(local.status).toMatchObject({ phase: 'Succeeded' });
    // Housekeeping and a status resync have had their turn (2 s and 10 s).
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    const after = (await cp.waitFor<V1Pod>(pods(namespace), 'done', () => true))!;
    expect(after.status?.phase).toBe('Succeeded');
    expect(after.status?.reason).toBeUndefined();
    expect(after.status?.message).toBeUndefined();
    expect(after.status?.containerStatuses).toEqual(done.status?.containerStatuses);
    expect(agent.output()).not.toMatch(new RegExp(`Pod rejected.*${namespace}/done`));
  });
});
