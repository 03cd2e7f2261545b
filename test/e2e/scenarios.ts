/**
 * End-to-end scenarios that must behave the same on the embedded simulated runtime and on
 * containerd: the statelet command with a static-pod directory, observed through `/pods` and
 * through the runtime's own CRI answers. Manifests use only the shell subset both runtimes run.
 */
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Label } from '../../src/kuberuntime/labels.ts';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { type AgentProcess, type StateletCommand, containerStatus, runStatelet } from '../support/agentProcess.ts';

export interface ScenarioRuntime {
  name: string;
  image: string;
  /** The `--container-runtime-endpoint` value. */
  endpoint: () => string;
  /** The CRI socket to check the runtime's state through (for sim, known once the agent runs). */
  criEndpoint: (agent: AgentProcess) => string;
  /** How statelet is started (known once the suite's setup ran); the checkout's sources by default. */
  command?: () => StateletCommand;
}

const longRunning = `trap 'exit 0' TERM; while true; do sleep 1; done`;

export function manifests(image: string) {
  return {
    'with-init.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: with-init }
spec:
  terminationGracePeriodSeconds: 5
  initContainers:
    - { name: prepare, image: ${image}, command: ["sh", "-c", "echo preparing; sleep 1"] }
  containers:
    - { name: app, image: ${image}, command: ["sh", "-c", "${longRunning}"] }
    - { name: helper, image: ${image}, command: ["sh", "-c", "${longRunning}"] }
`,
    'crasher.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: crasher }
spec:
  restartPolicy: OnFailure
  containers:
    - { name: flaky, image: ${image}, command: ["sh", "-c", "echo failing; exit 1"] }
`,
  };
}

/** An agent on `runtime` with a manifest directory holding `files`, for one describe block. */
export function agentFixture(runtime: ScenarioRuntime, files: () => Record<string, string>, extraArgs: string[] = []) {
  const fixture = {} as { dir: string; agent: AgentProcess; cri: CriClient };
  beforeAll(async () => {
    fixture.dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-manifests-'));
    for (const [file, text] of Object.entries(files())) await writeFile(path.join(fixture.dir, file), text);
    fixture.agent = await runStatelet([
      '--container-runtime-endpoint',
      runtime.endpoint(),
      '--pod-manifest-path',
      fixture.dir,
      '--file-check-frequency',
      '2s',
      ...extraArgs,
    ], runtime.command ? { command: runtime.command() } : {});
    fixture.cri = new CriClient(runtime.criEndpoint(fixture.agent));
  }, 60_000);
  afterAll(async () => {
    fixture.cri?.close();
    await fixture.agent?.stop();
    await rm(fixture.dir, { recursive: true, force: true });
  }, 60_000);
  return fixture;
}

