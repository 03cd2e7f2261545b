/**
 * API status generation (pkg/kubelet/kubelet_pods.go generateAPIPodStatus): getPhase, container statuses, conditions.
 */
import { describe, expect, it } from 'vitest';
import type { ContainerStatus, Pod, PodCondition, PodStatus } from '../../src/api/types.ts';
import type { RuntimePodStatus } from '../../src/api/runtimeView.ts';
import {
  ContainerStatusUnknownMessage,
  type StatusInput,
  apiContainerUser,
  computePhase,
  generatePodStatus,
  withContainerReadiness,
} from '../../src/status/generate.ts';
import {
  POD_IP,
  T0,
  apiRunning,
  apiTerminated,
  apiWaiting,
  basePod,
  baseRuntime,
  ctr,
  exited,
  rc,
  sandbox,
  setContainer,
  sidecar,
  specContainer,
} from '../support/podFixtures.ts';

const NOW = T0 + 10_000;
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

function input(pod: Pod, runtime: RuntimePodStatus, extra: Partial<StatusInput> = {}): StatusInput {
  return { pod, runtime, reasons: {}, podIsTerminal: false, nowMs: NOW, runtimeName: 'containerd', ...extra };
}

const byName = (list: ContainerStatus[] | undefined, name: string): ContainerStatus => {
  const found = list?.find((s) => s.name === name);
  if (!found) throw new Error(`no status for ${name}`);
  return found;
};
const condition = (status: PodStatus, type: string): PodCondition => {
  const found = status.conditions?.find((c) => c.type === type);
  if (!found) throw new Error(`no condition ${type}`);
  return found;
};
const withPolicy = (policy: 'Always' | 'OnFailure' | 'Never', spec: Partial<Pod['spec']> = {}) =>
  basePod({ restartPolicy: policy, ...spec });

