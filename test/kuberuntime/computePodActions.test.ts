/**
 * computePodActions, table-driven like the kubelet's own test: a base pod and a base runtime status
 * (ready sandbox, every container running with the spec's hash), and per case a mutator and the
 * expected plan (pkg/kubelet/kuberuntime/kuberuntime_manager_test.go TestComputePodActions is the model).
 */
import { describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../src/api/types.ts';
import type { RuntimePodStatus } from '../../src/api/runtimeView.ts';
import {
  type PodActions,
  type ProbeResults,
  computePodActions,
  isEmptyPlan,
  isInitContainerFailed,
  noProbeResults,
  sandboxChange,
  shouldRestart,
} from '../../src/kuberuntime/computePodActions.ts';
import { NamespaceMode } from '../../src/runtime/types.ts';
import {
  SANDBOX_ID,
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

interface Plan {
  killPod: boolean;
  createSandbox: boolean;
  sandboxId: string;
  attempt: number;
  init: number[];
  start: number[];
  ephemeral: number[];
  /** `<container id>:<reason>`, sorted. */
  kill: string[];
}

function summarize(actions: PodActions): Plan {
  return {
    killPod: actions.killPod,
    createSandbox: actions.createSandbox,
    sandboxId: actions.sandboxId,
    attempt: actions.attempt,
    init: actions.initContainersToStart,
    start: actions.containersToStart,
    ephemeral: actions.ephemeralContainersToStart,
    kill: actions.containersToKill.map((k) => `${k.id}:${k.reason}`).sort(),
  };
}

const noAction: Plan = {
  killPod: false,
  createSandbox: false,
  sandboxId: SANDBOX_ID,
  attempt: 0,
  init: [],
  start: [],
  ephemeral: [],
  kill: [],
};

interface Case {
  name: string;
  /** Mutates the base pod (applied before the runtime status is built). */
  pod?: (pod: Pod) => void;
  /** Mutates the base runtime status. */
  runtime?: (status: RuntimePodStatus, pod: Pod) => void;
  probes?: ProbeResults;
  want: Partial<Plan>;
}

function run(base: () => Pod, runtimeOf: (pod: Pod) => RuntimePodStatus, cases: Case[]) {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const pod = base();
    c.pod?.(pod);
    const status = runtimeOf(pod);
    c.runtime?.(status, pod);
    const actions = computePodActions(pod, status, c.probes ?? noProbeResults);
    expect(summarize(actions)).toEqual({ ...noAction, ...c.want });
  });
}

const exitAll = (code: number) => (status: RuntimePodStatus, pod: Pod) => {
  for (const c of pod.spec.containers) setContainer(status, c.name, exited(c, code));
};
const setPolicy = (policy: 'Always' | 'OnFailure' | 'Never') => (pod: Pod) => {
  pod.spec.restartPolicy = policy;
};
const liveness = (id: string, result: 'Success' | 'Failure'): ProbeResults => ({ liveness: { [id]: result }, startup: {} });
const startup = (id: string, result: 'Success' | 'Failure'): ProbeResults => ({ liveness: {}, startup: { [id]: result } });

