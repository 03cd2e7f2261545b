/**
 * Pod lifecycle scenarios (restart policies, images, termination) that must behave the same on
 * sim:// and on containerd. Each runs against one agent per runtime.
 */
import os from 'node:os';
import { describe, expect, it, vi } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { Label } from '../../src/kuberuntime/labels.ts';
import { containerStatus } from '../support/agentProcess.ts';
import { type ScenarioRuntime, agentFixture } from './scenarios.ts';

function lifecycleManifests(image: string): Record<string, string> {
  return {
    'init-fails.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: init-fails }
spec:
  restartPolicy: Never
  initContainers:
    - { name: setup, image: ${image}, command: ["sh", "-c", "echo cannot set up; exit 3"] }
  containers:
    - { name: app, image: ${image}, command: ["sh", "-c", "sleep 3600"] }
`,
    'never-pull.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: never-pull }
spec:
  containers:
    - { name: app, image: statelet.local/doesnotexist:1, imagePullPolicy: Never }
`,
    'prestop.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: prestop }
spec:
  activeDeadlineSeconds: 3
  terminationGracePeriodSeconds: 20
  containers:
    - name: app
      image: ${image}
      command: ["sh", "-c", "trap 'test -e /tmp/prestop-ran && exit 7; exit 0' TERM; while true; do sleep 1; done"]
      lifecycle:
        preStop:
          exec: { command: ["sh", "-c", "touch /tmp/prestop-ran; sleep 2"] }
`,
    'sidecar.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: sidecar }
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 10
  initContainers:
    - name: proxy
      image: ${image}
      restartPolicy: Always
      command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
  containers:
    - { name: main, image: ${image}, command: ["sh", "-c", "sleep 2; exit 0"] }
`,
    'completes.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: completes }
spec:
  restartPolicy: OnFailure
  containers:
    - { name: job, image: ${image}, command: ["sh", "-c", "echo done; exit 0"] }
`,
    // The conformance specs' three termination messages (test/e2e/common/node/runtime.go).
    'termination-message.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: termination-message }
spec:
  restartPolicy: Never
  containers:
    - { name: file, image: ${image}, command: ["sh", "-c", "echo -n DONE > /dev/termination-log; exit 0"] }
    - { name: custom, image: ${image}, terminationMessagePath: /dev/custom-log, command: ["sh", "-c", "echo -n DONE > /dev/custom-log; exit 0"] }
    - { name: logs, image: ${image}, terminationMessagePolicy: FallbackToLogsOnError, command: ["sh", "-c", "echo -n DONE; exit 1"] }
`,
    // A container restart rule (ContainerRestartRules): exit code 42 restarts it, under a pod and a
    // container that say Never; its second run exits 1, which no rule matches: the pod fails.
    'restart-rule.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: restart-rule }
spec:
  restartPolicy: Never
  volumes: [{ name: state, emptyDir: {} }]
  containers:
    - name: retried
      image: ${image}
      restartPolicy: Never
      restartPolicyRules: [{ action: Restart, exitCodes: { operator: In, values: [42] } }]
      volumeMounts: [{ name: state, mountPath: /state }]
      command: ["sh", "-c", "test -e /state/ran && exit 1; touch /state/ran; exit 42"]
`,
    // An init container's own restartPolicy over the pod's (ContainerRestartRules): OnFailure
    // retries it under a Never pod; its second run succeeds and the app runs.
    'init-retried.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: init-retried }
spec:
  restartPolicy: Never
  volumes: [{ name: state, emptyDir: {} }]
  initContainers:
    - name: setup
      image: ${image}
      restartPolicy: OnFailure
      volumeMounts: [{ name: state, mountPath: /state }]
      command: ["sh", "-c", "test -e /state/ran && exit 0; touch /state/ran; exit 3"]
  containers:
    - { name: app, image: ${image}, command: ["sh", "-c", "exit 0"] }
`,
    // An init container's restart rule: exit code 42 runs it again; its second run exits 1, which
    // no rule matches, and its own Never (over the pod's OnFailure) fails the pod.
    'init-restart-rule.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: init-restart-rule }
spec:
  restartPolicy: OnFailure
  volumes: [{ name: state, emptyDir: {} }]
  initContainers:
    - name: setup
      image: ${image}
      restartPolicy: Never
      restartPolicyRules: [{ action: Restart, exitCodes: { operator: In, values: [42] } }]
      volumeMounts: [{ name: state, mountPath: /state }]
      command: ["sh", "-c", "test -e /state/ran && exit 1; touch /state/ran; exit 42"]
  containers:
    - { name: app, image: ${image}, command: ["sh", "-c", "sleep 3600"] }
`,
    // An emptyDir on memory is a tmpfs the container's mount table shows (sim:// reads the host's).
    'memory-volume.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: memory-volume }
spec:
  restartPolicy: Never
  volumes: [{ name: cache, emptyDir: { medium: Memory } }]
  containers:
    - name: mounts
      image: ${image}
      volumeMounts: [{ name: cache, mountPath: /cache }]
      command: ["sh", "-c", "grep -F ' /cache ' /proc/mounts > /dev/termination-log"]
`,
    'hostname-override.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: hostname-override }
spec:
  restartPolicy: Never
  hostname: ignored
  subdomain: ignored-too
  hostnameOverride: my-host.example
  containers:
    - { name: hostname, image: ${image}, command: ["sh", "-c", "echo -n $HOSTNAME > /dev/termination-log"] }
`,
    // The node's network and hostname, the node's hosts file under the kubelet's header (the
    // conformance spec KubeletManagedEtcHosts runs one such pod).
    'host-network.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: host-network }
spec:
  hostNetwork: true
  restartPolicy: Never
  containers:
    - { name: hostname, image: ${image}, command: ["sh", "-c", "echo -n $HOSTNAME > /dev/termination-log"] }
    - { name: hosts, image: ${image}, command: ["sh", "-c", "cat /etc/hosts > /dev/termination-log"] }
`,
  };
}

