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
import path from 'node:path';
import { type Actor, type AnyActorLogic, type AnyStateMachine, type InspectionEvent, type Observer, createActor, fromPromise } from 'xstate';
import type { Pod, SourceName } from '../api/types.ts';
import { containerGcPolicy, crashLoopBackOffPolicy, imageGcPolicy } from '../cli/config.ts';
import type { Clock } from '../clock.ts';
import type { RuntimeDeps, StartedContainerType } from '../kuberuntime/execute.ts';
import { collectContainerGarbage } from '../kuberuntime/gc.ts';
import { hookIOOn } from '../kuberuntime/hooks.ts';
import { ImageGcManager } from '../kuberuntime/imageGC.ts';
import { ImagePuller } from '../kuberuntime/images.ts';
import { killOrphanPod, removeOrphanedPodDirs } from '../kuberuntime/orphans.ts';
import { RuntimePodIds, recordingPodIds } from '../kuberuntime/podIds.ts';
import type { MemoryFeatures } from '../kuberuntime/resources.ts';
import type { Logger } from '../log.ts';
import { runtimeNetworkError, unhealthyReason } from '../node/health.ts';
import { runtimeStatusReader } from '../node/runtimeStatus.ts';
import { isStaticPod } from '../api/types.ts';
import { nodeOwner } from '../node/lease.ts';
import { MirrorPodSync } from '../pod/mirrorClient.ts';
import { hostAppArmorEnabled } from '../node/machineInfo.ts';
import { NodeRecord } from '../node/record.ts';
import { type MachineInfo, initialNode, nodeSettings } from '../node/nodeStatus.ts';
import { kubeletVersion } from '../cli/flags.ts';
import type { ClusterDeps, NodeConfig, NodeMounter, NodeParts } from '../nodeloop/parts.ts';
import type { KernelLog } from '../node/kernelLog.ts';
import { StatusWriter } from '../status/statusWriter.ts';
import { goArch, nodeLabels } from '../node/labels.ts';
import { plegMachineWith } from '../pleg/pleg.ts';
import { createRelister } from '../pleg/relister.ts';
import { podMachineWith } from '../pod/pod.ts';
import { createPodEffects } from '../pod/podEffects.ts';
import { PodManager } from '../pod/podManager.ts';
import { type PodActor, actorId } from '../podworkers/podWorkers.ts';
import { type PodWorkType, timedPodEffects } from '../podworkers/workDuration.ts';
import { type ProbeMetrics, createProbeManagerLogic } from '../prober/manager.ts';
import type { ImageService, RuntimeService, RuntimeStatusInfo } from '../runtime/types.ts';
import { CallsInFlight, describeHanging, hangingCallThresholdMs } from '../runtime/callsInFlight.ts';
import { StatusManager } from '../status/manager.ts';
import { type NodeInfo, nodeForAdmission } from '../admission/admit.ts';
import { ApiEventRecorder, type EventRecorder, loggingRecorder, nodeReference } from '../eventrecorder/recorder.ts';
import { OBJECT_CACHE_TTL_MS, apiObjectReader } from '../client/objects.ts';
import { createReflector } from '../client/reflector.ts';
import type { Service } from '../api/cluster.ts';
import type { NodeDns } from '../kuberuntime/dns.ts';
import { systemMounter } from '../volumes/mounter.ts';
import { PodDataDirs } from '../volumes/setUp.ts';
import { TokenManager } from '../volumes/tokens.ts';
import { StatsProvider } from '../stats/provider.ts';
import type { ContainerManager } from '../cm/containerManager.ts';
import { AllocationManager } from '../allocation/manager.ts';
import { fileCheckpoint } from '../allocation/checkpoint.ts';
import type { ActuatedStore } from '../kuberuntime/resize.ts';
import { createPodsLogic } from './dispatch.ts';
import { type PodStartObserver, PodStartupLatency } from './podStartupLatency.ts';
import { type NodeLoopName, nodeLoops } from './nodeLoops.ts';
import { type LoopInputs, type RuntimeConditions, type SyncLoopMachine, syncLoopMachine } from './syncLoop.ts';

