/**
 * `createTestModel` on the invoke-free lifecycle model (`lifecycleModel.ts`), driving the REAL pod
 * actor on the in-process simulated runtime with a SimulatedClock: each path is a fresh pod; each model event is
 * performed on the runtime / sent to the actor, and each model state is checked on the actor's
 * snapshot and the runtime's containers. No sleeps: every step waits on the actor (`waitFor`) or on
 * a held runtime call.
 *
 * Paths: the model's shortest paths (one per (state, incoming transition), prefixes deduplicated),
 * and its simple paths. The model has no cycle, so its simple paths are all of its paths; the
 * bound is the model itself (asserted below to stay under 40 paths).
 */
import { describe, expect, it } from 'vitest';
import { type AnyTransitionDefinition, getStateNodes } from 'xstate';
import { type TestParam, type TestPath, createTestModel, getStateNodes as allStateNodes } from 'xstate/graph';
import {
  type LifecycleEvent,
  type LifecycleSnapshot,
  LifecycleSut,
  lifecycleModel,
  shorterGrace,
  specGrace,
} from './lifecycleModel.ts';

const model = createTestModel(lifecycleModel);
const shortest = model.getShortestPaths();
const simple = model.getSimplePaths();

type Path = TestPath<LifecycleSnapshot, LifecycleEvent>;
type StateTests = Record<string, (sut: LifecycleSut) => Promise<void>>;

/** What must hold of the real pod in each model state (every leaf state of the model has one). */
const stateTests: StateTests = {
  async absent(sut) {
    expect(sut.hasActor).toBe(false);
    expect(await sut.containers()).toEqual([]);
  },
  async initializing(sut) {
    const s = sut.actor.getSnapshot();
    expect(s.matches({ syncing: { worker: 'idle', progress: { initializing: 'running' } } })).toBe(true);
    expect(s.context.progress).toEqual({ stage: 'initializing', index: 0, name: 'init', step: 'running' });
    expect(await sut.running()).toEqual(['init']);
    expect((await sut.containers()).map((c) => c.metadata.name)).toEqual(['init']);
    expect(sut.phase()).toBe('Pending');
  },
  async running(sut) {
    const s = sut.actor.getSnapshot();
    expect(s.matches({ syncing: { worker: 'idle', progress: 'running' } })).toBe(true);
    expect(await sut.running()).toEqual(['main']);
    expect(sut.phase()).toBe('Running');
  },
  async 'terminating.graceful'(sut) {
    const s = sut.actor.getSnapshot();
    expect(s.matches({ terminating: 'killing' })).toBe(true);
    expect(s.context.gracePeriodSeconds).toBe(specGrace);
    expect(sut.holdPending()).toBe(1);
    expect(sut.stopCalls()).toBe(1);
  },
  async 'terminating.shortened'(sut) {
    const s = sut.actor.getSnapshot();
    expect(s.matches({ terminating: 'killing' })).toBe(true);
    expect(s.context.gracePeriodSeconds).toBe(shorterGrace);
    expect(sut.holdPending()).toBe(1);
    expect(sut.stopCalls()).toBe(2);
  },
  async terminated(sut) {
    const s = sut.actor.getSnapshot();
    expect(s.matches({ terminated: 'finished' })).toBe(true);
    expect(await sut.running()).toEqual([]);
    expect(['Succeeded', 'Failed']).toContain(sut.phase());
    // Still in config: the containers stay, for their status and logs.
    expect((await sut.containers()).length).toBeGreaterThan(0);
    expect(sut.h.reports).toContainEqual({ type: 'POD.FINISHED', uid: sut.uid, restartRequested: false });
  },
  async removed(sut) {
    const s = sut.actor.getSnapshot();
    expect(s.matches({ terminated: 'finished' })).toBe(true);
    expect(s.context.deleted).toBe(true);
    expect(await sut.containers()).toEqual([]);
    expect(await sut.h.runtime.listPodSandbox()).toEqual([]);
    expect(['Succeeded', 'Failed']).toContain(sut.phase());
  },
  async released(sut) {
    const s = sut.actor.getSnapshot();
    expect(s.status).toBe('done');
    expect(s.output).toEqual({ uid: sut.uid });
  },
  async abandoned(sut) {
    // The agent stopped: the actor is done, the pod's containers keep running for the next agent.
    const s = sut.actor.getSnapshot();
    expect(s.status).toBe('done');
    expect(await sut.running()).toEqual(['main']);
  },
};

