/**
 * The pod workers' stages (podStages.ts) and the one list of active pods read from them
 * (activePods.ts: the kubelet's filterOutInactivePods, with the allocated resources).
 */
import { describe, expect, it } from 'vitest';
import type { Pod, PodStatus } from '../../src/api/types.ts';
import { activePods } from '../../src/podworkers/activePods.ts';
import { PodStages } from '../../src/podworkers/podStages.ts';
import { makePod } from '../support/pods.ts';

describe('PodStages', () => {
  it('answers the kubelet\'s questions at each stage of a worker, and for a pod without one', () => {
    const stages = new PodStages();
    const pod = makePod('web');
    const ask = () => ({
      stage: stages.stage('uid-web'),
      terminationRequested: stages.isTerminationRequested('uid-web'),
      couldHaveRunning: stages.couldHaveRunningContainers('uid-web'),
      finished: stages.isFinished('uid-web'),
    });
    expect(ask()).toEqual({ stage: 'none', terminationRequested: false, couldHaveRunning: false, finished: true });
    stages.started(pod);
    expect(ask()).toEqual({ stage: 'syncing', terminationRequested: false, couldHaveRunning: true, finished: false });
    stages.terminating('uid-web');
    expect(ask()).toEqual({ stage: 'terminating', terminationRequested: true, couldHaveRunning: true, finished: false });
    stages.terminated('uid-web');
    expect(ask()).toEqual({ stage: 'terminated', terminationRequested: true, couldHaveRunning: false, finished: false });
    // A late kill does not bring a terminated worker back to terminating.
    stages.terminating('uid-web');
    expect(stages.stage('uid-web')).toBe('terminated');
    stages.finished('uid-web', true);
    expect(ask()).toEqual({ stage: 'terminated', terminationRequested: true, couldHaveRunning: false, finished: true });
    expect([...stages.entries()][0]![1]).toMatchObject({ restartRequested: true });
    stages.released('uid-web');
    expect(ask()).toEqual({ stage: 'none', terminationRequested: false, couldHaveRunning: false, finished: true });
  });

  it('keeps the pod its worker last received', () => {
    const stages = new PodStages();
    stages.started(makePod('web'));
    const updated = { ...makePod('web'), metadata: { ...makePod('web').metadata, labels: { v: '2' } } };
    stages.received(updated);
    expect(stages.pod('uid-web')).toBe(updated);
  });
});

describe('activePods', () => {
  const phase = (p: PodStatus['phase']): PodStatus => ({ phase: p });
  /** Each case: the worker's stage, the pod's phase in its source and in the agent's status; active or not. */
  const cases: { name: string; stage: 'syncing' | 'terminating' | 'terminated'; source?: PodStatus['phase']; agent?: PodStatus['phase']; active: boolean }[] = [
    { name: 'running', stage: 'syncing', agent: 'Running', active: true },
    { name: 'being stopped', stage: 'terminating', agent: 'Running', active: true },
    { name: 'terminal, its containers being stopped', stage: 'terminating', agent: 'Failed', active: true },
    { name: 'terminal in the agent, not stopping', stage: 'syncing', agent: 'Succeeded', active: false },
    { name: 'terminal in its source', stage: 'syncing', source: 'Failed', active: false },
    { name: 'terminated', stage: 'terminated', agent: 'Running', active: false },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.active ? 'active' : 'not active'}`, () => {
      const stages = new PodStages();
      const pod: Pod = { ...makePod('p'), ...(c.source ? { status: phase(c.source) } : {}) };
      stages.started(pod);
      if (c.stage !== 'syncing') stages.terminating('uid-p');
      if (c.stage === 'terminated') stages.terminated('uid-p');
      const statuses = new Map(c.agent ? [['uid-p', phase(c.agent)]] : []);
      const active = activePods({ stages, desired: () => pod, status: (uid) => statuses.get(uid), allocated: (p) => p });
      expect(active.length === 1).toBe(c.active);
    });
  }

  it('counts a pod that left config with the spec its worker runs, as the node allocated it, and no pod without a worker', () => {
    const stages = new PodStages();
    const gone = makePod('gone');
    stages.started(gone);
    const allocated = (pod: Pod) => ({ ...pod, metadata: { ...pod.metadata, annotations: { allocated: 'yes' } } });
    const active = activePods({ stages, desired: () => undefined, status: () => undefined, allocated });
    expect(active.map((p) => [p.metadata.name, p.metadata.annotations])).toEqual([['gone', { allocated: 'yes' }]]);
  });
});