describe('computePhase (getPhase)', () => {
  const retryOn42 = { restartPolicy: 'Never' as const, restartPolicyRules: [{ action: 'Restart' as const, exitCodes: { operator: 'In' as const, values: [42] } }] };
  const twoRegular = { containers: [ctr('a'), ctr('b')] };
  const withInit = { initContainers: [ctr('init')], containers: [ctr('a')] };
  const withSidecar = { initContainers: [sidecar('sc')], containers: [ctr('a')] };
  type Row = [
    name: string,
    pod: Pod,
    init: ContainerStatus[],
    regular: ContainerStatus[],
    podIsTerminal: boolean,
    podHasInitialized: boolean,
    want: string,
  ];
  const rows: Row[] = [
    ['init container missing ⇒ Pending', withPolicy('Always', withInit), [], [apiWaiting('a')], false, false, 'Pending'],
    ['init container running ⇒ Pending', withPolicy('Always', withInit), [apiRunning('init')], [apiWaiting('a')], false, false, 'Pending'],
    ['init container waiting, never ran ⇒ Pending', withPolicy('Never', withInit), [apiWaiting('init')], [apiWaiting('a')], false, false, 'Pending'],
    ['init container failed under Never ⇒ Failed', withPolicy('Never', withInit), [apiTerminated('init', 1)], [apiWaiting('a')], false, false, 'Failed'],
    ['init container crash-looping under Never ⇒ Failed', withPolicy('Never', withInit), [apiWaiting('init', 2)], [apiWaiting('a')], false, false, 'Failed'],
    ['init container failed under Always ⇒ Pending', withPolicy('Always', withInit), [apiTerminated('init', 1)], [apiWaiting('a')], false, false, 'Pending'],
    ['init done, regular running ⇒ Running', withPolicy('Always', withInit), [apiTerminated('init', 0)], [apiRunning('a')], false, true, 'Running'],
    ['sidecar running but not started, not initialized ⇒ Pending', withPolicy('Always', withSidecar), [apiRunning('sc', false)], [apiWaiting('a')], false, false, 'Pending'],
    ['sidecar restarting after initialization ⇒ Running', withPolicy('Always', withSidecar), [apiRunning('sc', false)], [apiRunning('a')], false, true, 'Running'],
    ['sidecar started, regular running ⇒ Running', withPolicy('Always', withSidecar), [apiRunning('sc')], [apiRunning('a')], false, true, 'Running'],
    ['sidecar status missing ⇒ Pending', withPolicy('Always', withSidecar), [], [apiRunning('a')], false, true, 'Pending'],
    ['terminated sidecar is ignored: regular succeeded under Never ⇒ Succeeded', withPolicy('Never', withSidecar), [apiTerminated('sc', 137)], [apiTerminated('a', 0)], false, true, 'Succeeded'],
    ['all running ⇒ Running', withPolicy('Always', twoRegular), [], [apiRunning('a'), apiRunning('b')], false, true, 'Running'],
    ['one running, one waiting ⇒ Pending', withPolicy('Always', twoRegular), [], [apiRunning('a'), apiWaiting('b')], false, true, 'Pending'],
    ['one running, one status missing ⇒ Pending', withPolicy('Always', twoRegular), [], [apiRunning('a')], false, true, 'Pending'],
    ['one running, one terminated ⇒ Running', withPolicy('Never', twoRegular), [], [apiRunning('a'), apiTerminated('b', 1)], false, true, 'Running'],
    ['crash-looping counts as stopped: Always ⇒ Running', withPolicy('Always', twoRegular), [], [apiWaiting('a', 1), apiWaiting('b', 1)], false, true, 'Running'],
    ['all stopped under Always ⇒ Running', withPolicy('Always', twoRegular), [], [apiTerminated('a', 0), apiTerminated('b', 1)], false, true, 'Running'],
    ['all succeeded under OnFailure ⇒ Succeeded', withPolicy('OnFailure', twoRegular), [], [apiTerminated('a', 0), apiTerminated('b', 0)], false, true, 'Succeeded'],
    ['one failed under OnFailure ⇒ Running', withPolicy('OnFailure', twoRegular), [], [apiTerminated('a', 0), apiTerminated('b', 1)], false, true, 'Running'],
    ['all succeeded under Never ⇒ Succeeded', withPolicy('Never', twoRegular), [], [apiTerminated('a', 0), apiTerminated('b', 0)], false, true, 'Succeeded'],
    ['one failed under Never ⇒ Failed', withPolicy('Never', twoRegular), [], [apiTerminated('a', 0), apiTerminated('b', 1)], false, true, 'Failed'],
    ['terminal pod, all succeeded under Always ⇒ Succeeded', withPolicy('Always', twoRegular), [], [apiTerminated('a', 0), apiTerminated('b', 0)], true, true, 'Succeeded'],
    ['terminal pod, one failed under Always ⇒ Failed', withPolicy('Always', twoRegular), [], [apiTerminated('a', 0), apiTerminated('b', 143)], true, true, 'Failed'],
    ['terminal pod, one failed under OnFailure ⇒ Failed', withPolicy('OnFailure', twoRegular), [], [apiTerminated('a', 0), apiTerminated('b', 1)], true, true, 'Failed'],
    // ContainerRestartRules: each container's own answer (ContainerShouldRestart) decides.
    ['a container\'s own Always under the pod\'s Never ⇒ Running', withPolicy('Never', { containers: [ctr('a', { restartPolicy: 'Always' }), ctr('b')] }), [], [apiTerminated('a', 0), apiTerminated('b', 0)], false, true, 'Running'],
    ['a rule that restarts exit code 42, under Never ⇒ Running', withPolicy('Never', { containers: [ctr('a', retryOn42)] }), [], [apiWaiting('a', 42)], false, true, 'Running'],
    ['a rule not matching exit code 1, under Never ⇒ Failed', withPolicy('Never', { containers: [ctr('a', retryOn42)] }), [], [apiTerminated('a', 1)], false, true, 'Failed'],
    ['a container\'s own Never under the pod\'s Always, failed ⇒ Failed', withPolicy('Always', { containers: [ctr('a', { restartPolicy: 'Never' })] }), [], [apiTerminated('a', 1)], false, true, 'Failed'],
    // An init container's own policy and rules over the pod's (getPhase, failedInitializationNotRestartable).
    ['an init container\'s own OnFailure under Never, failed ⇒ Pending', withPolicy('Never', { initContainers: [ctr('init', { restartPolicy: 'OnFailure' })], containers: [ctr('a')] }), [apiTerminated('init', 1)], [apiWaiting('a')], false, false, 'Pending'],
    ['an init container\'s own OnFailure under Never, crash-looping ⇒ Pending', withPolicy('Never', { initContainers: [ctr('init', { restartPolicy: 'OnFailure' })], containers: [ctr('a')] }), [apiWaiting('init', 1)], [apiWaiting('a')], false, false, 'Pending'],
    ['an init container\'s own Never under Always, failed ⇒ Failed', withPolicy('Always', { initContainers: [ctr('init', { restartPolicy: 'Never' })], containers: [ctr('a')] }), [apiTerminated('init', 1)], [apiWaiting('a')], false, false, 'Failed'],
    ['an init container\'s rule matching exit code 42, under Never ⇒ Pending', withPolicy('Never', { initContainers: [ctr('init', retryOn42)], containers: [ctr('a')] }), [apiWaiting('init', 42)], [apiWaiting('a')], false, false, 'Pending'],
    ['an init container\'s rule not matching exit code 3 ⇒ Failed', withPolicy('Always', { initContainers: [ctr('init', retryOn42)], containers: [ctr('a')] }), [apiTerminated('init', 3)], [apiWaiting('a')], false, false, 'Failed'],
  ];
  it.each(rows)('%s', (_name, pod, init, regular, podIsTerminal, podHasInitialized, want) => {
    expect(computePhase(pod, init, regular, podIsTerminal, podHasInitialized)).toBe(want);
  });

  it('a terminal static pod keeps the restart-policy answer (no terminal phase from podIsTerminal)', () => {
    const pod = withPolicy('Always', twoRegular);
    pod.metadata.annotations = { 'kubernetes.io/config.source': 'file' };
    const stopped = [apiTerminated('a', 0), apiTerminated('b', 1)];
    expect(computePhase(pod, [], stopped, true, true)).toBe('Running');
    pod.metadata.annotations = { 'kubernetes.io/config.source': 'api' };
    expect(computePhase(pod, [], stopped, true, true)).toBe('Failed');
  });
});