/** Terminal phase expected after each way of reaching `terminated`. */
const phaseAfter: Partial<Record<LifecycleEvent['type'], string>> = {
  INIT_EXIT_FAIL: 'Failed',
  CONTAINER_EXIT: 'Succeeded',
  // Killed: the stopped containers report exit code 137 (killedByStop) and restartPolicy is Never.
  STOPPED: 'Failed',
};

/** How many times each state test ran, over all paths (checked at the end). */
const stateTestRuns = new Map<string, number>();

function params(sut: LifecycleSut): TestParam<LifecycleSnapshot, LifecycleEvent> {
  let lastEvent: LifecycleEvent['type'] | undefined;
  const states = Object.fromEntries(
    Object.entries(stateTests).map(([key, test]) => [
      key,
      async () => {
        stateTestRuns.set(key, (stateTestRuns.get(key) ?? 0) + 1);
        await test(sut);
        await sut.checkAlways();
        if (key === 'terminated' && lastEvent !== undefined && phaseAfter[lastEvent] !== undefined) {
          expect(sut.phase(), `phase after ${lastEvent}`).toBe(phaseAfter[lastEvent]);
        }
      },
    ]),
  );
  const on = (type: LifecycleEvent['type'], run: () => Promise<void> | void) => async () => {
    lastEvent = type;
    await run();
  };
  return {
    states,
    events: {
      ADD: on('ADD', () => sut.add()),
      INIT_EXIT_OK: on('INIT_EXIT_OK', () => sut.initExits(0)),
      INIT_EXIT_FAIL: on('INIT_EXIT_FAIL', () => sut.initExits(1)),
      CONTAINER_EXIT: on('CONTAINER_EXIT', () => sut.mainExits()),
      KILL: on('KILL', () => sut.kill()),
      KILL_SHORTER: on('KILL_SHORTER', () => sut.killShorter()),
      STOPPED: on('STOPPED', () => sut.stopped()),
      REMOVE: on('REMOVE', () => sut.remove()),
      RELEASE: on('RELEASE', () => sut.release()),
    },
  };
}

/** Model state nodes and transitions the paths go through. */
function modelCoverage(paths: Path[]) {
  const states = new Set<string>();
  const transitions = new Set<AnyTransitionDefinition>();
  for (const path of paths) {
    path.steps.forEach((step, i) => {
      for (const node of getStateNodes(lifecycleModel.root, step.state.value)) states.add(node.id);
      const previous = path.steps[i - 1];
      if (previous !== undefined) for (const t of lifecycleModel.getTransitionData(previous.state, step.event)) transitions.add(t);
    });
  }
  return { states, transitions };
}

const modelStateNodes = [lifecycleModel.root, ...allStateNodes(lifecycleModel.root)];
const modelTransitions = modelStateNodes.flatMap((node) => [...node.transitions.values()].flat());

describe('the lifecycle model drives the real pod actor on the fake runtime', () => {
  it('covers every state and transition of the model, with a test for every state', () => {
    const covered = modelCoverage([...shortest, ...simple]);
    console.log(
      `lifecycle model: states covered ${covered.states.size}/${modelStateNodes.length}, ` +
        `transitions ${covered.transitions.size}/${modelTransitions.length}, ` +
        `paths ${shortest.length + simple.length} (shortest ${shortest.length}, simple ${simple.length})`,
    );
    expect(modelStateNodes.map((n) => n.id).filter((id) => !covered.states.has(id))).toEqual([]);
    expect(modelTransitions.filter((t) => !covered.transitions.has(t)).map((t) => `${t.source.id} ${t.eventType}`)).toEqual([]);
    const leaves = modelStateNodes.filter((n) => n.type === 'atomic' || n.type === 'final');
    const tested = new Set(Object.keys(stateTests).map((key) => `lifecycle.${key}`));
    expect(leaves.map((n) => n.id).filter((id) => !tested.has(id))).toEqual([]);
    expect(simple.length).toBeLessThan(40);
  });

  describe.each([
    ['shortest', shortest],
    ['simple', simple],
  ] as const)('%s paths', (_kind, paths) => {
    it.each(paths.map((path) => [path.description, path] as const))('%s', async (_description, path) => {
      const sut = new LifecycleSut();
      await path.test(params(sut));
    });
  });

  it('ran the test of every model state on the real pod', () => {
    const notRun = Object.keys(stateTests).filter((key) => !stateTestRuns.get(key));
    expect(notRun).toEqual([]);
    console.log(`lifecycle state tests run: ${JSON.stringify(Object.fromEntries(stateTestRuns))}`);
  });
});