describe('computePodActions: sandbox and regular containers', () => {
  run(basePod, baseRuntime, [
    {
      name: 'no sandbox: create attempt 0 and start every container',
      runtime: (s) => {
        s.sandboxes = [];
        s.containers = [];
      },
      want: { killPod: true, createSandbox: true, sandboxId: '', attempt: 0, start: [0, 1, 2] },
    },
    {
      name: 'sandbox NOTREADY: kill the pod, recreate with attempt+1, start everything',
      runtime: (s) => {
        s.sandboxes = [sandbox({ state: 'SANDBOX_NOTREADY', attempt: 2 })];
      },
      want: { killPod: true, createSandbox: true, sandboxId: SANDBOX_ID, attempt: 3, start: [0, 1, 2] },
    },
    {
      name: 'two READY sandboxes: recreate from the newest one',
      runtime: (s) => {
        s.sandboxes = [sandbox({ id: 'sandbox-2', attempt: 1 }), sandbox()];
      },
      want: { killPod: true, createSandbox: true, sandboxId: 'sandbox-2', attempt: 2, start: [0, 1, 2] },
    },
    {
      name: 'pod-network sandbox without an IP: recreate',
      runtime: (s) => {
        s.sandboxes = [sandbox({ ip: '' })];
      },
      want: { killPod: true, createSandbox: true, sandboxId: SANDBOX_ID, attempt: 1, start: [0, 1, 2] },
    },
    {
      name: 'hostNetwork turned on: recreate with an empty sandbox id',
      pod: (p) => {
        p.spec.hostNetwork = true;
      },
      want: { killPod: true, createSandbox: true, sandboxId: '', attempt: 1, start: [0, 1, 2] },
    },
    {
      name: 'hostNetwork turned off: recreate with an empty sandbox id',
      runtime: (s) => {
        s.sandboxes = [sandbox({ networkMode: NamespaceMode.NODE, ip: '' })];
      },
      want: { killPod: true, createSandbox: true, sandboxId: '', attempt: 1, start: [0, 1, 2] },
    },
    {
      name: 'hostNetwork sandbox without a pod IP is fine',
      pod: (p) => {
        p.spec.hostNetwork = true;
      },
      runtime: (s) => {
        s.sandboxes = [sandbox({ networkMode: NamespaceMode.NODE, ip: '' })];
      },
      want: {},
    },
    {
      name: 'Never, dead sandbox, containers exist: kill only, no new sandbox',
      pod: setPolicy('Never'),
      runtime: (s, p) => {
        s.sandboxes = [sandbox({ state: 'SANDBOX_NOTREADY' })];
        exitAll(137)(s, p);
      },
      want: { killPod: true, createSandbox: false, attempt: 1 },
    },
    {
      name: 'Never, first sandbox: created and every container started',
      pod: setPolicy('Never'),
      runtime: (s) => {
        s.sandboxes = [];
        s.containers = [];
      },
      want: { killPod: true, createSandbox: true, sandboxId: '', attempt: 0, start: [0, 1, 2] },
    },
    {
      name: 'OnFailure, all exited 0, dead sandbox: kill only, no new sandbox',
      pod: setPolicy('OnFailure'),
      runtime: (s, p) => {
        s.sandboxes = [sandbox({ state: 'SANDBOX_NOTREADY' })];
        exitAll(0)(s, p);
      },
      want: { killPod: true, createSandbox: false, attempt: 1 },
    },
    {
      name: 'OnFailure, dead sandbox: only the failed container is started again',
      pod: setPolicy('OnFailure'),
      runtime: (s, p) => {
        s.sandboxes = [sandbox({ state: 'SANDBOX_NOTREADY' })];
        exitAll(0)(s, p);
        setContainer(s, 'foo2', exited(specContainer(p, 'foo2'), 1));
      },
      want: { killPod: true, createSandbox: true, attempt: 1, start: [1] },
    },
    {
      name: 'everything running and unchanged: empty plan',
      want: {},
    },
    {
      name: 'Always: exited container (exit 0) is restarted',
      runtime: (s, p) => setContainer(s, 'foo2', exited(specContainer(p, 'foo2'), 0)),
      want: { start: [1] },
    },
    {
      name: 'OnFailure: exited container with exit 1 is restarted',
      pod: setPolicy('OnFailure'),
      runtime: (s, p) => setContainer(s, 'foo2', exited(specContainer(p, 'foo2'), 1)),
      want: { start: [1] },
    },
    {
      name: 'OnFailure: container that exited 0 stays down',
      pod: setPolicy('OnFailure'),
      runtime: (s, p) => setContainer(s, 'foo2', exited(specContainer(p, 'foo2'), 0)),
      want: {},
    },
    {
      name: 'Never: failed container stays down',
      pod: setPolicy('Never'),
      runtime: (s, p) => setContainer(s, 'foo2', exited(specContainer(p, 'foo2'), 1)),
      want: {},
    },
    {
      name: 'container missing from the runtime is started',
      runtime: (s) => setContainer(s, 'foo3', undefined),
      want: { start: [2] },
    },
    {
      name: 'Created container is started (not killed)',
      runtime: (s, p) => setContainer(s, 'foo2', rc(specContainer(p, 'foo2'), { state: 'CONTAINER_CREATED', startedAt: 0 })),
      want: { start: [1] },
    },
    {
      name: 'Unknown container is killed and restarted, even under Never',
      pod: setPolicy('Never'),
      runtime: (s, p) => setContainer(s, 'foo2', rc(specContainer(p, 'foo2'), { state: 'CONTAINER_UNKNOWN' })),
      want: { start: [1], kill: ['foo2-id:Unknown'] },
    },
    {
      name: 'hash changed: kill and start, even under Never',
      pod: setPolicy('Never'),
      runtime: (s, p) => setContainer(s, 'foo2', rc(specContainer(p, 'foo2'), { hash: 'deadbeef' })),
      want: { start: [1], kill: ['foo2-id:SpecChanged'] },
    },
    {
      name: 'image changed in the spec: the hash no longer matches',
      pod: (p) => {
        p.spec.containers[0] = ctr('foo1', { image: 'busybox:2' });
      },
      runtime: (s) => setContainer(s, 'foo1', rc(ctr('foo1'))),
      want: { start: [0], kill: ['foo1-id:SpecChanged'] },
    },
    {
      name: 'liveness Failure: kill and start',
      probes: liveness('foo1-id', 'Failure'),
      want: { start: [0], kill: ['foo1-id:LivenessProbe'] },
    },
    {
      name: 'liveness Failure under Never: kill only',
      pod: setPolicy('Never'),
      probes: liveness('foo1-id', 'Failure'),
      want: { kill: ['foo1-id:LivenessProbe'] },
    },
    {
      name: 'liveness Success: kept',
      probes: liveness('foo1-id', 'Success'),
      want: {},
    },
    {
      name: 'startup Failure: kill and start',
      probes: startup('foo3-id', 'Failure'),
      want: { start: [2], kill: ['foo3-id:StartupProbe'] },
    },
    {
      name: 'startup Failure under OnFailure: kill and start',
      pod: setPolicy('OnFailure'),
      probes: startup('foo3-id', 'Failure'),
      want: { start: [2], kill: ['foo3-id:StartupProbe'] },
    },
    {
      name: 'deleting pod: exited container is not restarted',
      pod: (p) => {
        p.metadata.deletionTimestamp = '2026-01-01T00:01:00Z';
      },
      runtime: (s, p) => setContainer(s, 'foo2', exited(specContainer(p, 'foo2'), 1)),
      want: {},
    },
    {
      name: 'deleting pod with every container stopped: kill the pod',
      pod: (p) => {
        p.metadata.deletionTimestamp = '2026-01-01T00:01:00Z';
      },
      runtime: exitAll(1),
      want: { killPod: true },
    },
    {
      name: 'Never, all containers finished: kill the pod',
      pod: setPolicy('Never'),
      runtime: exitAll(0),
      want: { killPod: true },
    },
    {
      name: 'OnFailure, all containers succeeded: kill the pod',
      pod: setPolicy('OnFailure'),
      runtime: exitAll(0),
      want: { killPod: true },
    },
    {
      name: 'Never, liveness kills the last running container: kill the pod too',
      pod: (p) => {
        p.spec.restartPolicy = 'Never';
        p.spec.containers = [ctr('foo1')];
      },
      probes: liveness('foo1-id', 'Failure'),
      want: { killPod: true, kill: ['foo1-id:LivenessProbe'] },
    },
  ]);
});

