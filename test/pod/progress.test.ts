/** podProgress: where a syncing pod stands, derived from its spec and the runtime view. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import type { RuntimePodStatus } from '../../src/api/runtimeView.ts';
import { type PodProgress, podProgress } from '../../src/pod/progress.ts';
import { basePod, baseRuntime, ctr, exited, rc, sandbox, sidecar } from '../support/podFixtures.ts';

const initPod = () => basePod({ initContainers: [ctr('init1'), ctr('init2')], containers: [ctr('foo1')] });
const sidecarPod = () => basePod({ initContainers: [sidecar('sc1'), ctr('init2')], containers: [ctr('foo1')] });
const withContainers = (pod: Pod, ...containers: RuntimePodStatus['containers']): RuntimePodStatus => ({
  ...baseRuntime(pod),
  containers,
});

describe('podProgress', () => {
  type Row = [name: string, pod: () => Pod, runtime: (pod: Pod) => RuntimePodStatus, want: PodProgress];
  const rows: Row[] = [
    ['no sandbox ⇒ sandbox', basePod, (p) => ({ ...baseRuntime(p), sandboxes: [], containers: [] }), { stage: 'sandbox' }],
    ['dead sandbox ⇒ sandbox', basePod, (p) => ({ ...baseRuntime(p), sandboxes: [sandbox({ state: 'SANDBOX_NOTREADY' })] }), { stage: 'sandbox' }],
    ['sandbox ready, no init containers ⇒ running', basePod, (p) => withContainers(p), { stage: 'running' }],
    ['regular containers running ⇒ running', basePod, baseRuntime, { stage: 'running' }],
    ['nothing started ⇒ init 0 starting', initPod, (p) => withContainers(p), { stage: 'initializing', index: 0, name: 'init1', step: 'starting' }],
    ['init 0 created but not started ⇒ starting', initPod, (p) => withContainers(p, rc(ctr('init1'), { state: 'CONTAINER_CREATED' })), { stage: 'initializing', index: 0, name: 'init1', step: 'starting' }],
    ['init 0 running ⇒ running step', initPod, (p) => withContainers(p, rc(ctr('init1'))), { stage: 'initializing', index: 0, name: 'init1', step: 'running' }],
    ['init 0 failed ⇒ failed step', initPod, (p) => withContainers(p, exited(ctr('init1'), 1)), { stage: 'initializing', index: 0, name: 'init1', step: 'failed' }],
    ['init 0 unknown ⇒ failed step', initPod, (p) => withContainers(p, rc(ctr('init1'), { state: 'CONTAINER_UNKNOWN' })), { stage: 'initializing', index: 0, name: 'init1', step: 'failed' }],
    ['init 0 done ⇒ init 1 starting', initPod, (p) => withContainers(p, exited(ctr('init1'), 0)), { stage: 'initializing', index: 1, name: 'init2', step: 'starting' }],
    ['init 1 running ⇒ index 1 running', initPod, (p) => withContainers(p, rc(ctr('init2')), exited(ctr('init1'), 0)), { stage: 'initializing', index: 1, name: 'init2', step: 'running' }],
    ['every init container done ⇒ running', initPod, (p) => withContainers(p, exited(ctr('init2'), 0), exited(ctr('init1'), 0)), { stage: 'running' }],
    ['sidecar running ⇒ next init container', sidecarPod, (p) => withContainers(p, rc(sidecar('sc1'))), { stage: 'initializing', index: 1, name: 'init2', step: 'starting' }],
    ['sidecar exited ⇒ failed at the sidecar', sidecarPod, (p) => withContainers(p, exited(sidecar('sc1'), 0)), { stage: 'initializing', index: 0, name: 'sc1', step: 'failed' }],
    ['sidecar running, last init done ⇒ running', sidecarPod, (p) => withContainers(p, exited(ctr('init2'), 0), rc(sidecar('sc1'))), { stage: 'running' }],
    ['a regular container in the current sandbox ⇒ running, whatever the inits say', initPod, (p) => withContainers(p, rc(ctr('foo1'))), { stage: 'running' }],
    [
      'a regular container only in an older sandbox does not count',
      initPod,
      (p) => ({
        ...baseRuntime(p),
        sandboxes: [sandbox({ id: 'sandbox-2', attempt: 1 }), sandbox({ state: 'SANDBOX_NOTREADY' })],
        containers: [exited(ctr('foo1'), 0)],
      }),
      { stage: 'initializing', index: 0, name: 'init1', step: 'starting' },
    ],
  ];
  it.each(rows)('%s', (_name, pod, runtime, want) => {
    const p = pod();
    expect(podProgress(p, runtime(p))).toEqual(want);
  });
});