interface NodeDeps {
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
  /** In a cluster: the API client and the node's settings; absent: a standalone node. */
  cluster?: ClusterDeps;
  /**
   * The machine as the Node reports it, read before any pod is admitted: until there is a Node
   * (always, on a standalone node) admission checks pods against the Node the agent would register,
   * its allocatable computed from this. Absent: not known, only the pod count is checked.
   */
  machine?: MachineInfo;
  /** The node's DNS settings for pods' sandboxes; absent: the runtime's default resolver. */
  dns?: NodeDns;
  /** Mounts memory-backed volumes; the system's `mount` by default. */
  mounter?: NodeMounter;
  /** Told of what the kubelet's metrics count (any part of it: tests listen to what they check). */
  metrics?: Partial<NodeMetrics>;
  /** The machine's memory when it is not the host's (sim:// simulates its machine's): total and free. */
  machineMemory?: () => { totalBytes: number; freeBytes: number };
  /** The machine's cgroup version, swap controller and huge page sizes (src/cm/memoryFeatures.ts): each container's HugeTLB and swap settings. */
  memoryFeatures: MemoryFeatures;
  /** The machine's kernel log, for the OOM watcher; absent: not followed. */
  kernelLog?: KernelLog;
  /** The node's cgroups (--cgroups-per-qos), started; absent: none are kept. */
  podCgroups?: ContainerManager;
  /**
   * What the runtime's Status said it supports, read at start (StatusResponse.features); absent:
   * it did not answer then, and admission does not check what depends on it.
   */
  runtimeFeatures?: { supplementalGroupsPolicy: boolean };
  /**
   * The runtime's conditions as its Status answered at start: the network state pods are synced
   * against until the syncLoop's first poll answers; absent: taken as ready until then.
   */
  runtimeConditions?: RuntimeStatusInfo['conditions'];
}

/**
 * What the node tells the kubelet's metrics (src/server/metrics.ts), each at the moment it
 * happens, already measured on the node's clock: nothing is counted or scanned on the way.
 */
export interface NodeMetrics extends PodStartObserver, ProbeMetrics {
  /** A container start was attempted, with the waiting reason it failed with. */
  containerStarted(type: StartedContainerType, failure: string | null): void;
  relisted(durationMs: number, intervalMs: number | null): void;
  /** A pod worker's piece of work ended (src/podworkers/workDuration.ts). */
  podWorked(type: PodWorkType, seconds: number): void;
  /** A UID that came back started afresh; `isStatic`: a static pod. */
  podRestarted(isStatic: boolean): void;
}