describe('generatePodStatus: container statuses', () => {
  it('defaults to waiting ContainerCreating without init containers', () => {
    const pod = basePod();
    const status = generatePodStatus(input(pod, { ...baseRuntime(pod), containers: [] }));
    expect(status.containerStatuses?.map((s) => s.state.waiting?.reason)).toEqual(['ContainerCreating', 'ContainerCreating', 'ContainerCreating']);
    expect(status.initContainerStatuses).toBeUndefined();
    expect(status.phase).toBe('Pending');
  });

  it('defaults to waiting PodInitializing for every list when the pod has init containers', () => {
    const pod = basePod({ initContainers: [ctr('init1')] });
    const status = generatePodStatus(input(pod, { ...baseRuntime(pod), containers: [] }));
    expect(byName(status.initContainerStatuses, 'init1').state).toEqual({ waiting: { reason: 'PodInitializing' } });
    expect(byName(status.containerStatuses, 'foo1').state).toEqual({ waiting: { reason: 'PodInitializing' } });
  });

  it('cuts each terminated message to its share of 12 KiB among the pod\'s containers (normalizeStatus), current and last state', () => {
    const pod = basePod({ restartPolicy: 'Always' }); // three containers: 4096 bytes each
    const runtime = baseRuntime(pod);
    const long = 'x'.repeat(5000);
    runtime.containers = runtime.containers.filter((c) => c.name !== 'foo2');
    runtime.containers.push(
      exited(specContainer(pod, 'foo2'), 1, { id: 'new', restartCount: 1, message: long, createdAt: T0 + 10 }),
      exited(specContainer(pod, 'foo2'), 1, { id: 'old', restartCount: 0, message: `${long}y` }),
    );
    const foo2 = byName(generatePodStatus(input(pod, runtime)).containerStatuses, 'foo2');
    expect(foo2.state.terminated?.message).toBe('x'.repeat(4096));
    expect(foo2.lastState.terminated?.message).toBe('x'.repeat(4096));
  });

  it('maps running and exited runtime containers, with containerID, imageID and restartCount from the runtime', () => {
    const pod = basePod({ restartPolicy: 'Never' });
    const runtime = baseRuntime(pod);
    setContainer(runtime, 'foo2', exited(specContainer(pod, 'foo2'), 3, { restartCount: 4, message: 'boom', startedAt: T0 + 2000, finishedAt: T0 + 5000 }));
    setContainer(runtime, 'foo1', rc(specContainer(pod, 'foo1'), { restartCount: 2 }));
    const status = generatePodStatus(input(pod, runtime));
    const foo1 = byName(status.containerStatuses, 'foo1');
    expect(foo1.state).toEqual({ running: { startedAt: iso(T0 + 2000) } });
    expect(foo1.restartCount).toBe(2);
    expect(foo1.containerID).toBe('containerd://foo1-id');
    expect(foo1.imageID).toBe('sha256:foo1');
    expect(foo1.ready).toBe(true);
    expect(foo1.started).toBe(true);
    const foo2 = byName(status.containerStatuses, 'foo2');
    expect(foo2.state.terminated).toEqual({
      exitCode: 3,
      reason: 'Error',
      message: 'boom',
      startedAt: iso(T0 + 2000),
      finishedAt: iso(T0 + 5000),
      containerID: 'containerd://foo2-id',
    });
    expect(foo2.restartCount).toBe(4);
    expect(foo2.ready).toBe(false);
  });

  it('takes lastState from the second-newest instance only', () => {
    const pod = basePod();
    const runtime = baseRuntime(pod);
    const c = specContainer(pod, 'foo1');
    runtime.containers = runtime.containers.filter((x) => x.name !== 'foo1');
    runtime.containers.unshift(
      rc(c, { id: 'new', restartCount: 2 }),
      exited(c, 2, { id: 'older', restartCount: 1 }),
      exited(c, 9, { id: 'oldest', restartCount: 0 }),
    );
    const foo1 = byName(generatePodStatus(input(pod, runtime)).containerStatuses, 'foo1');
    expect(foo1.state.running).toBeDefined();
    expect(foo1.lastState.terminated?.exitCode).toBe(2);
    expect(foo1.lastState.terminated?.containerID).toBe('containerd://older');
    expect(foo1.restartCount).toBe(2);
  });

  it('a Created container is waiting without a reason', () => {
    const pod = basePod();
    const runtime = baseRuntime(pod);
    setContainer(runtime, 'foo1', rc(specContainer(pod, 'foo1'), { state: 'CONTAINER_CREATED', startedAt: 0 }));
    const status = generatePodStatus(input(pod, runtime));
    expect(byName(status.containerStatuses, 'foo1').state).toEqual({ waiting: {} });
    expect(status.phase).toBe('Pending');
  });

  it('CrashLoopBackOff: the waiting reason replaces the state, the termination moves to lastState', () => {
    const pod = basePod();
    const runtime = baseRuntime(pod);
    setContainer(runtime, 'foo2', exited(specContainer(pod, 'foo2'), 1, { restartCount: 3 }));
    const message = 'back-off 40s restarting failed container=foo2 pod=web_default(uid-web)';
    const status = generatePodStatus(input(pod, runtime, { reasons: { foo2: { reason: 'CrashLoopBackOff', message } } }));
    const foo2 = byName(status.containerStatuses, 'foo2');
    expect(foo2.state).toEqual({ waiting: { reason: 'CrashLoopBackOff', message } });
    expect(foo2.lastState.terminated?.exitCode).toBe(1);
    expect(foo2.lastState.terminated?.containerID).toBe('containerd://foo2-id');
    expect(foo2.restartCount).toBe(3);
    expect(status.phase).toBe('Running');
  });

  it('no waiting reason for a container that will not be restarted (Never) or a terminal pod', () => {
    const never = basePod({ restartPolicy: 'Never' });
    const runtime = baseRuntime(never);
    setContainer(runtime, 'foo2', exited(specContainer(never, 'foo2'), 1));
    const reasons = { foo2: { reason: 'CrashLoopBackOff', message: 'x' } };
    expect(byName(generatePodStatus(input(never, runtime, { reasons })).containerStatuses, 'foo2').state.terminated?.exitCode).toBe(1);
    const always = basePod();
    const runtime2 = baseRuntime(always);
    setContainer(runtime2, 'foo2', exited(specContainer(always, 'foo2'), 1));
    const terminal = generatePodStatus(input(always, runtime2, { reasons, podIsTerminal: true }));
    expect(byName(terminal.containerStatuses, 'foo2').state.terminated?.exitCode).toBe(1);
  });

  it('a waiting reason for a container the runtime never created (ErrImagePull)', () => {
    const pod = basePod();
    const runtime = baseRuntime(pod);
    setContainer(runtime, 'foo3', undefined);
    const status = generatePodStatus(input(pod, runtime, { reasons: { foo3: { reason: 'ErrImagePull', message: 'nope' } } }));
    expect(byName(status.containerStatuses, 'foo3').state).toEqual({ waiting: { reason: 'ErrImagePull', message: 'nope' } });
    expect(status.phase).toBe('Pending');
  });

  describe('a previously running container the runtime no longer has', () => {
    const previousWith = (foo1: Partial<ContainerStatus>): PodStatus => ({
      phase: 'Running',
      containerStatuses: [{ ...apiRunning('foo1'), restartCount: 2, ...foo1 }],
    });
    const setup = () => {
      const pod = basePod();
      const runtime = baseRuntime(pod);
      setContainer(runtime, 'foo1', undefined);
      return { pod, runtime };
    };

    it('gets lastState ContainerStatusUnknown and restartCount+1, and does not pull the pod back to Pending', () => {
      const { pod, runtime } = setup();
      const status = generatePodStatus(input(pod, runtime, { previous: previousWith({}) }));
      const foo1 = byName(status.containerStatuses, 'foo1');
      expect(foo1.state).toEqual({ waiting: { reason: 'ContainerCreating' } });
      expect(foo1.lastState).toEqual({ terminated: { exitCode: 137, reason: 'ContainerStatusUnknown', message: ContainerStatusUnknownMessage } });
      expect(foo1.restartCount).toBe(3);
      expect(status.phase).toBe('Running');
    });

    it('keeps restartCount when the pod is being deleted', () => {
      const { pod, runtime } = setup();
      pod.metadata.deletionTimestamp = '2026-01-01T00:00:05Z';
      const foo1 = byName(generatePodStatus(input(pod, runtime, { previous: previousWith({}) })).containerStatuses, 'foo1');
      expect(foo1.lastState.terminated?.reason).toBe('ContainerStatusUnknown');
      expect(foo1.restartCount).toBe(2);
    });

    it('leaves an existing last termination alone', () => {
      const { pod, runtime } = setup();
      const lastState = { terminated: { exitCode: 1, reason: 'Error' } };
      const foo1 = byName(generatePodStatus(input(pod, runtime, { previous: previousWith({ lastState }) })).containerStatuses, 'foo1');
      expect(foo1.lastState).toEqual(lastState);
      expect(foo1.restartCount).toBe(2);
    });

    it('a previously terminated status is kept as it was', () => {
      const { pod, runtime } = setup();
      const previous: PodStatus = { phase: 'Running', containerStatuses: [{ ...apiTerminated('foo1', 0), restartCount: 5 }] };
      const foo1 = byName(generatePodStatus(input(pod, runtime, { previous })).containerStatuses, 'foo1');
      expect(foo1.state.terminated?.exitCode).toBe(0);
      expect(foo1.restartCount).toBe(5);
    });
  });

  describe('a container in Unknown state', () => {
    const setup = () => {
      const pod = basePod();
      const runtime = baseRuntime(pod);
      setContainer(runtime, 'foo1', rc(specContainer(pod, 'foo1'), { state: 'CONTAINER_UNKNOWN', restartCount: 1 }));
      return { pod, runtime };
    };

    it('after Running: terminated ContainerStatusUnknown, restartCount previous+1', () => {
      const { pod, runtime } = setup();
      const previous: PodStatus = { phase: 'Running', containerStatuses: [{ ...apiRunning('foo1'), restartCount: 4 }] };
      const foo1 = byName(generatePodStatus(input(pod, runtime, { previous })).containerStatuses, 'foo1');
      expect(foo1.state.terminated?.reason).toBe('ContainerStatusUnknown');
      expect(foo1.state.terminated?.exitCode).toBe(137);
      expect(foo1.restartCount).toBe(5);
    });

    it('otherwise: waiting without a reason', () => {
      const { pod, runtime } = setup();
      const status = generatePodStatus(input(pod, runtime));
      const foo1 = byName(status.containerStatuses, 'foo1');
      expect(foo1.state).toEqual({ waiting: {} });
      expect(foo1.restartCount).toBe(1);
      expect(status.phase).toBe('Pending');
    });
  });

  it('init statuses follow spec order, regular statuses are sorted by name', () => {
    const pod = basePod({
      initContainers: [ctr('z-init'), ctr('a-init')],
      containers: [ctr('zeta'), ctr('alpha'), ctr('mid')],
    });
    const status = generatePodStatus(input(pod, { ...baseRuntime(pod), containers: [] }));
    expect(status.initContainerStatuses?.map((s) => s.name)).toEqual(['z-init', 'a-init']);
    expect(status.containerStatuses?.map((s) => s.name)).toEqual(['alpha', 'mid', 'zeta']);
  });

  it('a regular init container is ready iff it exited 0', () => {
    const pod = basePod({ initContainers: [ctr('init1'), ctr('init2')] });
    const runtime = { ...baseRuntime(pod), containers: [rc(ctr('init2')), exited(ctr('init1'), 0)] };
    const status = generatePodStatus(input(pod, runtime));
    expect(byName(status.initContainerStatuses, 'init1').ready).toBe(true);
    expect(byName(status.initContainerStatuses, 'init2').ready).toBe(false);
  });
});

