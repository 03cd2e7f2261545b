/**
 * The pod's final status (pkg/kubelet/status/status_manager.go TerminatePod, hasPodInitialized,
 * initializedContainers): containers that never ran are terminated ContainerStatusUnknown only once
 * the pod has initialized; init containers but for the trailing never-started ones; an API pod
 * still Pending or Running ends Failed, a static pod keeps its phase.
 */
import { describe, expect, it } from 'vitest';
import type { ContainerStatus, Pod, PodPhase, PodStatus } from '../../src/api/types.ts';
import { hasPodInitialized, initializedContainers, TerminatedUnknownMessage, terminatedPodStatus } from '../../src/status/terminate.ts';
import { apiRunning, apiTerminated, apiWaiting, basePod, ctr, sidecar } from '../support/podFixtures.ts';

const unknown = { terminated: { exitCode: 137, reason: 'ContainerStatusUnknown', message: TerminatedUnknownMessage } };
const initWaiting = (name: string): ContainerStatus => ({ ...apiWaiting(name), state: { waiting: { reason: 'PodInitializing' } } });
const states = (list: ContainerStatus[] | undefined) => Object.fromEntries((list ?? []).map((s) => [s.name, s.state]));
const staticPod = (pod: Pod): Pod => ({ ...pod, metadata: { ...pod.metadata, annotations: { 'kubernetes.io/config.source': 'file' } } });

describe('hasPodInitialized', () => {
  const twoInits = basePod({ initContainers: [ctr('init1'), ctr('init2')], containers: [ctr('app')] });
  const withSidecar = basePod({ initContainers: [sidecar('sc')], containers: [ctr('app')] });
  type Row = [name: string, pod: Pod, init: ContainerStatus[], regular: ContainerStatus[], want: boolean];
  const rows: Row[] = [
    ['no init containers: always initialized', basePod(), [], [initWaiting('foo1')], true],
    ['no status at all', twoInits, [], [], false],
    ['init containers waiting, app waiting', twoInits, [initWaiting('init1'), initWaiting('init2')], [initWaiting('app')], false],
    ['the first init container failed', twoInits, [apiTerminated('init1', 1), initWaiting('init2')], [initWaiting('app')], false],
    ['the last init container failed', twoInits, [apiTerminated('init1', 0), apiTerminated('init2', 1)], [initWaiting('app')], false],
    ['the last init container completed', twoInits, [apiTerminated('init1', 0), apiTerminated('init2', 0)], [initWaiting('app')], true],
    ['the last init container completed once (its last state)', twoInits, [apiTerminated('init1', 0), { ...initWaiting('init2'), lastState: { terminated: { exitCode: 0 } } }], [initWaiting('app')], true],
    ['an app container runs', twoInits, [initWaiting('init1'), initWaiting('init2')], [apiRunning('app')], true],
    ['an app container has a last termination', twoInits, [], [apiWaiting('app', 1)], true],
    ['only the first init status, completed: the kubelet reads the last one there is', twoInits, [apiTerminated('init1', 0)], [initWaiting('app')], true],
    ['init statuses out of step with the spec (the last one not the spec\'s at its index): no sign', twoInits, [apiTerminated('init2', 0)], [initWaiting('app')], false],
    ['a sidecar runs and has started', withSidecar, [apiRunning('sc')], [initWaiting('app')], true],
    ['a sidecar runs but has not started', withSidecar, [apiRunning('sc', false)], [initWaiting('app')], false],
  ];
  it.each(rows)('%s', (_name, pod, init, regular, want) => {
    expect(hasPodInitialized(pod, { initContainerStatuses: init, containerStatuses: regular })).toBe(want);
  });
});

describe('initializedContainers', () => {
  type Row = [name: string, statuses: ContainerStatus[], want: number];
  const rows: Row[] = [
    ['none', [], 0],
    ['all waiting: still the first', [initWaiting('a'), initWaiting('b')], 1],
    ['up to the last one out of waiting', [apiTerminated('a', 0), apiTerminated('b', 1), initWaiting('c')], 2],
    ['a waiting one with a last termination counts', [apiTerminated('a', 0), { ...initWaiting('b'), lastState: { terminated: { exitCode: 1 } } }, initWaiting('c')], 2],
    ['all started', [apiTerminated('a', 0), apiRunning('b')], 2],
  ];
  it.each(rows)('%s', (_name, statuses, want) => expect(initializedContainers(statuses)).toBe(want));
});