export interface Node {
  syncLoop: Actor<SyncLoopMachine>;
  /** The desired pods, as the sources last described them. */
  podManager: PodManager;
  /** Each pod's API status, as the agent would report it. */
  statuses: StatusManager;
  /** The actor of a pod UID, while it has one. */
  podActor(uid: string): PodActor | undefined;
  /** Every pod actor there is, by UID. */
  podActors(): Map<string, PodActor>;
  /** The pods admitted and neither terminating nor terminated. */
  activePods(): Pod[];
  /** What `/healthz` reports as wrong (null: healthy). */
  unhealthyReason(): string | null;
  /** The runtime calls that hang, each with its pod and how long it has waited (`/healthz?verbose`). */
  hangingCalls(): string[];
  /** In a cluster: the writer of pod statuses to the API server. */
  statusWriter?: StatusWriter;
  /** The node's events: to the API in a cluster, to the log otherwise. */
  recorder: EventRecorder;
  /** What the node allocated to each pod, and the resize records (in-place resize). */
  allocation: AllocationManager;
  /** The node's and its pods' usage (`/stats/summary`, `/metrics/resource`). */
  stats: StatsProvider;
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
  const { config, clock, log } = deps;
  // Every sandbox and container the node creates or removes is recorded by pod, so that a pod's
  // status is read by asking about those IDs, without listing (podIds.ts).
  const podIds = new RuntimePodIds();
  const runtime = recordingPodIds(deps.runtime, podIds);
  const now = () => clock.now();
  const metrics = deps.metrics ?? {};
  const random = deps.random ?? Math.random;
  const statuses = new StatusManager();
  const podManager = new PodManager();
  // Pods from their first Pending status until every container has started (the start metrics).
  const startup =
    metrics.podStarted && metrics.podStartedSli
      ? new PodStartupLatency(now, { podStarted: metrics.podStarted.bind(metrics), podStartedSli: metrics.podStartedSli.bind(metrics) })
      : undefined;
  if (startup) statuses.subscribe((uid, status) => startup.statusChanged(uid, podManager.get(uid), status));
  const cluster = deps.cluster;
  // In a cluster events go to the API too (correlated, rate-limited); a standalone node logs them.
  const recorder = cluster ? new ApiEventRecorder({ api: cluster.api, nodeName: config.nodeName, clock, log }) : loggingRecorder(log);
  const nodeRecord = new NodeRecord();
  const nodeInfo = admissionNode(config, cluster, nodeRecord, deps.machine, deps.runtimeFeatures);
  const podsDir = path.join(config.rootDir, 'pods');
  // The cluster's Services, for the service link variables (null until the first list).
  let services: Service[] | null = null;
  const serviceReflector = cluster
    ? createReflector<Service>({
        kind: 'Service',
        list: () => cluster.api.listServices(),
        watch: (resourceVersion, handlers) => cluster.api.watchServices(resourceVersion, handlers),
        clock,
        log,
        onChange: (store) => void (services = [...store.values()]),
      })
    : undefined;
  serviceReflector?.start();
  const mounter = deps.mounter ?? systemMounter(podsDir, log);
  const tokens = cluster ? new TokenManager(cluster.api, now, log) : undefined;
  // What the node allocated to each pod and what the runtime took, checkpointed in the root directory as the kubelet's.
  const allocation = new AllocationManager({
    allocated: fileCheckpoint(config.rootDir, 'allocated_pods_state', log, clock),
    actuated: fileCheckpoint(config.rootDir, 'actuated_pods_state', log, clock),
    now,
  });
  const actuated: ActuatedStore = { of: (uid) => allocation.actuatedOf(uid), set: (uid, container, resources) => allocation.setActuated(uid, container, resources) };
  const puller = new ImagePuller(deps.images, config.serializeImagePulls ? 1 : (config.maxParallelImagePulls ?? Infinity));
  const runtimeDeps: RuntimeDeps = {
    runtime,
    podIds,
    images: deps.images,
    puller,
    podLogsRoot: config.podLogsDir,
    security: { seccompDefault: config.seccompDefault, seccompProfileRoot: path.join(config.rootDir, 'seccomp') },
    memoryCapacityBytes: deps.machineMemory?.().totalBytes ?? os.totalmem(),
    memoryFeatures: deps.memoryFeatures,
    crashLoop: crashLoopBackOffPolicy(config),
    hookIO: hookIOOn(clock),
    now,
    log,
    recorder,
    ...(config.nodeIp ? { hostIPs: config.nodeIp.split(',') } : {}),
    allocatable: () => nodeInfo().allocatable,
    ...(cluster ? { objects: apiObjectReader(cluster.api, { ttlMs: OBJECT_CACHE_TTL_MS, now }) } : {}),
    ...(deps.dns ? { dns: deps.dns } : {}),
    ...(cluster ? { services: () => services } : {}),
    podsDir,
    dataDirs: new PodDataDirs(podsDir),
    mounter,
    ...(deps.podCgroups ? { podCgroups: deps.podCgroups } : {}),
    actuated,
    ...(tokens ? { tokens } : {}),
    ...(metrics.containerStarted ? { containerStarted: metrics.containerStarted.bind(metrics) } : {}),
    ...(startup ? { imagePull: (uid: string, stage: 'started' | 'finished') => (stage === 'started' ? startup.pullStarted(uid) : startup.pullFinished(uid)) } : {}),
  };
  // Assigned once the syncLoop exists; read only by actors it runs.
  let syncLoopRef: Actor<SyncLoopMachine> | undefined;
  const callsInFlight = new CallsInFlight(now, log, hangingCallThresholdMs(config.runtimeRequestTimeoutMs));
  const effects = createPodEffects({
    ...runtimeDeps,
    statuses,
    callsInFlight,
    runtimeName: deps.runtimeName,
    ...(config.nodeIp ? { hostIP: config.nodeIp.split(',')[0] } : {}),
    resize: {
      actuated,
      initializeActuated: (pod) => allocation.initializeActuated(pod),
      conditions: (uid) => allocation.conditions(uid),
      setInProgress: (uid, reason, message, generation) => allocation.setInProgress(uid, reason, message, generation),
      clearInProgress: (uid) => allocation.clearInProgress(uid),
      clearConditions: (uid) => allocation.clearConditions(uid),
    },
    // The runtime's network as the syncLoop last polled it (its `runtimeStatus` region).
    networkError: () => syncLoopRef?.getSnapshot().context.networkError ?? null,
  });
  const podMachine = podMachineWith(metrics.podWorked ? timedPodEffects(effects, now, metrics.podWorked.bind(metrics)) : effects);
  const relister = createRelister(runtime, now, log, metrics.relisted?.bind(metrics));
  const podActor = (uid: string) => syncLoopRef?.system.get(actorId(uid)) as PodActor | undefined;
  const statusWriter = cluster
    ? new StatusWriter({
        api: cluster.api,
        statuses,
        pod: (uid) => podManager.get(uid),
        // No actor: the pod never started (rejected) or its actor finished and was released.
        finished: (uid) => podActor(uid)?.getSnapshot().hasTag('finished') ?? true,
        // Until its actor has stopped them all (terminated); a pod without an actor runs nothing.
        couldHaveRunningContainers: (uid) => {
          const snapshot = podActor(uid)?.getSnapshot();
          return snapshot !== undefined && snapshot.status === 'active' && !snapshot.hasTag('terminated');
        },
        clock,
        log,
        onProgress: () => reportStatusWrites(),
      })
    : undefined;
  // The writer's progress reaches the syncLoop (and so the visualizer) at most once a second.
  let statusWritesDue = false;
  const reportStatusWrites = () => {
    if (statusWritesDue || !statusWriter) return;
    statusWritesDue = true;
    clock.setTimeout(() => {
      statusWritesDue = false;
      if (syncLoopRef?.getSnapshot().status === 'active') syncLoopRef.send({ type: 'STATUS.WRITES', ...statusWriter.progress() });
    }, 1_000);
  };
  const stats = new StatsProvider({
    nodeName: config.nodeName,
    runtime,
    images: deps.images,
    podLogsDir: config.podLogsDir,
    rootDir: config.rootDir,
    podsDir,
    now,
    log,
    ...(deps.machineMemory ? { machineMemory: deps.machineMemory } : {}),
  });
  // ---- The garbage collection parts, in their simplest correct form until the node's garbage
  // collection is wired here (this block is to be replaced).
  const garbageCollection: Pick<NodeParts, 'imageGc' | 'containerGc'> = {
    imageGc: new ImageGcManager({ runtime, images: deps.images, imageFs: () => stats.imageFs(), pulling: () => puller.pulling(), policy: imageGcPolicy(config), now, log, recorder, node: nodeReference(config.nodeName) }),
    containerGc: {
      // As housekeeping's: a pod is deleted once neither config nor a worker has it.
      collect: () => collectContainerGarbage({ runtime, now, log }, containerGcPolicy(config), (uid) => !podManager.has(uid) && !podActor(uid), syncLoopRef?.getSnapshot().matches({ sources: 'ready' }) ?? false),
    },
  };
  // ---- End of the garbage collection parts.
  const parts: NodeParts = {
    ...garbageCollection,
    config,
    ...(cluster ? { cluster } : {}),
    runtime,
    images: deps.images,
    clock,
    log,
    recorder,
    nodeRecord,
    health: () => syncLoopRef?.getSnapshot().context ?? { lastRelistAt: null, lastRuntimeError: null },
    stats,
    mounter,
    ...(tokens ? { tokens } : {}),
    ...(deps.kernelLog ? { kernelLog: deps.kernelLog } : {}),
    pods: {
      // The pod manager's pods whose actor runs and is neither terminating nor terminated: the
      // kubelet's GetActivePods (kubelet_pods.go, from the pod manager), less the pods already
      // going, which it still counts (eviction then ranks only the pods it could still stop;
      // admission has its own count, with them: configHandlers.ts). Read at every pod cgroup,
      // eviction pass and resize, so by UID lookups rather than a listing of the actor system
      // (which builds an object of every actor).
      active: () => {
        const active: Pod[] = [];
        for (const pod of podManager.all()) {
          const snapshot = podActor(pod.metadata.uid)?.getSnapshot();
          if (!snapshot || snapshot.status !== 'active' || snapshot.hasTag('terminating') || snapshot.hasTag('terminated')) continue;
          active.push(pod);
        }
        return active;
      },
      cleanedUp: (uid) => podActor(uid)?.getSnapshot().hasTag('finished') ?? true,
    },
  };
  // Each node loop that runs here, with its effects and its settings (src/kubelet/nodeLoops.ts).
  const loopLogic: Partial<Record<NodeLoopName, AnyStateMachine>> = {};
  const loopInputs: LoopInputs = {};
  for (const loop of nodeLoops) {
    const started = loop.start(parts);
    if (!started) continue;
    loopLogic[loop.name] = started.logic;
    loopInputs[loop.name] = started.input;
  }
  const mirrorPods = cluster
    ? new MirrorPodSync({
        api: cluster.api,
        nodeName: config.nodeName,
        owner: () => (nodeRecord.uid ? nodeOwner({ name: config.nodeName, uid: nodeRecord.uid }) : null),
        staticPods: () => [...podManager.all()].filter(isStaticPod),
        log,
        onCreated: (pod) => statusWriter?.rewrite(pod.metadata.uid),
        now,
      })
    : undefined;
  const gcPolicy = containerGcPolicy(config);
  const readRuntimeStatus = runtimeStatusReader(runtime, config.runtimeRequestTimeoutMs, log);
  const machine = syncLoopMachine.provide({
    actors: {
      ...(deps.sources ? { sources: deps.sources.logic } : {}),
      ...loopLogic,
      pods: createPodsLogic({
        podMachine,
        podManager,
        statuses,
        node: nodeInfo,
        recorder,
        allocation,
        sourcesReady: () => syncLoopRef?.getSnapshot().matches({ sources: 'ready' }) ?? false,
        runtime: {
          runningPodUids: () => relister.runningPodUids(),
          killOrphanPod: (uid) => killOrphanPod(runtimeDeps, uid),
          removeOrphanedPodDirs: async (isOrphan) => {
            await removeOrphanedPodDirs(runtimeDeps, isOrphan);
            // And their cgroups (kubelet_pods.go cleanupOrphanedPodCgroups).
            await deps.podCgroups?.removeOrphans(isOrphan);
          },
          // Housekeeping runs only once every source has been seen: the kubelet's allSourcesReady.
          collectGarbage: async (isPodDeleted) => void (await collectContainerGarbage({ runtime, now, log }, gcPolicy, isPodDeleted, true)),
        },
        syncFrequencyMs: config.syncFrequencyMs,
        ...(statusWriter ? { podFinished: (uid: string) => statusWriter.request(uid), podTerminated: (uid: string) => statusWriter.podTerminated(uid) } : {}),
        ...(metrics.podRestarted ? { podRestarted: (pod: Pod) => metrics.podRestarted!(isStaticPod(pod)) } : {}),
        ...(mirrorPods ? { mirrorPods } : {}),
        errorBackoffMs,
        containerGcPeriodMs: config.containerGcPeriodMs,
        now,
        random,
        log,
      }),
      pleg: plegMachineWith(relister),
      // The kubelet's updateRuntimeUp: the runtime's Status, every runtimeStatusPeriodMs.
      runtimeStatus: fromPromise<RuntimeConditions>(({ signal }) => readRuntimeStatus(signal)),
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
        recorder,
        ...(metrics.probed && metrics.probeRemoved ? { metrics: { probed: metrics.probed.bind(metrics), probeRemoved: metrics.probeRemoved.bind(metrics) } } : {}),
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
      loops: loopInputs,
      ...(deps.runtimeConditions ? { networkError: runtimeNetworkError(deps.runtimeConditions) } : {}),
    },
    ...(deps.inspect ? { inspect: deps.inspect } : {}),
  });
  syncLoopRef = syncLoop;
  syncLoop.subscribe({ error: (err) => log('error', 'syncLoop failed', { err }) });
  syncLoop.start();
  recorder.event(nodeReference(config.nodeName), 'Normal', 'Starting', 'Starting kubelet.');
  if (deps.podCgroups?.enforcesAllocatable) recorder.event(nodeReference(config.nodeName), 'Normal', 'NodeAllocatableEnforced', 'Updated Node Allocatable limit across pods');
  return {
    syncLoop,
    podManager,
    statuses,
    podActor,
    podActors: () => {
      const actors = new Map<string, PodActor>();
      for (const [id, actor] of Object.entries(syncLoop.system.getAll())) if (id.startsWith(actorId(''))) actors.set(id.slice(actorId('').length), actor as PodActor);
      return actors;
    },
    activePods: parts.pods.active,
    unhealthyReason: () => unhealthyReason(syncLoop.getSnapshot().context, now()),
    hangingCalls: () => describeHanging(callsInFlight.hanging(), now()),
    ...(statusWriter ? { statusWriter } : {}),
    recorder,
    allocation,
    stats,
    stop: () => {
      serviceReflector?.stop();
      statusWriter?.stop();
      if (recorder instanceof ApiEventRecorder) recorder.stop();
      syncLoop.stop();
      allocation.flush();
    },
  };
}