const initPod = () =>
  basePod({ initContainers: [ctr('init1'), ctr('init2')] });
const noContainersYet = (pod: Pod): RuntimePodStatus => ({ ...baseRuntime(pod), containers: [] });
const init = (name: string, extra: Parameters<typeof rc>[1] = {}) => (s: RuntimePodStatus, p: Pod) =>
  setContainer(s, name, rc(specContainer(p, name), extra));
const initExited = (name: string, code: number, extra: Parameters<typeof rc>[1] = {}) => (s: RuntimePodStatus, p: Pod) =>
  setContainer(s, name, exited(specContainer(p, name), code, extra));
const all = (...steps: ((s: RuntimePodStatus, p: Pod) => void)[]) => (s: RuntimePodStatus, p: Pod) => {
  for (const step of steps) step(s, p);
};

describe('computePodActions: init containers', () => {
  run(initPod, noContainersYet, [
    {
      name: 'nothing ran yet: start the first init container',
      want: { init: [0] },
    },
    {
      name: 'no sandbox: create it and start init container 0 only',
      runtime: (s) => {
        s.sandboxes = [];
      },
      want: { killPod: true, createSandbox: true, sandboxId: '', attempt: 0, init: [0] },
    },
    {
      name: 'dead sandbox after regular containers ran: init containers run again',
      runtime: (s, p) => {
        s.sandboxes = [sandbox({ state: 'SANDBOX_NOTREADY' })];
        exitAll(1)(s, p);
      },
      want: { killPod: true, createSandbox: true, attempt: 1, init: [0] },
    },
    {
      name: 'first init container running: wait',
      runtime: init('init1'),
      want: {},
    },
    {
      name: 'first init container exited 0: start the next one',
      runtime: initExited('init1', 0),
      want: { init: [1] },
    },
    {
      name: 'last init container exited 0: start the regular containers',
      runtime: all(initExited('init1', 0), initExited('init2', 0)),
      want: { start: [0, 1, 2] },
    },
    {
      name: 'last init container exited 0 and the first one was removed: still initialized',
      runtime: initExited('init2', 0),
      want: { start: [0, 1, 2] },
    },
    {
      name: 'second init container running, first one removed: wait',
      runtime: init('init2'),
      want: {},
    },
    {
      name: 'failed init container under Never: kill the pod',
      pod: setPolicy('Never'),
      runtime: initExited('init1', 1),
      want: { killPod: true },
    },
    {
      name: 'OOMKilled init container (exit 0) counts as failed under Never',
      pod: setPolicy('Never'),
      runtime: initExited('init1', 0, { reason: 'OOMKilled' }),
      want: { killPod: true },
    },
    {
      name: 'failed init container under Always: restart it',
      runtime: initExited('init1', 1),
      want: { init: [0] },
    },
    {
      name: 'failed second init container under OnFailure: restart it',
      pod: setPolicy('OnFailure'),
      runtime: all(initExited('init1', 0), initExited('init2', 2)),
      want: { init: [1] },
    },
    {
      name: 'init container in Unknown state: kill and restart it',
      runtime: init('init1', { state: 'CONTAINER_UNKNOWN' }),
      want: { init: [0], kill: ['init1-id:Unknown'] },
    },
    {
      name: 'init container in Unknown state under Never: kill the pod',
      pod: setPolicy('Never'),
      runtime: init('init1', { state: 'CONTAINER_UNKNOWN' }),
      want: { killPod: true },
    },
    {
      name: 'init container left in Created: start it',
      runtime: init('init1', { state: 'CONTAINER_CREATED', startedAt: 0 }),
      want: { init: [0] },
    },
    {
      name: 'previously initialized (a regular container runs): failed init containers are ignored',
      pod: setPolicy('Never'),
      runtime: all(initExited('init2', 1), init('foo1')),
      want: { start: [1, 2] },
    },
    {
      name: 'previously initialized, init containers removed: nothing re-runs',
      runtime: (s, p) => {
        s.containers = baseRuntime(p).containers;
      },
      want: {},
    },
  ]);
});