describe('generatePodStatus: phase', () => {
  it('Pending while an init container runs', () => {
    const pod = basePod({ initContainers: [ctr('init1')] });
    const status = generatePodStatus(input(pod, { ...baseRuntime(pod), containers: [rc(ctr('init1'))] }));
    expect(status.phase).toBe('Pending');
  });

  it('Failed when an init container failed under Never', () => {
    const pod = basePod({ restartPolicy: 'Never', initContainers: [ctr('init1')] });
    const status = generatePodStatus(input(pod, { ...baseRuntime(pod), containers: [exited(ctr('init1'), 1)] }));
    expect(status.phase).toBe('Failed');
    expect(condition(status, 'Ready').reason).toBe('PodFailed');
  });

  it('Succeeded for a terminal pod whose containers all exited 0, even under Always', () => {
    const pod = basePod();
    const runtime = baseRuntime(pod);
    runtime.containers = pod.spec.containers.map((c) => exited(c, 0));
    expect(generatePodStatus(input(pod, runtime)).phase).toBe('Running');
    expect(generatePodStatus(input(pod, runtime, { podIsTerminal: true })).phase).toBe('Succeeded');
  });

  it('never leaves a terminal phase it already published, and keeps its reason', () => {
    const pod = basePod();
    const previous: PodStatus = { phase: 'Succeeded', reason: 'Done', message: 'all done', startTime: iso(T0) };
    const status = generatePodStatus(input(pod, baseRuntime(pod), { previous }));
    expect(status.phase).toBe('Succeeded');
    expect(status.reason).toBe('Done');
    expect(status.message).toBe('all done');
  });

  it('keeps a terminal phase even when the containers then point at the other one (Failed by the deadline, exit 0 on TERM)', () => {
    const pod = basePod();
    const runtime = baseRuntime(pod);
    runtime.containers = pod.spec.containers.map((c) => exited(c, 0));
    const previous: PodStatus = { phase: 'Failed', reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline', startTime: iso(T0) };
    const status = generatePodStatus(input(pod, runtime, { previous, podIsTerminal: true }));
    expect([status.phase, status.reason]).toEqual(['Failed', 'DeadlineExceeded']);
  });

  it('never leaves a terminal phase the API server shows', () => {
    const pod = basePod();
    pod.status = { phase: 'Failed' };
    expect(generatePodStatus(input(pod, baseRuntime(pod))).phase).toBe('Failed');
  });

  it('keeps reason/message only while the phase is unchanged', () => {
    const pod = basePod();
    const previous: PodStatus = { phase: 'Running', reason: 'R', message: 'M' };
    const same = generatePodStatus(input(pod, baseRuntime(pod), { previous }));
    expect([same.reason, same.message]).toEqual(['R', 'M']);
    const changed = generatePodStatus(input(pod, { ...baseRuntime(pod), containers: [] }, { previous }));
    expect(changed.phase).toBe('Pending');
    expect(changed.reason).toBeUndefined();
    expect(changed.message).toBeUndefined();
  });

  it('activeDeadlineSeconds exceeded since startTime ⇒ Failed / DeadlineExceeded', () => {
    const pod = basePod({ activeDeadlineSeconds: 60 });
    const previous: PodStatus = { phase: 'Running', startTime: iso(T0) };
    const before = generatePodStatus(input(pod, baseRuntime(pod), { previous, nowMs: T0 + 59_000 }));
    expect(before.phase).toBe('Running');
    const after = generatePodStatus(input(pod, baseRuntime(pod), { previous, nowMs: T0 + 60_000 }));
    expect(after.phase).toBe('Failed');
    expect(after.reason).toBe('DeadlineExceeded');
    expect(after.message).toBe('Pod was active on the node longer than the specified deadline');
    expect(after.startTime).toBe(iso(T0));
    expect(condition(after, 'ContainersReady')).toMatchObject({ status: 'False', reason: 'PodFailed' });
  });

  it('startTime is set once and then kept', () => {
    const pod = basePod();
    const first = generatePodStatus(input(pod, baseRuntime(pod), { nowMs: T0 + 1_500 }));
    expect(first.startTime).toBe(iso(T0 + 1_000));
    const second = generatePodStatus(input(pod, baseRuntime(pod), { previous: first, nowMs: T0 + 90_000 }));
    expect(second.startTime).toBe(iso(T0 + 1_000));
  });
});

describe('generatePodStatus: conditions', () => {
  it('all containers running and ready ⇒ every condition True, in kubelet order', () => {
    const pod = basePod();
    const status = generatePodStatus(input(pod, baseRuntime(pod)));
    expect(status.conditions?.map((c) => [c.type, c.status])).toEqual([
      ['PodReadyToStartContainers', 'True'],
      ['Initialized', 'True'],
      ['Ready', 'True'],
      ['ContainersReady', 'True'],
      ['PodScheduled', 'True'],
    ]);
  });

  it('unready containers are listed in ContainersReady and Ready', () => {
    const pod = basePod();
    pod.spec.containers[1] = ctr('foo2', { readinessProbe: { exec: { command: ['true'] } } });
    pod.spec.containers[2] = ctr('foo3', { readinessProbe: { exec: { command: ['true'] } } });
    const runtime = baseRuntime(pod);
    // foo2 has a failing readiness result, foo3 has none yet: both unready.
    const status = generatePodStatus(input(pod, runtime, { readiness: { 'foo2-id': false } }));
    const want = { status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [foo2 foo3]' };
    expect(condition(status, 'ContainersReady')).toMatchObject(want);
    expect(condition(status, 'Ready')).toMatchObject(want);
    const ready = generatePodStatus(input(pod, runtime, { readiness: { 'foo2-id': true, 'foo3-id': true } }));
    expect(condition(ready, 'Ready').status).toBe('True');
  });

  it('sidecars count for readiness, listed before regular containers', () => {
    const pod = basePod({
      initContainers: [sidecar('sc', { readinessProbe: { exec: { command: ['true'] } } })],
      containers: [ctr('foo1', { readinessProbe: { exec: { command: ['true'] } } })],
    });
    const runtime = { ...baseRuntime(pod), containers: [rc(ctr('foo1')), rc(sidecar('sc'))] };
    const status = generatePodStatus(input(pod, runtime));
    expect(condition(status, 'ContainersReady').message).toBe('containers with unready status: [sc foo1]');
  });

  it('Initialized is False with ContainersNotInitialized while init containers are incomplete', () => {
    const pod = basePod({ initContainers: [ctr('init1'), ctr('init2')] });
    const runtime = { ...baseRuntime(pod), containers: [rc(ctr('init2')), exited(ctr('init1'), 0)] };
    const status = generatePodStatus(input(pod, runtime));
    expect(condition(status, 'Initialized')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotInitialized',
      message: 'containers with incomplete status: [init2]',
    });
  });

  it('Initialized is True once every init container is done', () => {
    const pod = basePod({ initContainers: [ctr('init1')] });
    const runtime = { ...baseRuntime(pod), containers: [exited(ctr('init1'), 0)] };
    expect(condition(generatePodStatus(input(pod, runtime)), 'Initialized').status).toBe('True');
  });

  it('Initialized stays True once a regular container ran, even if init statuses are gone', () => {
    const pod = basePod({ initContainers: [ctr('init1')] });
    // A new sandbox: init containers were removed, the regular containers exited in the old one.
    const runtime: RuntimePodStatus = {
      uid: pod.metadata.uid,
      sandboxes: [sandbox({ id: 'sandbox-2', attempt: 1 }), sandbox({ state: 'SANDBOX_NOTREADY' })],
      containers: pod.spec.containers.map((c) => exited(c, 1)),
    };
    const status = generatePodStatus(input(pod, runtime));
    expect(condition(status, 'Initialized').status).toBe('True');
  });

  it('Initialized waits for a sidecar to be started', () => {
    const pod = basePod({ initContainers: [sidecar('sc')] });
    const none = generatePodStatus(input(pod, { ...baseRuntime(pod), containers: [] }));
    expect(condition(none, 'Initialized')).toMatchObject({ status: 'False', message: 'containers with incomplete status: [sc]' });
    const started = generatePodStatus(input(pod, { ...baseRuntime(pod), containers: [rc(sidecar('sc'))] }));
    expect(condition(started, 'Initialized').status).toBe('True');
  });

  it('Succeeded ⇒ PodCompleted reasons', () => {
    const pod = basePod({ restartPolicy: 'Never', initContainers: [ctr('init1')] });
    const runtime = { ...baseRuntime(pod), containers: [...pod.spec.containers.map((c) => exited(c, 0)), exited(ctr('init1'), 0)] };
    const status = generatePodStatus(input(pod, runtime));
    expect(status.phase).toBe('Succeeded');
    expect(condition(status, 'ContainersReady')).toMatchObject({ status: 'False', reason: 'PodCompleted' });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'PodCompleted' });
    expect(condition(status, 'Initialized')).toMatchObject({ status: 'True', reason: 'PodCompleted' });
  });

  it('Succeeded without init containers ⇒ Initialized True with PodCompleted', () => {
    const pod = basePod({ restartPolicy: 'Never' });
    const runtime = { ...baseRuntime(pod), containers: pod.spec.containers.map((c) => exited(c, 0)) };
    const status = generatePodStatus(input(pod, runtime));
    expect(status.phase).toBe('Succeeded');
    expect(condition(status, 'Initialized')).toMatchObject({ status: 'True', reason: 'PodCompleted' });
  });

  it('a terminal pod keeps the containers that never ran waiting: only the end of its termination says otherwise (test/status/terminate.test.ts)', () => {
    const pod = basePod({ restartPolicy: 'Never', activeDeadlineSeconds: 5 });
    const runtime = { ...baseRuntime(pod), containers: [exited(specContainer(pod, 'foo1'), 1)] };
    const status = generatePodStatus(input(pod, runtime, { previous: { phase: 'Pending', startTime: iso(T0) } }));
    expect(status.phase).toBe('Failed');
    for (const name of ['foo2', 'foo3']) expect(byName(status.containerStatuses, name).state).toEqual({ waiting: { reason: 'ContainerCreating' } });
    expect(byName(status.containerStatuses, 'foo1').state.terminated?.exitCode).toBe(1);
  });

  describe('readiness gates', () => {
    const gated = (conditions: PodCondition[] = []) => {
      const pod = basePod({ readinessGates: [{ conditionType: 'example.com/lb' }, { conditionType: 'example.com/dns' }] });
      pod.status = { conditions };
      return pod;
    };
    const readyRuntime = (pod: Pod) => baseRuntime(pod);
    const allReady = (pod: Pod) => ({ previous: { phase: 'Running' as const, containerStatuses: pod.spec.containers.map((c) => ({ ...apiRunning(c.name), ready: true })) } });

    it('hold Ready False with ReadinessGatesNotReady while a gate condition is missing or not True', () => {
      const pod = gated([{ type: 'example.com/lb', status: 'False' }]);
      const status = withContainerReadiness(pod, generatePodStatus(input(pod, readyRuntime(pod), allReady(pod))), 'foo1', true, NOW);
      expect(condition(status, 'ContainersReady').status).toBe('True');
      expect(condition(status, 'Ready')).toMatchObject({
        status: 'False',
        reason: 'ReadinessGatesNotReady',
        message: 'the status of pod readiness gate "example.com/lb" is not "True", but False, corresponding condition of pod readiness gate "example.com/dns" does not exist.',
      });
    });

    it('let Ready be True once every gate condition is True', () => {
      const pod = gated([
        { type: 'example.com/lb', status: 'True' },
        { type: 'example.com/dns', status: 'True' },
      ]);
      const status = withContainerReadiness(pod, generatePodStatus(input(pod, readyRuntime(pod), allReady(pod))), 'foo1', true, NOW);
      expect(condition(status, 'Ready').status).toBe('True');
    });

    it('do not hide containers that are not ready', () => {
      const pod = gated();
      const status = generatePodStatus(input(pod, { ...readyRuntime(pod), containers: [] }));
      expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'ContainersNotReady' });
    });
  });

  it('Failed ⇒ PodFailed reasons', () => {
    const pod = basePod({ restartPolicy: 'Never' });
    const runtime = { ...baseRuntime(pod), containers: pod.spec.containers.map((c) => exited(c, 1)) };
    const status = generatePodStatus(input(pod, runtime));
    expect(status.phase).toBe('Failed');
    expect(condition(status, 'ContainersReady')).toMatchObject({ status: 'False', reason: 'PodFailed' });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'PodFailed' });
  });

  it('PodReadyToStartContainers follows the sandbox', () => {
    const pod = basePod();
    const noSandbox = generatePodStatus(input(pod, { uid: pod.metadata.uid, sandboxes: [], containers: [] }));
    expect(condition(noSandbox, 'PodReadyToStartContainers').status).toBe('False');
    const dead = generatePodStatus(input(pod, { ...baseRuntime(pod), sandboxes: [sandbox({ state: 'SANDBOX_NOTREADY' })] }));
    expect(condition(dead, 'PodReadyToStartContainers').status).toBe('False');
    const noIp = generatePodStatus(input(pod, { ...baseRuntime(pod), sandboxes: [sandbox({ ip: '' })] }));
    expect(condition(noIp, 'PodReadyToStartContainers').status).toBe('False');
  });

  it('lastTransitionTime is kept while a condition keeps its status, and moves when it flips', () => {
    const pod = basePod();
    const first = generatePodStatus(input(pod, baseRuntime(pod), { nowMs: T0 + 1_000 }));
    const runtime = baseRuntime(pod);
    setContainer(runtime, 'foo1', exited(specContainer(pod, 'foo1'), 1));
    const second = generatePodStatus(input(pod, runtime, { previous: first, nowMs: T0 + 30_000 }));
    expect(condition(second, 'PodScheduled').lastTransitionTime).toBe(iso(T0 + 1_000));
    expect(condition(second, 'Initialized').lastTransitionTime).toBe(iso(T0 + 1_000));
    expect(condition(second, 'Ready')).toMatchObject({ status: 'False', lastTransitionTime: iso(T0 + 30_000) });
    const third = generatePodStatus(input(pod, runtime, { previous: second, nowMs: T0 + 60_000 }));
    expect(condition(third, 'Ready').lastTransitionTime).toBe(iso(T0 + 30_000));
  });
});

