/**
 * Worker: the cost of creating pod actors, the way podWorkers does it (`createActor(podMachine,
 * { parent })`, one by one, O(1) each) against `spawnChild` from one parent machine (XState copies
 * the parent's children map on every spawn: O(n) each, O(n²) in all).
 *   node --expose-gc --import tsx bench/actors.ts [--sizes=1000,4000,8000] [--out=FILE]
 * The pod machine is the real one; its effects return promises that never settle, so only actor
 * creation (and the first invoke of `syncPod`) is timed, no runtime work.
 */
import { createActor, enqueueActions, fromCallback, setup } from 'xstate';
import { loggingRecorder } from '../src/eventrecorder/recorder.ts';
import type { Pod } from '../src/api/types.ts';
import { podRef } from '../src/api/types.ts';
import { type PodEffects, podMachineWith } from '../src/pod/pod.ts';
import { PodManager } from '../src/pod/podManager.ts';
import { activePods } from '../src/podworkers/activePods.ts';
import { PodStages } from '../src/podworkers/podStages.ts';
import { createPodsLogic } from '../src/kubelet/dispatch.ts';
import { StatusManager } from '../src/status/manager.ts';
import { silentLogger } from '../src/log.ts';
import { IMAGE, LONG_RUNNING, argValue, emit, gc, mb, progress, round, runWorker } from './lib.ts';
import type { ActorsResult } from './results.ts';

const sizes = (argValue('sizes') ?? '1000,4000,8000').split(',').map(Number);
/** spawnChild sizes whose estimated time exceeds this are skipped. */
const spawnBudgetMs = Number(argValue('spawn-budget-ms') ?? 30_000);

const never = <T>() => new Promise<T>(() => {});
const effects: PodEffects = { syncPod: never, terminatePod: never, cleanupPod: never };
const podMachine = podMachineWith(effects);

function pods(n: number, run: number): Pod[] {
  return Array.from({ length: n }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `p${i}`, namespace: 'default', uid: `uid-${run}-${i}` },
    spec: { containers: [{ name: 'main', image: IMAGE, command: ['sh', '-c', LONG_RUNNING] }], terminationGracePeriodSeconds: 2 },
  }));
}

function heapUsed(): number {
  gc();
  return process.memoryUsage().heapUsed;
}

interface Measure {
  n: number;
  ms: number;
  usPerActor: number;
  heapMB: number;
  heapKBPerActor: number;
}

let run = 0;

/** podWorkers' way: a callback parent, `createActor(podMachine, { parent, id, systemId, input })`. */
function viaCreateActor(n: number): Measure {
  const list = pods(n, run++);
  const before = heapUsed();
  const parent = createActor(fromCallback(() => () => {}));
  parent.start();
  const t0 = performance.now();
  const actors = [];
  for (const pod of list) {
    const actor = createActor(podMachine, { parent, id: podRef(pod), systemId: `pod/${pod.metadata.uid}`, input: { pod } });
    actors.push(actor);
    actor.start();
  }
  const ms = performance.now() - t0;
  const heap = heapUsed() - before;
  // Pod actors have a parent and cannot be stopped from outside; their effects never settle and
  // hold no timers, so dropping every reference (this parent is the root of its own actor system)
  // lets the GC take them.
  actors.length = 0;
  parent.stop();
  return result(n, ms, heap);
}

/**
 * The agent's real registry: the syncLoop's `pods` actor (the pod workers and the kubelet's
 * handlers) receiving one CONFIG.ADD with n pods. On top of createActor this includes admission
 * (which looks at every already active pod) and the PodManager bookkeeping.
 */