describe('terminatedPodStatus (TerminatePod)', () => {
  it('an init container failed under Never: the app container stays waiting PodInitializing, the init container after the failed one too', () => {
    const pod = basePod({ restartPolicy: 'Never', initContainers: [ctr('init1'), ctr('init2'), ctr('init3')], containers: [ctr('run1')] });
    const status: PodStatus = {
      phase: 'Failed',
      initContainerStatuses: [apiTerminated('init1', 0), apiTerminated('init2', 1), initWaiting('init3')],
      containerStatuses: [initWaiting('run1')],
    };
    const final = terminatedPodStatus(pod, status);
    expect(final.phase).toBe('Failed');
    expect(states(final.containerStatuses)).toEqual({ run1: { waiting: { reason: 'PodInitializing' } } });
    expect(states(final.initContainerStatuses)).toEqual({ init1: { terminated: { exitCode: 0 } }, init2: { terminated: { exitCode: 1 } }, init3: { waiting: { reason: 'PodInitializing' } } });
  });

  it('a pod that initialized: its containers that never ran are terminated ContainerStatusUnknown (137), the ones that ran keep their end', () => {
    const pod = basePod({ restartPolicy: 'Never' });
    const status: PodStatus = { phase: 'Failed', containerStatuses: [apiTerminated('foo1', 1), apiWaiting('foo2'), apiWaiting('foo3')] };
    const final = terminatedPodStatus(pod, status);
    expect(states(final.containerStatuses)).toEqual({ foo1: { terminated: { exitCode: 1 } }, foo2: unknown, foo3: unknown });
    expect(final.containerStatuses?.every((s) => !s.ready)).toBe(true);
  });

  it('a pod whose init containers completed: the app container that was being created is terminated ContainerStatusUnknown', () => {
    const pod = basePod({ initContainers: [ctr('init1')], containers: [ctr('app')] });
    const status: PodStatus = { phase: 'Pending', initContainerStatuses: [apiTerminated('init1', 0)], containerStatuses: [initWaiting('app')] };
    expect(states(terminatedPodStatus(pod, status).containerStatuses)).toEqual({ app: unknown });
  });

  it('an init container killed while waiting for its first start (the first one): terminated too, as the kubelet counts at least the first', () => {
    const pod = basePod({ initContainers: [ctr('init1'), ctr('init2')], containers: [ctr('app')] });
    const status: PodStatus = { phase: 'Pending', initContainerStatuses: [initWaiting('init1'), initWaiting('init2')], containerStatuses: [initWaiting('app')] };
    const final = terminatedPodStatus(pod, status);
    expect(states(final.initContainerStatuses)).toEqual({ init1: unknown, init2: { waiting: { reason: 'PodInitializing' } } });
    expect(states(final.containerStatuses)).toEqual({ app: { waiting: { reason: 'PodInitializing' } } });
  });

  type PhaseRow = [name: string, phase: PodPhase | undefined, isStatic: boolean, want: PodPhase | undefined];
  const phases: PhaseRow[] = [
    ['an API pod Pending ends Failed', 'Pending', false, 'Failed'],
    ['an API pod Running ends Failed', 'Running', false, 'Failed'],
    ['an API pod without a phase ends Failed', undefined, false, 'Failed'],
    ['an API pod Succeeded stays Succeeded', 'Succeeded', false, 'Succeeded'],
    ['an API pod Failed stays Failed', 'Failed', false, 'Failed'],
    ['a static pod Running keeps it (no terminal phase for static pods: kubelet TODO #116484)', 'Running', true, 'Running'],
    ['a static pod Pending keeps it', 'Pending', true, 'Pending'],
  ];
  it.each(phases)('%s', (_name, phase, isStatic, want) => {
    const pod = isStatic ? staticPod(basePod()) : basePod();
    const status: PodStatus = { containerStatuses: [apiTerminated('foo1', 137), apiTerminated('foo2', 137), apiTerminated('foo3', 137)] };
    if (phase) status.phase = phase;
    expect(terminatedPodStatus(pod, status).phase).toBe(want);
  });

  it('keeps everything else of the status as it is (reason, message, conditions, observedGeneration)', () => {
    const pod = basePod();
    const status: PodStatus = {
      observedGeneration: 3,
      phase: 'Failed',
      reason: 'DeadlineExceeded',
      message: 'Pod was active on the node longer than the specified deadline',
      conditions: [{ type: 'Ready', status: 'False', reason: 'PodFailed' }],
      containerStatuses: [apiTerminated('foo1', 137)],
    };
    const { containerStatuses: _c, ...rest } = terminatedPodStatus(pod, status);
    const { containerStatuses: _d, ...expected } = status;
    expect(rest).toEqual(expected);
  });
});