describe('generatePodStatus: addresses', () => {
  it('podIP comes from the ready sandbox', () => {
    const pod = basePod();
    const status = generatePodStatus(input(pod, baseRuntime(pod), { hostIP: '192.168.1.10' }));
    expect(status.podIP).toBe(POD_IP);
    expect(status.podIPs).toEqual([{ ip: POD_IP }]);
    expect(status.hostIP).toBe('192.168.1.10');
  });

  it('a sandbox that is not ready contributes no IP; the previous one is kept', () => {
    const pod = basePod();
    const runtime = { ...baseRuntime(pod), sandboxes: [sandbox({ state: 'SANDBOX_NOTREADY', ip: '10.0.0.99' })] };
    expect(generatePodStatus(input(pod, runtime)).podIP).toBeUndefined();
    expect(generatePodStatus(input(pod, runtime, { previous: { podIP: '10.1.1.1' } })).podIP).toBe('10.1.1.1');
  });

  it("reports the pod's QoS class (api/qos.ts)", () => {
    const pod = basePod({ initContainers: [ctr('init', { resources: { requests: { cpu: '1' } } })] });
    expect(generatePodStatus(input(pod, baseRuntime(pod))).qosClass).toBe('Burstable');
  });

  it('hostNetwork pods report the host IP as pod IP', () => {
    const pod = basePod({ hostNetwork: true });
    const status = generatePodStatus(input(pod, baseRuntime(pod), { hostIP: '192.168.1.10' }));
    expect(status.podIP).toBe('192.168.1.10');
    expect(status.podIPs).toEqual([{ ip: '192.168.1.10' }]);
  });
});