function viaPodWorkers(n: number): Measure {
  const list = pods(n, run++);
  const before = heapUsed();
  const podManager = new PodManager();
  const statuses = new StatusManager();
  const stages = new PodStages();
  const logic = createPodsLogic({
    podMachine,
    podManager,
    statuses,
    stages,
    activePods: () => activePods({ stages, desired: (uid) => podManager.get(uid), status: (uid) => statuses.get(uid), allocated: (pod) => pod }),
    sourcesReady: () => true,
    metrics: {},
    node: () => ({ name: 'bench-node', maxPods: n, labels: {}, os: 'linux' }),
    recorder: loggingRecorder(silentLogger),
    runtime: { runningPodUids: () => new Set(), killOrphanPod: async () => {}, removeOrphanedPodDirs: async () => {} },
    syncFrequencyMs: 60_000,
    errorBackoffMs: 10_000,
    now: () => Date.now(),
    random: Math.random,
    log: silentLogger,
  });
  let created = 0;
  const workers = createActor(logic, {
    inspect: (e) => {
      if (e.type === '@xstate.actor' && (e.actorRef as unknown as { logic?: { id?: string } }).logic?.id === 'pod') created++;
    },
  });
  workers.start();
  const t0 = performance.now();
  workers.send({ type: 'CONFIG.ADD', source: 'file', pods: list });
  const ms = performance.now() - t0;
  if (created !== n) throw new Error(`podWorkers made ${created} pod actors, expected ${n}`);
  const heap = heapUsed() - before;
  workers.stop();
  return result(n, ms, heap);
}

/** The alternative: one parent machine spawning every pod with `spawnChild`, all in one event. */
function viaSpawnChild(n: number): Measure {
  const list = pods(n, run++);
  const before = heapUsed();
  const parentMachine = setup({
    types: { events: {} as { type: 'ADD'; pods: Pod[] } },
    actors: { pod: podMachine },
  }).createMachine({
    on: {
      ADD: {
        actions: enqueueActions(({ event, enqueue }) => {
          for (const pod of event.pods) {
            enqueue.spawnChild('pod', { id: podRef(pod), systemId: `pod/${pod.metadata.uid}`, input: { pod } });
          }
        }),
      },
    },
  });
  const parent = createActor(parentMachine);
  parent.start();
  const t0 = performance.now();
  parent.send({ type: 'ADD', pods: list });
  const ms = performance.now() - t0;
  const children = Object.keys(parent.getSnapshot().children).length;
  if (children !== n) throw new Error(`spawnChild made ${children} children, expected ${n}`);
  const heap = heapUsed() - before;
  parent.stop();
  return result(n, ms, heap);
}

function result(n: number, ms: number, heapBytes: number): Measure {
  return {
    n,
    ms: round(ms),
    usPerActor: round((ms * 1000) / n),
    heapMB: mb(heapBytes),
    heapKBPerActor: round(heapBytes / 1024 / n, 2),
  };
}

async function main() {
  // Warm-up so that the first measured size does not pay for JIT compilation.
  viaCreateActor(200);
  viaSpawnChild(200);
  viaPodWorkers(200);

  const createActorResults: Measure[] = [];
  for (const n of sizes) {
    const m = viaCreateActor(n);
    createActorResults.push(m);
    progress(`actors: createActor ×${n}: ${m.ms} ms, heap ${m.heapMB} MB`);
  }

  const podWorkersResults: Measure[] = [];
  for (const n of sizes) {
    const m = viaPodWorkers(n);
    podWorkersResults.push(m);
    progress(`actors: podWorkers CONFIG.ADD ×${n}: ${m.ms} ms, heap ${m.heapMB} MB`);
  }

  const spawnChildResults: (Measure | { n: number; skipped: string })[] = [];
  let last: Measure | undefined;
  for (const n of sizes) {
    if (last) {
      const estimate = last.ms * (n / last.n) ** 2;
      if (estimate > spawnBudgetMs) {
        spawnChildResults.push({ n, skipped: `estimated ${Math.round(estimate / 1000)} s (quadratic from n=${last.n}) > ${spawnBudgetMs / 1000} s budget` });
        progress(`actors: spawnChild ×${n}: skipped (estimated ${Math.round(estimate / 1000)} s)`);
        continue;
      }
    }
    const m = viaSpawnChild(n);
    spawnChildResults.push(m);
    last = m;
    progress(`actors: spawnChild ×${n}: ${m.ms} ms, heap ${m.heapMB} MB`);
  }

  const result = {
    scenario: 'actors' as const,
    gcAvailable: gc(),
    note: 'pod machine with never-settling effects; heap = heapUsed after GC with the actors alive, minus before',
    createActor: createActorResults,
    podWorkers: podWorkersResults,
    spawnChild: spawnChildResults,
  };
  await emit(result satisfies ActorsResult);
}

runWorker(main);