export function defineLifecycleScenarios(runtime: ScenarioRuntime): void {
  describe(`pod lifecycle on ${runtime.name}`, () => {
    const fixture = agentFixture(runtime, () => lifecycleManifests(runtime.image));
    const containersOf = async (uid: string) => fixture.cri.listContainers({ labelSelector: { [Label.podUid]: uid } });

    it('fails the pod when its init container fails under restartPolicy Never, never starting the app', async () => {
      const pod = await fixture.agent.waitForPod('init-fails', (p) => p.status?.phase === 'Failed');
      expect(containerStatus(pod, 'setup')?.state.terminated?.exitCode).toBe(3);
      expect(containerStatus(pod, 'app')?.state.running).toBeUndefined();
      const containers = await containersOf(pod.metadata.uid);
      expect(containers.map((c) => c.metadata.name)).toEqual(['setup']);
      // The Failed status comes first; the pod then terminates, which stops its sandbox.
      await expect
        .poll(async () => (await fixture.cri.listPodSandbox({ labelSelector: { [Label.podUid]: pod.metadata.uid } })).map((s) => s.state), {
          timeout: 20_000,
          interval: 100,
        })
        .toEqual(['SANDBOX_NOTREADY']);
    }, 45_000);

    it('reports ErrImageNeverPull for a missing image under imagePullPolicy Never', async () => {
      const pod = await fixture.agent.waitForPod('never-pull', (p) => containerStatus(p, 'app')?.state.waiting?.reason === 'ErrImageNeverPull');
      expect(containerStatus(pod, 'app')?.state.waiting?.message).toBe(
        'Container image "statelet.local/doesnotexist:1" is not present with pull policy of Never',
      );
      expect(pod.status?.phase).toBe('Pending');
      expect(await containersOf(pod.metadata.uid)).toEqual([]);
    }, 45_000);

    it('runs preStop before stopping a container: termination waits for the hook', async () => {
      const pod = await fixture.agent.waitForPod('prestop', (p) => p.status?.phase === 'Failed' && containerStatus(p, 'app')?.state.terminated !== undefined, 60_000);
      expect(pod.status).toMatchObject({ reason: 'DeadlineExceeded' });
      const app = containerStatus(pod, 'app')?.state.terminated;
      // Exit code 7: the TERM trap found the file the preStop hook wrote, so the hook ran first.
      expect(app?.exitCode).toBe(7);
      // Stopped no earlier than deadline (3 s) + hook (2 s), give or take the seconds rounding.
      const ranFor = Date.parse(app?.finishedAt ?? '') - Date.parse(pod.status?.startTime ?? '');
      expect(ranFor).toBeGreaterThanOrEqual(4_000);
    }, 75_000);

    it('keeps a sidecar running beside the main container and stops it after the main container finished', async () => {
      // The pod may already be done when this test runs (all manifests start together), so the
      // order is read from the containers' own start and finish times.
      const done = await fixture.agent.waitForPod('sidecar', (p) => p.status?.phase === 'Succeeded' && containerStatus(p, 'proxy')?.state.terminated !== undefined, 45_000);
      const proxy = containerStatus(done, 'proxy')?.state.terminated;
      const main = containerStatus(done, 'main')?.state.terminated;
      expect(main?.exitCode).toBe(0);
      expect(Date.parse(proxy?.startedAt ?? '')).toBeLessThanOrEqual(Date.parse(main?.startedAt ?? ''));
      expect(Date.parse(proxy?.finishedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(main?.finishedAt ?? ''));
      const containers = await containersOf(done.metadata.uid);
      expect(containers.filter((c) => c.state === 'CONTAINER_RUNNING')).toEqual([]);
    }, 60_000);

    it('lets a container that exits 0 under OnFailure complete: the pod Succeeds and is not restarted', async () => {
      const pod = await fixture.agent.waitForPod('completes', (p) => p.status?.phase === 'Succeeded');
      const job = containerStatus(pod, 'job');
      expect(job?.state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
      expect(job?.restartCount).toBe(0);
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'PodCompleted' });
      expect(await containersOf(pod.metadata.uid)).toHaveLength(1);
    }, 45_000);

    it('reports the termination message file, a custom path, and the log after a failure under FallbackToLogsOnError', async () => {
      const done = (p: Pod) => ['file', 'custom', 'logs'].every((name) => containerStatus(p, name)?.state.terminated !== undefined);
      const pod = await fixture.agent.waitForPod('termination-message', done, 45_000);
      expect(containerStatus(pod, 'file')?.state.terminated).toMatchObject({ exitCode: 0, message: 'DONE' });
      expect(containerStatus(pod, 'custom')?.state.terminated).toMatchObject({ exitCode: 0, message: 'DONE' });
      expect(containerStatus(pod, 'logs')?.state.terminated).toMatchObject({ exitCode: 1, message: 'DONE' });
    }, 60_000);

    it('restarts a container on the exit code its restart rule names, and not on another', async () => {
      const pod = await fixture.agent.waitForPod('restart-rule', (p) => p.status?.phase === 'Failed', 45_000);
      const retried = containerStatus(pod, 'retried');
      expect(retried?.restartCount).toBe(1);
      expect(retried?.state.terminated?.exitCode).toBe(1);
      expect(retried?.lastState.terminated?.exitCode).toBe(42);
    }, 60_000);

    it("retries an init container whose own restartPolicy OnFailure overrides the pod's Never", async () => {
      const pod = await fixture.agent.waitForPod('init-retried', (p) => p.status?.phase === 'Succeeded', 45_000);
      const setup = containerStatus(pod, 'setup');
      expect(setup?.restartCount).toBe(1);
      // Its first run (exit 3) is pruned before the next start (pruneInitContainersBeforeStart),
      // so no lastState: the restart count and the app's run tell that it was retried.
      expect(setup?.state.terminated?.exitCode).toBe(0);
      expect(containerStatus(pod, 'app')?.state.terminated?.exitCode).toBe(0);
    }, 60_000);

    it('runs an init container again on the exit code its restart rule names, and fails the pod on another', async () => {
      const pod = await fixture.agent.waitForPod('init-restart-rule', (p) => p.status?.phase === 'Failed', 45_000);
      const setup = containerStatus(pod, 'setup');
      expect(setup?.restartCount).toBe(1);
      expect(setup?.state.terminated?.exitCode).toBe(1);
      expect(setup?.lastState.terminated?.exitCode).toBe(42);
      expect(containerStatus(pod, 'app')?.state.running).toBeUndefined();
      const containers = await containersOf(pod.metadata.uid);
      expect(containers.map((c) => c.metadata.name).sort()).toEqual(['setup', 'setup']);
    }, 60_000);

    // Only root mounts the tmpfs (mounter.ts); elsewhere the volume stays on disk, as the agent logs.
    const mounts = process.getuid?.() === 0;
    if (!mounts) console.warn(`SKIPPED on ${runtime.name}: the tmpfs /proc/mounts scenario needs root (run as root, as CI does)`);
    it.skipIf(!mounts)("shows an emptyDir on memory as a tmpfs in the container's /proc/mounts", async () => {
      const pod = await fixture.agent.waitForPod('memory-volume', (p) => p.status?.phase === 'Succeeded', 45_000);
      expect(containerStatus(pod, 'mounts')?.state.terminated?.message).toMatch(/^tmpfs \/cache tmpfs rw,\S*size=\d+k/);
    }, 60_000);

    it('names the pod by its hostnameOverride, over hostname and subdomain', async () => {
      const pod = await fixture.agent.waitForPod('hostname-override', (p) => p.status?.phase === 'Succeeded', 45_000);
      expect(containerStatus(pod, 'hostname')?.state.terminated).toMatchObject({ exitCode: 0, message: 'my-host.example' });
    }, 60_000);

    it("runs a host-network pod under the node's hostname, with the node's hosts file", async () => {
      const pod = await fixture.agent.waitForPod('host-network', (p) => p.status?.phase === 'Succeeded', 45_000);
      expect(pod.status?.podIP).toBe(pod.status?.hostIP);
      expect(containerStatus(pod, 'hostname')?.state.terminated).toMatchObject({ exitCode: 0, message: os.hostname() });
      expect(containerStatus(pod, 'hosts')?.state.terminated?.message).toMatch(/^# Kubernetes-managed hosts file \(host network\)\.\n/);
    }, 60_000);
  });

  describe(`crash-loop backoff on ${runtime.name}`, () => {
    // Its own agent, so the backoff is watched from the first crash; short delays so that its
    // growth shows within seconds: 1 s, 2 s, 4 s, 4 s, …
    const fixture = agentFixture(
      runtime,
      () => ({
        'crash-loop.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: crash-loop }
spec:
  containers:
    - { name: dies, image: ${runtime.image}, command: ["sh", "-c", "exit 2"] }
`,
      }),
      // The container GC on every housekeeping pass, so that its work shows within the test.
      ['--crash-loop-backoff-initial', '1s', '--crash-loop-backoff-max', '4s', '--container-gc-period', '1s'],
    );

    it('backs off a crash-looping container with a doubling delay, counting its restarts', async () => {
      const waitingFor = (delay: string) => (p: Pod) =>
        containerStatus(p, 'dies')?.state.waiting?.message?.startsWith(`back-off ${delay} restarting failed container=dies pod=crash-loop-e2e-node_default(`) === true;
      const second = await fixture.agent.waitForPod('crash-loop', waitingFor('2s'));
      const status = containerStatus(second, 'dies');
      expect(status?.state.waiting?.reason).toBe('CrashLoopBackOff');
      expect(status?.lastState.terminated?.exitCode).toBe(2);
      const later = await fixture.agent.waitForPod('crash-loop', waitingFor('4s'));
      expect(containerStatus(later, 'dies')?.restartCount).toBeGreaterThan(status?.restartCount ?? 0);
      expect(later.status?.phase).toBe('Running');
    }, 60_000);

    it('garbage-collects the dead instances: only the newest finished one stays, and the status keeps counting', async () => {
      const restarted = (n: number) => (p: Pod) => (containerStatus(p, 'dies')?.restartCount ?? 0) >= n;
      const { uid } = (await fixture.agent.waitForPod('crash-loop', restarted(3))).metadata;
      // Without the GC, every instance stays: from here on at least three would be finished.
      await vi.waitFor(
        async () => {
          const listed = await fixture.cri.listContainers({ labelSelector: { [Label.podUid]: uid } });
          expect(listed.filter((c) => c.state !== 'CONTAINER_RUNNING').length).toBeLessThanOrEqual(1);
        },
        { timeout: 20_000, interval: 200 },
      );
      const pod = await fixture.agent.waitForPod('crash-loop', restarted(4));
      // The last termination is still reported: as the state just after the newest instance exited
      // (the GC keeps it), else as the last state (in CrashLoopBackOff; or from the previous
      // instance, which the GC keeps while the newest runs or is about to).
      const status = containerStatus(pod, 'dies');
      expect((status?.state.terminated ?? status?.lastState.terminated)?.exitCode).toBe(2);
    }, 60_000);
  });
}