describe('withContainerReadiness (readiness applied between syncs)', () => {
  const running = (name: string, ready: boolean): ContainerStatus => ({
    name,
    state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
    lastState: {},
    ready,
    restartCount: 0,
    image: 'i',
    imageID: '',
    started: true,
  });
  const pod = {
    metadata: { name: 'p', namespace: 'default', uid: 'u' },
    spec: { containers: [{ name: 'a' }, { name: 'b' }] },
  };
  const base = {
    phase: 'Running' as const,
    containerStatuses: [running('a', true), running('b', false)],
    conditions: [
      { type: 'Ready', status: 'False' as const, lastTransitionTime: '2026-01-01T00:00:00Z' },
      { type: 'ContainersReady', status: 'False' as const, lastTransitionTime: '2026-01-01T00:00:00Z' },
      { type: 'PodScheduled', status: 'True' as const, lastTransitionTime: '2026-01-01T00:00:00Z' },
    ],
  };

  it('marks the container ready and turns Ready and ContainersReady True when it was the last one', () => {
    const next = withContainerReadiness(pod, base, 'b', true, Date.parse('2026-01-01T00:01:00Z'));
    expect(next.containerStatuses?.find((c) => c.name === 'b')?.ready).toBe(true);
    expect(next.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', lastTransitionTime: '2026-01-01T00:01:00Z' });
    expect(next.conditions?.find((c) => c.type === 'ContainersReady')?.status).toBe('True');
    expect(next.conditions?.find((c) => c.type === 'PodScheduled')?.lastTransitionTime).toBe('2026-01-01T00:00:00Z');
  });

  it('turns Ready False with the unready container named, keeping the transition time when unchanged', () => {
    const next = withContainerReadiness(pod, base, 'a', false, Date.parse('2026-01-01T00:01:00Z'));
    const ready = next.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'ContainersNotReady', lastTransitionTime: '2026-01-01T00:00:00Z' });
    expect(ready?.message).toBe('containers with unready status: [a b]');
  });

  it('never marks a container ready that is not running', () => {
    const stopped = { ...base, containerStatuses: [running('a', true), { ...running('b', false), state: { terminated: { exitCode: 1 } } }] };
    const next = withContainerReadiness(pod, stopped, 'b', true, 0);
    expect(next.containerStatuses?.find((c) => c.name === 'b')?.ready).toBe(false);
  });
});