/**
 * An init container's own restartPolicy and restartPolicyRules over the pod's (ContainerRestartRules;
 * kuberuntime_container.go computeInitContainerActions asks ShouldContainerBeRestarted for an
 * exited one, the container's policy alone for one in an unknown state).
 */
const ownPolicy = (podPolicy: 'Always' | 'OnFailure' | 'Never', own: Partial<Container>) => (pod: Pod) => {
  pod.spec.restartPolicy = podPolicy;
  Object.assign(pod.spec.initContainers?.[0] as Container, own);
};
const retryInitOn42: Partial<Container> = { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }] };

describe('computePodActions: an init container\'s own restart policy and rules', () => {
  run(initPod, noContainersYet, [
    {
      name: 'own OnFailure under a Never pod, failed: run it again',
      pod: ownPolicy('Never', { restartPolicy: 'OnFailure' }),
      runtime: initExited('init1', 1),
      want: { init: [0] },
    },
    {
      name: 'own OnFailure under a Never pod, succeeded: the next one',
      pod: ownPolicy('Never', { restartPolicy: 'OnFailure' }),
      runtime: initExited('init1', 0),
      want: { init: [1] },
    },
    {
      name: 'own Never under an Always pod, failed: kill the pod',
      pod: ownPolicy('Always', { restartPolicy: 'Never' }),
      runtime: initExited('init1', 1),
      want: { killPod: true },
    },
    {
      name: 'a rule matching the exit code under a Never pod: run it again',
      pod: ownPolicy('Never', retryInitOn42),
      runtime: initExited('init1', 42),
      want: { init: [0] },
    },
    {
      name: 'a rule not matching the exit code: its own Never kills the pod',
      pod: ownPolicy('Never', retryInitOn42),
      runtime: initExited('init1', 3),
      want: { killPod: true },
    },
    {
      name: 'a rule not matching under an Always pod: still its own Never',
      pod: ownPolicy('Always', retryInitOn42),
      runtime: initExited('init1', 1),
      want: { killPod: true },
    },
    {
      name: 'rules are not read for a success: the next one',
      pod: ownPolicy('Never', { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [0] } }] }),
      runtime: initExited('init1', 0),
      want: { init: [1] },
    },
    {
      name: 'unknown state, own OnFailure under a Never pod: kill and restart it (no exit code for the rules)',
      pod: ownPolicy('Never', { restartPolicy: 'OnFailure' }),
      runtime: init('init1', { state: 'CONTAINER_UNKNOWN' }),
      want: { init: [0], kill: ['init1-id:Unknown'] },
    },
    {
      name: 'unknown state, own Never with a rule under an Always pod: kill the pod',
      pod: ownPolicy('Always', { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'NotIn', values: [] } }] }),
      runtime: init('init1', { state: 'CONTAINER_UNKNOWN' }),
      want: { killPod: true },
    },
    {
      name: 'a failed init container of a deleting pod is not run again: kill the pod',
      pod: (p) => {
        p.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
      },
      runtime: initExited('init1', 1),
      want: { killPod: true },
    },
  ]);
});