export function defineAgentScenarios(runtime: ScenarioRuntime): void {
  describe(`statelet on ${runtime.name}`, () => {
    const fixture = agentFixture(runtime, () => ({
      ...manifests(runtime.image),
      'broken.yaml': 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\n   bad: indentation\n',
      'empty.yaml': 'apiVersion: v1\nkind: Pod\nmetadata: { name: empty }\nspec:\n  containers: []\n',
      'dupes.yaml': `apiVersion: v1\nkind: Pod\nmetadata: { name: dupes }\nspec:\n  containers:\n    - { name: a, image: ${runtime.image} }\n    - { name: a, image: ${runtime.image} }\n`,
    }));
    const podContainers = async (podName: string) => {
      const pods = await fixture.agent.pods();
      const pod = pods.find((p) => p.metadata.name === `${podName}-e2e-node`);
      const uid = pod?.metadata.uid ?? '';
      return fixture.cri.listContainers({ labelSelector: { [Label.podUid]: uid } });
    };

    it('runs the init container first, then both containers: the pod reaches Running', async () => {
      const pod = await fixture.agent.waitForPod('with-init', (p) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.ready));
      const init = containerStatus(pod, 'prepare');
      expect(init?.state.terminated?.exitCode).toBe(0);
      const started = (name: string) => Date.parse(containerStatus(pod, name)?.state.running?.startedAt ?? '');
      const initFinished = Date.parse(init?.state.terminated?.finishedAt ?? '');
      expect(started('app')).toBeGreaterThanOrEqual(initFinished);
      expect(started('helper')).toBeGreaterThanOrEqual(initFinished);
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(pod.status?.podIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      const running = (await podContainers('with-init')).filter((c) => c.state === 'CONTAINER_RUNNING');
      expect(running.map((c) => c.metadata.name).sort()).toEqual(['app', 'helper']);
    }, 60_000);

    it("serves the running containers' CPU and memory on the read-only port: /stats/summary and /metrics/resource", async () => {
      const pod = await fixture.agent.waitForPod('with-init', (p) => p.status?.phase === 'Running');
      const base = `http://127.0.0.1:${fixture.agent.readOnlyPort}`;
      const summary = (await (await fetch(`${base}/stats/summary`)).json()) as { pods: { podRef: { uid: string }; containers: { name: string; memory?: { workingSetBytes?: number } }[] }[] };
      const stats = summary.pods.find((p) => p.podRef.uid === pod.metadata.uid);
      expect(stats?.containers.map((c) => c.name).sort()).toEqual(['app', 'helper']);
      expect(stats?.containers.every((c) => (c.memory?.workingSetBytes ?? 0) > 0)).toBe(true);
      const resource = await (await fetch(`${base}/metrics/resource`)).text();
      expect(resource).toMatch(new RegExp(`^container_memory_working_set_bytes\\{container="app",namespace="default",pod="with-init-e2e-node"\\} [1-9]\\d* \\d+$`, 'm'));
      expect(resource).toContain('resource_scrape_error 0');
    }, 60_000);

    it('restarts a container that exits 1 under OnFailure, with a growing restart count', async () => {
      const first = await fixture.agent.waitForPod('crasher', (p) => (containerStatus(p, 'flaky')?.restartCount ?? 0) >= 1);
      expect(first.status?.phase).toBe('Running');
      const second = await fixture.agent.waitForPod('crasher', (p) => (containerStatus(p, 'flaky')?.restartCount ?? 0) >= 2, 45_000);
      const flaky = containerStatus(second, 'flaky');
      expect(flaky?.lastState.terminated?.exitCode).toBe(1);
      const instances = await podContainers('crasher');
      expect(instances.length).toBeGreaterThanOrEqual(2);
    }, 60_000);

    it('reports bad manifests by file and field and keeps serving the good pods', async () => {
      await fixture.agent.waitForLog(/broken\.yaml/);
      await fixture.agent.waitForLog(/empty\.yaml.*spec\.containers/);
      await fixture.agent.waitForLog(/dupes\.yaml.*spec\.containers\[1\]\.name/);
      const names = (await fixture.agent.pods()).map((p) => p.metadata.name);
      expect(names).not.toContain('broken-e2e-node');
      expect(names).not.toContain('empty-e2e-node');
      expect(names).not.toContain('dupes-e2e-node');
      expect(names).toEqual(expect.arrayContaining(['with-init-e2e-node', 'crasher-e2e-node']));
      expect((await fixture.agent.healthz()).status).toBe(200);
    }, 30_000);

    it('stops the containers and the sandbox when the manifest is removed', async () => {
      const pod = await fixture.agent.waitForPod('with-init', (p) => p.status?.phase === 'Running');
      const uid = pod.metadata.uid;
      await unlink(path.join(fixture.dir, 'with-init.yaml'));
      await vi.waitFor(
        async () => {
          const names = (await fixture.agent.pods()).map((p) => p.metadata.name);
          expect(names).not.toContain('with-init-e2e-node');
          const containers = await fixture.cri.listContainers({ labelSelector: { [Label.podUid]: uid } });
          expect(containers.filter((c) => c.state === 'CONTAINER_RUNNING')).toEqual([]);
          const sandboxes = await fixture.cri.listPodSandbox({ labelSelector: { [Label.podUid]: uid } });
          expect(sandboxes.filter((s) => s.state === 'SANDBOX_READY')).toEqual([]);
        },
        { timeout: 30_000, interval: 200 },
      );
      // The other pod is untouched.
      expect((await fixture.agent.pods()).map((p) => p.metadata.name)).toContain('crasher-e2e-node');
    }, 45_000);
  });
}