/**
 * The node as admission sees it (the kubelet's getNodeAnyWay): the Node object as last written or
 * read once there is one (its labels, allocatable and taints), else the Node the agent would
 * register (kubelet_node_status.go initialNode: the same labels, taints and status, its allocatable
 * the machine's capacity less the reservations and the hard eviction thresholds). A standalone node
 * never has a Node object, so it is always the latter, as the kubelet's GetNode is without a client.
 * Without the machine, only the pod count is checked.
 */
function admissionNode(
  config: NodeConfig,
  cluster: ClusterDeps | undefined,
  record: NodeRecord,
  machine: MachineInfo | undefined,
  runtimeFeatures?: { supplementalGroupsPolicy: boolean },
): () => NodeInfo {
  const labels = nodeLabels(config.nodeName, config.nodeLabels, { os: 'linux', arch: goArch(os.arch()) });
  const base: NodeInfo = {
    name: config.nodeName,
    maxPods: config.maxPods,
    labels,
    os: 'linux',
    taints: cluster ? config.registerWithTaints : [],
    allowedUnsafeSysctls: config.allowedUnsafeSysctls,
    appArmorEnabled: hostAppArmorEnabled(),
    // A runtime that sends no features (containerd 1.6) does not support Strict: the kubelet refuses those pods.
    ...(runtimeFeatures ? { supplementalGroupsPolicySupported: runtimeFeatures.supplementalGroupsPolicy } : {}),
  };
  // Its conditions, images and times are no concern of admission: it is built once, from what does not change.
  const wouldRegister = machine
    ? initialNode({ machine, settings: nodeSettings(config, kubeletVersion()), health: { runtimeVersion: '', notReady: [], pressure: [] }, images: [] }, new Date(0).toISOString())
    : null;
  return () => nodeForAdmission(base, record.node ?? wouldRegister);
}