const sidecarPod = () =>
  basePod({
    initContainers: [sidecar('sc1'), ctr('init2')],
    containers: [ctr('foo1')],
  });

describe('computePodActions: sidecars', () => {
  run(sidecarPod, noContainersYet, [
    {
      name: 'nothing ran yet: start the sidecar first',
      want: { init: [0] },
    },
    {
      name: 'sidecar running without a startup probe: start the next init container',
      runtime: init('sc1'),
      want: { init: [1] },
    },
    {
      name: 'sidecar with a startup probe that has no result yet: wait',
      pod: (p) => {
        p.spec.initContainers![0] = sidecar('sc1', { startupProbe: { exec: { command: ['true'] } } });
      },
      runtime: init('sc1'),
      want: {},
    },
    {
      name: 'sidecar whose startup probe succeeded: start the next init container',
      pod: (p) => {
        p.spec.initContainers![0] = sidecar('sc1', { startupProbe: { exec: { command: ['true'] } } });
      },
      runtime: init('sc1'),
      probes: startup('sc1-id', 'Success'),
      want: { init: [1] },
    },
    {
      name: 'sidecar whose startup probe failed: kill and restart it',
      pod: (p) => {
        p.spec.initContainers![0] = sidecar('sc1', { startupProbe: { exec: { command: ['true'] } } });
      },
      runtime: init('sc1'),
      probes: startup('sc1-id', 'Failure'),
      want: { init: [0], kill: ['sc1-id:StartupProbe'] },
    },
    {
      name: 'sidecar running and the next init container running: wait',
      runtime: all(init('sc1'), init('init2')),
      want: {},
    },
    {
      name: 'sidecar running, last init container done: regular containers start',
      runtime: all(init('sc1'), initExited('init2', 0)),
      want: { start: [0] },
    },
    {
      name: 'sidecar exited: restarted even under Never',
      pod: setPolicy('Never'),
      runtime: all(initExited('sc1', 0), initExited('init2', 0), init('foo1')),
      want: { init: [0] },
    },
    {
      name: 'sidecar in Unknown state under Never: killed and restarted, pod kept',
      pod: setPolicy('Never'),
      runtime: all(init('sc1', { state: 'CONTAINER_UNKNOWN' }), initExited('init2', 0), init('foo1')),
      want: { init: [0], kill: ['sc1-id:Unknown'] },
    },
    {
      name: 'sidecar definition changed: killed and restarted',
      runtime: all(init('sc1', { hash: 'deadbeef' }), initExited('init2', 0), init('foo1')),
      want: { init: [0], kill: ['sc1-id:SpecChanged'] },
    },
    {
      name: 'sidecar liveness Failure: killed and restarted',
      runtime: all(init('sc1'), initExited('init2', 0), init('foo1')),
      probes: liveness('sc1-id', 'Failure'),
      want: { init: [0], kill: ['sc1-id:LivenessProbe'] },
    },
    {
      name: 'sidecar removed after initialization: started again',
      runtime: all(initExited('init2', 0), init('foo1')),
      want: { init: [0] },
    },
    {
      name: 'sidecar does not keep the pod alive: regular containers done ⇒ kill, no sidecar restart',
      pod: setPolicy('Never'),
      runtime: all(initExited('sc1', 1), initExited('init2', 0), initExited('foo1', 0)),
      want: { killPod: true, init: [] },
    },
    {
      name: 'running sidecar with every regular container done under OnFailure: kill the pod',
      pod: setPolicy('OnFailure'),
      runtime: all(init('sc1'), initExited('init2', 0), initExited('foo1', 0)),
      want: { killPod: true },
    },
    {
      name: 'previously initialized: the non-sidecar init container is skipped even if it failed',
      pod: setPolicy('Never'),
      runtime: all(init('sc1'), initExited('init2', 1), init('foo1')),
      want: {},
    },
  ]);
});

