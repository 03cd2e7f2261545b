/**
 * `status.ephemeralContainerStatuses` (pkg/kubelet/kubelet_pods.go generateAPIPodStatus, which runs
 * convertToAPIContainerStatuses over the ephemeral containers' specs): built like the regular
 * containers' statuses, sorted by name, never ready and without `started` (the prober reports on
 * regular and init containers only), and outside the phase and the conditions.
 */
import { describe, expect, it } from 'vitest';
import type { Container, ContainerStatus, Pod } from '../../src/api/types.ts';
import type { RuntimePodStatus } from '../../src/api/runtimeView.ts';
import { type StatusInput, generatePodStatus } from '../../src/status/generate.ts';
import { T0, basePod, baseRuntime, ctr, exited, rc, setContainer } from '../support/podFixtures.ts';

const NOW = T0 + 10_000;

function input(pod: Pod, runtime: RuntimePodStatus, extra: Partial<StatusInput> = {}): StatusInput {
  return { pod, runtime, reasons: {}, podIsTerminal: false, nowMs: NOW, runtimeName: 'containerd', ...extra };
}

const debug = (name: string, target?: string): Container => ({ ...ctr(name), ...(target ? { targetContainerName: target } : {}) });
const debugged = (spec: Partial<Pod['spec']> = {}) => basePod({ ephemeralContainers: [debug('zeta', 'foo1'), debug('alpha')], ...spec });
const only = (status: ContainerStatus[] | undefined, name: string): ContainerStatus => {
  const found = status?.find((s) => s.name === name);
  if (!found) throw new Error(`no status for ${name}`);
  return found;
};

describe('ephemeral container statuses', () => {
  it('are absent from a pod that has none', () => {
    const pod = basePod();
    expect(generatePodStatus(input(pod, baseRuntime(pod)))).not.toHaveProperty('ephemeralContainerStatuses');
  });

  it('wait as ContainerCreating until the runtime has them, sorted by name, never ready, without started', () => {
    const pod = debugged();
    const status = generatePodStatus(input(pod, baseRuntime(pod)));
    expect(status.ephemeralContainerStatuses?.map((s) => s.name)).toEqual(['alpha', 'zeta']);
    for (const s of status.ephemeralContainerStatuses ?? []) {
      expect(s).toEqual({ name: s.name, state: { waiting: { reason: 'ContainerCreating' } }, lastState: {}, ready: false, restartCount: 0, image: 'busybox:1', imageID: '' });
    }
    // A pod with init containers says PodInitializing, as for its regular containers.
    const initializing = debugged({ initContainers: [ctr('init')] });
    expect(only(generatePodStatus(input(initializing, baseRuntime(initializing))).ephemeralContainerStatuses, 'alpha').state).toEqual({ waiting: { reason: 'PodInitializing' } });
  });

  it('run and end as the runtime reports, the pod staying Running and Ready on its regular containers alone', () => {
    const pod = debugged();
    const runtime = baseRuntime(pod);
    setContainer(runtime, 'zeta', rc(debug('zeta')));
    setContainer(runtime, 'alpha', exited(debug('alpha'), 3));
    const status = generatePodStatus(input(pod, runtime));
    const zeta = only(status.ephemeralContainerStatuses, 'zeta');
    expect(zeta).toMatchObject({ state: { running: {} }, ready: false, restartCount: 0, containerID: 'containerd://zeta-id' });
    expect(zeta).not.toHaveProperty('started');
    expect(only(status.ephemeralContainerStatuses, 'alpha').state.terminated).toMatchObject({ exitCode: 3, reason: 'Error', containerID: 'containerd://alpha-id' });
    expect(status.phase).toBe('Running');
    expect(status.conditions?.find((c) => c.type === 'ContainersReady')?.status).toBe('True');
  });

  it("show why one could not start (its target's missing instance, a failed pull)", () => {
    const pod = debugged();
    const reasons = {
      zeta: { reason: 'CreateContainerConfigError', message: 'unable to find target container foo1' },
      alpha: { reason: 'ErrImagePull', message: 'not found' },
    };
    const status = generatePodStatus(input(pod, baseRuntime(pod), { reasons }));
    expect(only(status.ephemeralContainerStatuses, 'zeta').state).toEqual({ waiting: reasons.zeta });
    expect(only(status.ephemeralContainerStatuses, 'alpha').state).toEqual({ waiting: reasons.alpha });
  });

  it('keep no pod from completing: Never, regular containers done, a debugger still running ⇒ Succeeded', () => {
    const pod = debugged({ restartPolicy: 'Never' });
    const runtime = baseRuntime(pod);
    for (const c of pod.spec.containers) setContainer(runtime, c.name, exited(c, 0));
    setContainer(runtime, 'zeta', rc(debug('zeta')));
    const status = generatePodStatus(input(pod, runtime, { podIsTerminal: true }));
    expect(status.phase).toBe('Succeeded');
    expect(only(status.ephemeralContainerStatuses, 'zeta').state.running).toBeDefined();
    // One that never ran is left waiting in a terminal pod (status_manager.go TerminatePod leaves them be).
    expect(only(status.ephemeralContainerStatuses, 'alpha').state).toEqual({ waiting: { reason: 'ContainerCreating' } });
  });

  it("share the pod's 12 KiB of termination messages", () => {
    const pod = debugged({ containers: [ctr('foo1')] });
    const runtime = baseRuntime(pod);
    setContainer(runtime, 'alpha', exited(debug('alpha'), 1, { message: 'x'.repeat(5000) }));
    // Three containers in all: 4 KiB each.
    expect(only(generatePodStatus(input(pod, runtime)).ephemeralContainerStatuses, 'alpha').state.terminated?.message).toHaveLength(4096);
  });
});
