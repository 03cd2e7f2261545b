/**
 * Model-based tests of the REAL pod machine, walked as a graph (see `podGraph.ts` for how).
 *
 * Paths, and their bounds:
 *   - shortest paths (`getShortestPaths`) over the full alphabet: one per reachable graph state;
 *   - every edge: each graph state, reached by its shortest path, followed by every letter that can
 *     arrive there (so every (state, event) pair of the graph is checked);
 *   - simple paths (`getSimplePaths`) over three small alphabets on a coarser abstraction: the
 *     syncing phase (stopping when the pod leaves `syncing`), and termination after a kill and after
 *     a Succeeded sync. Simple paths over the full alphabet are not enumerable (tens of thousands
 *     on the lifecycle alphabet alone); the small alphabets are the bound.
 * Every state of every path is checked against the invariants (a)–(i) of `checkStep`.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { assign } from 'xstate';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import {
  type Counterexample,
  type Exploration,
  afterEvents,
  effectCalls,
  eventDescriptors,
  explore,
  invariantIds,
  invokeIds,
  podMachine,
  stateNodes,
  transitionDefinitions,
  transitionKey,
} from './podGraph.ts';

function describeViolations(list: Counterexample[] | undefined): string {
  if (!list?.length) return 'none';
  const first = list[0]!;
  return `${list.length} violation(s); shortest: ${first.message}\n  path: ${first.path.join(' → ') || '(initial state)'}`;
}

describe('the real pod machine, walked as a graph', () => {
  let result: Exploration;

  beforeAll(() => {
    result = explore({ shortestPaths: getShortestPaths, simplePaths: getSimplePaths });
    const paths = result.paths.shortest + result.paths.edges + result.paths.simple;
    console.log(
      `pod machine: states covered ${result.states.size}/${stateNodes.length}, ` +
        `transitions ${result.transitions.size}/${transitionDefinitions.length}, ` +
        `event types ${eventDescriptors.filter((d) => result.eventTypes.has(d)).length}/${eventDescriptors.length}, ` +
        `paths ${paths} (shortest ${result.paths.shortest}, edges ${result.paths.edges}, simple ${result.paths.simple}), ` +
        `graph states ${result.graphStates}, steps replayed ${result.steps}`,
    );
  }, 60_000);

  it('runs nothing: no effect is called, and each replay lands on the graph state it was found as', () => {
    expect(effectCalls).toEqual([]);
    expect(result.mismatches).toEqual([]);
  });

  it('reads the invoke ids and delayed events from the definition', () => {
    expect(invokeIds).toEqual({
      syncPod: '0.pod.syncing.worker.working',
      terminatePod: '0.pod.terminating.killing',
      cleanupPod: '0.pod.terminated.cleaning',
    });
    expect(afterEvents).toEqual({
      'pod.terminating.retrying': 'xstate.after.killRetry.pod.terminating.retrying',
      'pod.terminated.retrying': 'xstate.after.killRetry.pod.terminated.retrying',
    });
  });

  it('covers every state node of the machine', () => {
    const missing = stateNodes.map((n) => n.id).filter((id) => !result.states.has(id));
    expect(missing).toEqual([]);
  });

  it('covers every event type the machine accepts, and every PodEvent type', () => {
    const missing = eventDescriptors.filter((d) => !result.eventTypes.has(d));
    expect(missing).toEqual([]);
    for (const type of ['POD.UPDATE', 'POD.SYNC', 'POD.KILL', 'POD.RELEASE', 'PLEG.CONTAINER_STARTED', 'PLEG.CONTAINER_DIED', 'PLEG.CONTAINER_REMOVED']) {
      expect(result.acceptedEvents, type).toContain(type);
    }
  });

  it('takes every transition of the definition (on, onDone/onError, after, always)', () => {
    const missing = transitionDefinitions.map(transitionKey).filter((k) => !result.transitions.has(k));
    expect(missing).toEqual([]);
    expect(result.transitions.size).toBe(new Set(transitionDefinitions.map(transitionKey)).size);
  });

  it.each(invariantIds)('invariant %s holds in every state of every path', (id) => {
    const list = result.violations.get(id);
    expect(list?.length ?? 0, describeViolations(list)).toBe(0);
  });

  describe('the checker is not vacuous: it catches broken variants of the machine', () => {
    it('(a) a progress region that runs once the first init container is done, before the second', () => {
      const mutant = podMachine.provide({
        guards: {
          atInit: ({ context: { progress } }) => progress.stage === 'initializing' && progress.index === 0,
          atRunning: ({ context: { progress } }) =>
            progress.stage === 'running' || (progress.stage === 'initializing' && progress.index >= 1),
        },
      });
      const broken = explore({ shortestPaths: getShortestPaths, simplePaths: getSimplePaths, subject: mutant });
      expect(broken.violations.get('a:init-before-running')?.length ?? 0).toBeGreaterThan(0);
    }, 60_000);

    it('(f) a pending slot that keeps the oldest update instead of the newest', () => {
      const mutant = podMachine.provide({
        actions: { keepPending: assign({ pendingPod: ({ context, event }) => context.pendingPod ?? (event.type === 'POD.UPDATE' ? event.pod : null) }) },
      });
      const broken = explore({ shortestPaths: getShortestPaths, simplePaths: getSimplePaths, subject: mutant });
      expect(broken.violations.get('f:one-pending-kill-wins')?.length ?? 0).toBeGreaterThan(0);
    }, 60_000);
  });
});