describe('sandboxChange', () => {
  it('uses the newest sandbox attempt, not the number of sandboxes', () => {
    const pod = basePod();
    const status = baseRuntime(pod);
    status.sandboxes = [sandbox({ id: 'new', attempt: 4, state: 'SANDBOX_NOTREADY' }), sandbox({ id: 'old', attempt: 1, state: 'SANDBOX_NOTREADY' })];
    expect(sandboxChange(pod, status)).toEqual({ create: true, attempt: 5, sandboxId: 'new' });
  });

  it('keeps a healthy sandbox at its attempt', () => {
    const pod = basePod();
    const status = baseRuntime(pod);
    status.sandboxes = [sandbox({ attempt: 3 })];
    expect(sandboxChange(pod, status)).toEqual({ create: false, attempt: 3, sandboxId: SANDBOX_ID });
  });
});

describe('shouldRestart', () => {
  const pod = basePod();
  const c = specContainer(pod, 'foo1');
  it.each([
    ['absent', 'Always', undefined, true],
    ['running', 'Always', rc(c), false],
    ['created under Never', 'Never', rc(c, { state: 'CONTAINER_CREATED' }), true],
    ['unknown under Never', 'Never', rc(c, { state: 'CONTAINER_UNKNOWN' }), true],
    ['exited 0 under Always', 'Always', exited(c, 0), true],
    ['exited 1 under OnFailure', 'OnFailure', exited(c, 1), true],
    ['exited 0 under OnFailure', 'OnFailure', exited(c, 0), false],
    ['exited 1 under Never', 'Never', exited(c, 1), false],
  ] as const)('%s (%s) ⇒ %s', (_name, policy, status, want) => {
    expect(shouldRestart({ ...pod, spec: { ...pod.spec, restartPolicy: policy } }, c, status)).toBe(want);
  });

  it('never restarts anything of a deleting pod', () => {
    const deleting = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } };
    expect(shouldRestart(deleting, c, undefined)).toBe(false);
    expect(shouldRestart(deleting, c, rc(c, { state: 'CONTAINER_UNKNOWN' }))).toBe(false);
  });

  // ContainerRestartRules (pkg/api/v1/pod/util.go ContainerShouldRestart): the first matching
  // rule acts, else the container's own policy, else the pod's.
  const retryOn42: Partial<Container> = { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }] };
  it.each<[string, 'Always' | 'OnFailure' | 'Never', Partial<Container>, number, boolean]>([
    ['a rule matching its code (In)', 'Never', retryOn42, 42, true],
    ['a rule not matching: its own Never', 'Always', retryOn42, 1, false],
    ['NotIn: any code but those listed', 'Never', { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'NotIn', values: [0, 3] } }] }, 7, true],
    ['NotIn: a listed code falls to the policy', 'Never', { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'NotIn', values: [0, 3] } }] }, 3, false],
    ['its own OnFailure over the pod\'s Never, on a failure', 'Never', { restartPolicy: 'OnFailure' }, 1, true],
    ['its own OnFailure, on success', 'Always', { restartPolicy: 'OnFailure' }, 0, false],
    ['its own Always over the pod\'s Never', 'Never', { restartPolicy: 'Always' }, 0, true],
    ['its own Never over the pod\'s Always', 'Always', { restartPolicy: 'Never' }, 1, false],
    ['rules without a container policy are not read: the pod\'s policy', 'Never', { restartPolicyRules: retryOn42.restartPolicyRules! }, 42, false],
    ['the first matching rule wins', 'Never', { restartPolicy: 'Always', restartPolicyRules: [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [5] } }, { action: 'Restart', exitCodes: { operator: 'In', values: [5] } }] }, 5, true],
  ])('%s (pod %s) ⇒ %s', (_name, podPolicy, own, code, want) => {
    const container = { ...c, ...own };
    const p = { ...pod, spec: { ...pod.spec, restartPolicy: podPolicy, containers: [container] } };
    expect(shouldRestart(p, container, exited(container, code))).toBe(want);
  });
});