describe('generatePodStatus: a kill status (an eviction)', () => {
  it('makes the pod Failed with its reason and message, and adds DisruptionTarget only when it names a reason for it', () => {
    const pod = basePod();
    const runtime = baseRuntime(pod);
    const message = 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". ';
    const withCondition = generatePodStatus(input(pod, runtime, { killStatus: { reason: 'Evicted', message, disruptionReason: 'TerminationByKubelet' } }));
    expect(withCondition).toMatchObject({ phase: 'Failed', reason: 'Evicted', message });
    expect(withCondition.conditions?.find((c) => c.type === 'DisruptionTarget')).toMatchObject({ status: 'True', reason: 'TerminationByKubelet', message });
    // A local-storage eviction (localStorageEviction passes no condition).
    const without = generatePodStatus(input(pod, runtime, { killStatus: { reason: 'Evicted', message } }));
    expect(without).toMatchObject({ phase: 'Failed', reason: 'Evicted', message });
    expect(without.conditions?.some((c) => c.type === 'DisruptionTarget')).toBe(false);
  });
});

describe("containerStatuses[].user (toKubeContainerUser)", () => {
  it.each([
    ['the runtime reports none (containerd 1.6): none', undefined, undefined],
    ['uid, gid and groups', { linux: { uid: 1000, gid: 3000, supplementalGroups: [3000, 2000] } }, { linux: { uid: 1000, gid: 3000, supplementalGroups: [3000, 2000] } }],
    ['root with no groups: the empty list left out, as the API omits it', { linux: { uid: 0, gid: 0, supplementalGroups: [] } }, { linux: { uid: 0, gid: 0 } }],
    ['a user without its Linux part: an empty user', {}, {}],
  ])('%s', (_case, runtimeUser, apiUser) => {
    expect(apiContainerUser(runtimeUser)).toEqual(apiUser);
  });

  it("is the newest instance's, and is absent when the runtime does not report one", () => {
    const pod = basePod({ containers: [ctr('a'), ctr('b')] });
    const runtime = baseRuntime(pod);
    setContainer(runtime, 'a', rc(ctr('a'), { id: 'a-2', user: { linux: { uid: 1000, gid: 3000, supplementalGroups: [3000] } } }));
    runtime.containers.push(rc(ctr('a'), { id: 'a-1', state: 'CONTAINER_EXITED', createdAt: T0, user: { linux: { uid: 0, gid: 0, supplementalGroups: [0] } } }));
    const status = generatePodStatus(input(pod, runtime));
    expect(byName(status.containerStatuses, 'a').user).toEqual({ linux: { uid: 1000, gid: 3000, supplementalGroups: [3000] } });
    expect(byName(status.containerStatuses, 'b')).not.toHaveProperty('user');
  });
});
