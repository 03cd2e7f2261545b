/**
 * The one composition of the node's actor graph: from its dependencies (the runtime and image
 * services, one clock, a logger, the node's settings, the config sources) it builds the pod
 * machine with its effects, the PLEG with its relister, the pod workers with the kubelet's
 * handlers and housekeeping, the probe manager, and the syncLoop that owns them, and starts it.
 * `startAgent` (src/agent) and every test harness compose the node through this function, so what
 * the tests run is what the agent runs; they differ only in what they pass in (a simulated clock,
 * an in-process runtime, no config source).
 *
 * Everything that reads the time or waits takes `deps.clock`: the actor system's delays, the probe
 * scheduler, the pod effects' deadlines. One `SimulatedClock` therefore drives a whole node.
 */
import os from 'node:os';
import { type Actor, type AnyActorLogic, type InspectionEvent, type Observer, createActor } from 'xstate';
import type { SourceName } from '../api/types.ts';
import { type AgentConfig, containerGcPolicy, crashLoopBackOffPolicy } from '../cli/config.ts';
import type { Clock } from '../clock.ts';
import type { RuntimeDeps } from '../kuberuntime/execute.ts';
import { collectContainerGarbage } from '../kuberuntime/gc.ts';
import { hookIOOn } from '../kuberuntime/hooks.ts';
import { ImagePuller } from '../kuberuntime/images.ts';
import { killOrphanPod } from '../kuberuntime/orphans.ts';
import type { Logger } from '../log.ts';
import { unhealthyReason } from '../node/health.ts';
import { goArch, nodeLabels } from '../node/labels.ts';
import { plegMachineWith } from '../pleg/pleg.ts';
import { createRelister } from '../pleg/relister.ts';
import { podMachineWith } from '../pod/pod.ts';
import { createPodEffects } from '../pod/podEffects.ts';
import { PodManager } from '../pod/podManager.ts';
import { type PodActor, actorId } from '../podworkers/podWorkers.ts';
import { createProbeManagerLogic } from '../prober/manager.ts';
import type { ImageService, RuntimeService } from '../runtime/types.ts';
import { StatusManager } from '../status/manager.ts';
import { createPodsLogic } from './pods.ts';
import { type SyncLoopMachine, syncLoopMachine } from './syncLoop.ts';

/** The settings the node's actors read (the rest of AgentConfig is the process's: ports, files). */
export type NodeConfig = Pick<
  AgentConfig,
  | 'nodeName'
  | 'nodeLabels'
  | 'nodeIp'
  | 'maxPods'
  | 'syncFrequencyMs'
  | 'podLogsDir'
  | 'serializeImagePulls'
  | 'maxParallelImagePulls'
  | 'plegRelistPeriodMs'
  | 'eventedPleg'
  | 'eventedPlegRelistPeriodMs'
  | 'crashLoopBackOffInitialMs'
  | 'crashLoopBackOffMaxMs'
  | 'containerGcPeriodMs'
  | 'minimumContainerTtlMs'
  | 'maxDeadContainersPerContainer'
  | 'maxDeadContainers'
>;

export interface NodeDeps {
  config: NodeConfig;
  runtime: RuntimeService;
  images: ImageService;
  /** The runtime's name, as in a container status's `containerID: <name>://<id>`. */
  runtimeName: string;
  clock: Clock;
  log: Logger;
  /**
   * The config sources as one actor that sends CONFIG.*, SOURCE.SEEN and SOURCE.ERROR to its parent
   * (src/sources/configSources.ts), and the sources it will report; none: CONFIG.* events are sent
   * to the syncLoop directly (tests), and housekeeping runs from the start.
   */
  sources?: { logic: AnyActorLogic; expected: SourceName[] };
  /** Jitter for resync times and first probe ticks; Math.random by default. */
  random?: () => number;
  /** Receives every inspection record of the actor system (the visualizer, Stately's inspector). */
  inspect?: Observer<InspectionEvent>;
}

export interface Node {
  syncLoop: Actor<SyncLoopMachine>;
  /** The desired pods, as the sources last described them. */
  podManager: PodManager;
  /** Each pod's API status, as the agent would report it. */
  statuses: StatusManager;
  /** The actor of a pod UID, while it has one. */
  podActor(uid: string): PodActor | undefined;
  /** What `/healthz` reports as wrong (null: healthy). */
  unhealthyReason(): string | null;
  /** Stops the actors; the pods' containers keep running. */
  stop(): void;
}