describe('isInitContainerFailed', () => {
  const c = ctr('init1');
  it.each([
    ['exit 0', exited(c, 0), false],
    ['exit 1', exited(c, 1), true],
    ['OOMKilled with exit 0', exited(c, 0, { reason: 'OOMKilled' }), true],
    ['unknown', rc(c, { state: 'CONTAINER_UNKNOWN' }), true],
    ['running', rc(c), false],
  ] as const)('%s ⇒ %s', (_name, status, want) => {
    expect(isInitContainerFailed(status)).toBe(want);
  });
});

/** The base pod with two ephemeral containers, `debug1` (targeting foo1) and `debug2`, none of them run yet. */
const debugPod = () => basePod({ ephemeralContainers: [{ ...ctr('debug1'), targetContainerName: 'foo1' }, ctr('debug2')] });
const ephemeral = (name: string, extra: Parameters<typeof rc>[1] = {}) => (s: RuntimePodStatus, p: Pod) =>
  setContainer(s, name, rc(ephemeralSpec(p, name), extra));
const ephemeralExited = (name: string, code: number) => (s: RuntimePodStatus, p: Pod) => setContainer(s, name, exited(ephemeralSpec(p, name), code));
function ephemeralSpec(pod: Pod, name: string): Container {
  const found = pod.spec.ephemeralContainers?.find((c) => c.name === name);
  if (!found) throw new Error(`no ephemeral container ${name}`);
  return found;
}

describe('computePodActions: ephemeral containers (kubectl debug)', () => {
  run(debugPod, baseRuntime, [
    {
      name: 'added to a running pod: each one the runtime has no instance of starts, in spec order',
      want: { ephemeral: [0, 1] },
    },
    {
      name: 'one running, one not yet run: only the second starts',
      runtime: ephemeral('debug1'),
      want: { ephemeral: [1] },
    },
    {
      name: 'never restarted: exited 0 or failed, under restartPolicy Always',
      runtime: all(ephemeralExited('debug1', 0), ephemeralExited('debug2', 1)),
      want: {},
    },
    {
      name: 'never restarted: an instance left Created or Unknown is not started again either',
      runtime: all(ephemeral('debug1', { state: 'CONTAINER_CREATED', startedAt: 0 }), ephemeral('debug2', { state: 'CONTAINER_UNKNOWN' })),
      want: {},
    },
    {
      name: 'started beside the regular containers a sync restarts',
      runtime: all(ephemeral('debug2'), (s, p) => setContainer(s, 'foo2', exited(specContainer(p, 'foo2'), 1))),
      want: { start: [1], ephemeral: [0] },
    },
    {
      name: 'started while the pod is still initializing',
      pod: (p) => {
        p.spec.initContainers = [ctr('init1')];
      },
      runtime: (s, p) => {
        s.containers = [rc(specContainer(p, 'init1'))];
      },
      want: { ephemeral: [0, 1] },
    },
    {
      name: 'started while a failed init container is restarted',
      pod: (p) => {
        p.spec.initContainers = [ctr('init1')];
      },
      runtime: (s, p) => {
        s.containers = [exited(specContainer(p, 'init1'), 1)];
      },
      want: { init: [0], ephemeral: [0, 1] },
    },
    {
      name: 'not started in a new sandbox: the sandbox is made first (rule A returns before them)',
      runtime: (s) => {
        s.sandboxes = [sandbox({ state: 'SANDBOX_NOTREADY' })];
      },
      want: { killPod: true, createSandbox: true, attempt: 1, start: [0, 1, 2] },
    },
    {
      name: 'a running one keeps no pod alive: Never, every regular container done ⇒ kill the pod',
      pod: setPolicy('Never'),
      runtime: all(exitAll(0), ephemeral('debug1'), ephemeral('debug2')),
      want: { killPod: true },
    },
    {
      name: 'a pod being killed still lists the ones not run (the executor starts nothing in a sandbox it stops)',
      pod: setPolicy('Never'),
      runtime: exitAll(0),
      want: { killPod: true, ephemeral: [0, 1] },
    },
    {
      name: 'a deleted pod still lists them, as the kubelet does (the pod actor no longer syncs it)',
      pod: (p) => {
        p.metadata.deletionTimestamp = '2026-01-01T00:01:00Z';
      },
      want: { ephemeral: [0, 1] },
    },
  ]);
});

describe('isEmptyPlan', () => {
  it('is true only for a plan that does nothing', () => {
    const pod = basePod();
    const status = baseRuntime(pod);
    expect(isEmptyPlan(computePodActions(pod, status))).toBe(true);
    setContainer(status, 'foo1', exited(specContainer(pod, 'foo1'), 1));
    expect(isEmptyPlan(computePodActions(pod, status))).toBe(false);
  });

  it('is false for a plan that only starts an ephemeral container', () => {
    const pod = basePod({ ephemeralContainers: [ctr('debug')] });
    expect(isEmptyPlan(computePodActions(pod, baseRuntime(pod)))).toBe(false);
  });
});