/** The shared tick of the work queue: pods due for a resync are synced within this. */
const syncTickMs = 1_000;
/** How often housekeeping runs (pkg/kubelet/kubelet.go housekeepingPeriod). */
const housekeepingMs = 2_000;
/** Delay before retrying a pod whose sync failed (pkg/kubelet/pod_workers.go backOffPeriod). */
const errorBackoffMs = 10_000;
/** Probes running at once, node-wide (the rest wait their turn in due order). */
const maxConcurrentProbes = 32;

export function composeNode(deps: NodeDeps): Node {
  const { config, runtime, clock, log } = deps;
  const now = () => clock.now();
  const random = deps.random ?? Math.random;
  const statuses = new StatusManager();
  const podManager = new PodManager();
  const runtimeDeps: RuntimeDeps = {
    runtime,
    images: deps.images,
    puller: new ImagePuller(deps.images, config.serializeImagePulls ? 1 : (config.maxParallelImagePulls ?? Infinity)),
    podLogsRoot: config.podLogsDir,
    crashLoop: crashLoopBackOffPolicy(config),
    hookIO: hookIOOn(clock),
    now,
    log,
  };
  const podMachine = podMachineWith(
    createPodEffects({ ...runtimeDeps, statuses, runtimeName: deps.runtimeName, ...(config.nodeIp ? { hostIP: config.nodeIp.split(',')[0] } : {}) }),
  );
  const relister = createRelister(runtime, now, log);
  const gcPolicy = containerGcPolicy(config);
  const machine = syncLoopMachine.provide({
    actors: {
      ...(deps.sources ? { sources: deps.sources.logic } : {}),
      pods: createPodsLogic({
        podMachine,
        podManager,
        statuses,
        node: { name: config.nodeName, maxPods: config.maxPods, labels: nodeLabels(config.nodeName, config.nodeLabels, { os: 'linux', arch: goArch(os.arch()) }), os: 'linux' },
        runtime: {
          runningPodUids: () => relister.runningPodUids(),
          killOrphanPod: (uid) => killOrphanPod(runtimeDeps, uid),
          // Housekeeping runs only once every source has been seen: the kubelet's allSourcesReady.
          collectGarbage: async (isPodDeleted) => void (await collectContainerGarbage({ runtime, now, log }, gcPolicy, isPodDeleted, true)),
        },
        syncFrequencyMs: config.syncFrequencyMs,
        errorBackoffMs,
        containerGcPeriodMs: config.containerGcPeriodMs,
        now,
        random,
        log,
      }),
      pleg: plegMachineWith(relister),
      probes: createProbeManagerLogic({
        statuses,
        podManager,
        runtime,
        scheduler: {
          clock,
          random,
          maxConcurrent: maxConcurrentProbes,
          onError: (worker, err) => log('error', 'Probe worker failed', { worker, err }),
        },
        now,
        log,
      }),
    },
  });
  const syncLoop = createActor(machine, {
    systemId: 'syncLoop',
    clock,
    input: {
      expectedSources: deps.sources?.expected ?? [],
      syncTickMs,
      housekeepingMs,
      // Evented PLEG where the runtime streams container events (sim://, containerd 1.7+); relisting
      // every --pleg-relist-period otherwise (containerd 1.6 answers UNIMPLEMENTED).
      pleg: {
        periodMs: config.plegRelistPeriodMs,
        ...(config.eventedPleg ? { evented: { relistPeriodMs: config.eventedPlegRelistPeriodMs } } : {}),
      },
    },
    ...(deps.inspect ? { inspect: deps.inspect } : {}),
  });
  syncLoop.subscribe({ error: (err) => log('error', 'syncLoop failed', { err }) });
  syncLoop.start();
  return {
    syncLoop,
    podManager,
    statuses,
    podActor: (uid) => syncLoop.system.get(actorId(uid)) as PodActor | undefined,
    unhealthyReason: () => unhealthyReason(syncLoop.getSnapshot().context, now()),
    stop: () => syncLoop.stop(),
  };
}
