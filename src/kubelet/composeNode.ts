/**
 * The one composition of a node: a list of constructors, each from its own folder, that builds the
 * node's parts and its actor graph from its dependencies (the runtime and image services, one clock,
 * a logger, the node's settings, the config sources as an actor) and starts nothing — the kubelet's
 * rule (kubelet.go NewMainKubelet constructs, Run starts). `node.start()` starts it: the cluster
 * parts that watch or write, then the syncLoop, which starts its children (the config sources, the
 * pod workers, the PLEG, the probes, the facts it keeps, the node loops).
 *
 * Parts offer named capabilities to each other rather than stores: the status manager's mutations
 * (status/manager.ts), the pod workers' stages (podworkers/podStages.ts) and the syncLoop's facts
 * (nodeFacts.ts) have one writer each and are read through narrow interfaces; nothing reads an
 * actor's snapshot. `startAgent` (src/agent) and every test harness build the node here, so what the
 * tests run is what the agent runs. Everything that reads the time or waits takes `deps.clock`.
 */
import { type AnyActorLogic, type InspectionEvent, type Observer, createActor, fromPromise } from 'xstate';
import type { SourceName } from '../api/types.ts';
import { type Clock, sleepOn } from '../clock.ts';
import { runtimeClassLister } from '../client/runtimeClasses.ts';
import { serviceLister } from '../client/services.ts';
import { nodeEventRecorder, nodeReference } from '../eventrecorder/recorder.ts';
import type { NodeDns } from '../kuberuntime/dns.ts';
import { orphanCleanup } from '../kuberuntime/orphans.ts';
import type { PodCluster, PodHost, StartedContainerType } from '../kuberuntime/podWork.ts';
import type { MemoryFeatures } from '../kuberuntime/resources.ts';
import { ContainerGc } from '../kuberuntime/gc.ts';
import { ImageGcManager } from '../kuberuntime/imageGC.ts';
import { containerGcPolicy, imageGcPolicy } from '../cli/config.ts';
import type { Logger } from '../log.ts';
import { admissionView } from '../node/admissionView.ts';
import { runtimeNetworkError, unhealthyReason } from '../node/health.ts';
import type { KernelLog } from '../node/kernelLog.ts';
import { nodeOwner } from '../nodelease/lease.ts';
import type { MachineInfo } from '../node/nodeObject.ts';
import { NodeRecord } from '../node/record.ts';
import { runtimeStatusReader } from '../node/runtimeStatus.ts';
import type { ClusterDeps, NodeConfig, NodeMounter } from '../nodeloop/parts.ts';
import { plegMachineWith } from '../pleg/pleg.ts';
import { createRelister } from '../pleg/relister.ts';
import { podMachineWith } from '../pod/pod.ts';
import { createPodEffects } from '../pod/podEffects.ts';
import { type DesiredPods, PodManager } from '../pod/podManager.ts';
import { podCluster, podCri, podHost, podObserve, podsDirOf } from '../pod/podWork.ts';
import { nodePods } from '../podworkers/activePods.ts';
import { type PodWorkerStages, PodStages } from '../podworkers/podStages.ts';
import { type PodWorkType, timedPodEffects } from '../podworkers/workDuration.ts';
import { type ProbeMetrics, createProbeManagerLogic } from '../prober/manager.ts';
import { CallsInFlight, describeHanging, hangingCallThresholdMs } from '../runtime/callsInFlight.ts';
import { type ImageService, type RuntimeHandler, type RuntimeService, type RuntimeStatusInfo, definedOnly } from '../runtime/types.ts';
import { StatsProvider } from '../stats/provider.ts';
import { type PodStatusReader, StatusManager } from '../status/manager.ts';
import { diskOnly, systemMounter } from '../volumes/mounter.ts';
import type { VolumeDeps } from '../volumes/setUp.ts';
import { VolumeWorld } from '../volumes/world.ts';
import { CsiOperations, csiApiReads } from '../volumes/csi/operations.ts';
import { CsiBlockOperations } from '../volumes/csi/block.ts';
import { systemLoopDevices } from '../volumes/blockMap.ts';
import { CsiNodeClient } from '../volumes/csi/client.ts';
import { CsiDrivers } from '../volumes/csi/drivers.ts';
import { type NodeInfoSource, csiPlugin } from '../volumes/csi/registration.ts';
import { PLUGIN_TYPES } from '../pluginregistration/registration.ts';
import type { PluginHandler } from '../pluginregistration/handler.ts';
import { AllocationManager } from '../allocation/manager.ts';
import { ContainerManager, type NodeCgroupSettings } from '../cm/containerManager.ts';
import { createPodsLogic } from './dispatch.ts';
import { NodeFacts, type NodeFactsView, nodeFactsWriter } from './nodeFacts.ts';
import type { CredentialSource } from '../credentialprovider/keyring.ts';
import { type LoopInputs, nodeLoopsOn } from './nodeLoops.ts';
import { type PodStartObserver, followPodStarts } from './podStartupLatency.ts';
import { type RuntimeConditions, syncLoopMachine } from './syncLoop.ts';

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
  /** The runtime's image filesystem holds files it only counts (sim://'s): its usage is taken from the disk's free space (stats/provider.ts). */
  imageFsSimulated?: boolean;
  /** The machine's cgroup version, swap controller and huge page sizes (src/cm/memoryFeatures.ts): each container's HugeTLB and swap settings. */
  memoryFeatures: MemoryFeatures;
  /** The machine's kernel log, for the OOM watcher; absent: not followed. */
  kernelLog?: KernelLog;
  /** The node's cgroup tree as the agent made it (--cgroups-per-qos, src/cm/open.ts); absent: no pod or QoS cgroups. */
  nodeCgroups?: NodeCgroupSettings;
  /**
   * What the runtime's Status said it supports, read at start (StatusResponse.features); absent:
   * it did not answer then, and admission does not check what depends on it.
   */
  runtimeFeatures?: { supplementalGroupsPolicy: boolean };
  /** The runtime's sandbox image as its verbose Status named it at start (the image GC keeps it); absent: not said. */
  sandboxImage?: string;
  /** The node's keyrings, asked in order after the pods' pull secrets: its docker config files, its credential provider plugins; absent: none. */
  nodeCredentials?: readonly CredentialSource[];
  /**
   * The runtime's conditions as its Status answered at start: the network state pods are synced
   * against until the syncLoop's first poll answers; absent: taken as ready until then.
   */
  runtimeConditions?: RuntimeStatusInfo['conditions'];
  /**
   * The runtime's handlers as its Status answered at start (none reported: empty): a pod synced
   * before the syncLoop's first poll is checked against them; absent: not known until then.
   */
  runtimeHandlers?: readonly RuntimeHandler[];
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
  /** The syncLoop routed an event of this type to the pod workers. */
  eventRouted(type: string): void;
  /** The status writer's work so far (in a cluster). */
  statusWrites(progress: { queued: number; writes: number; deletes: number }): void;
}

export type Node = ReturnType<typeof composeNode>;

/** What the volume plugins need of the node, as its pods' work has it now (the allocatable memory may change). */
function podVolumeDeps(host: PodHost, cluster: PodCluster | undefined, log: Logger): VolumeDeps {
  const allocatable = host.allocatable?.();
  return {
    podsDir: host.podsDir!,
    now: host.now,
    log,
    mounter: host.mounter ?? diskOnly,
    ...(cluster ? { objects: cluster.objects, tokens: cluster.tokens } : {}),
    ...(allocatable ? { allocatable } : {}),
  };
}

/** The shared tick of the work queue: pods due for a resync are synced within this. */
const syncTickMs = 1_000;
/** How often housekeeping runs (pkg/kubelet/kubelet.go housekeepingPeriod). */
const housekeepingMs = 2_000;
/** Delay before retrying a pod whose sync failed (pkg/kubelet/pod_workers.go backOffPeriod). */
const errorBackoffMs = 10_000;

export function composeNode(deps: NodeDeps) {
  const { config, clock, log, cluster, metrics = {} } = deps;
  const now = () => clock.now();
  const recorder = nodeEventRecorder({ api: cluster?.api, nodeName: config.nodeName, clock, log });
  const facts = NodeFacts.atStart({ conditions: deps.runtimeConditions, handlers: deps.runtimeHandlers }, deps.sources?.expected ?? []);
  const podManager = new PodManager();
  const statuses = new StatusManager();
  const stages = new PodStages();
  const allocation = AllocationManager.checkpointed(config.rootDir, clock, log);
  const pods = nodePods({ stages, desired: (uid) => podManager.get(uid), desiredHas: (uid) => podManager.has(uid), status: (uid) => statuses.get(uid), allocated: (pod) => allocation.allocatedPod(pod) });
  const nodeRecord = new NodeRecord();
  const admission = admissionView({ config, inCluster: cluster !== undefined, record: nodeRecord, ...definedOnly({ machine: deps.machine, runtimeFeatures: deps.runtimeFeatures }) });
  const services = cluster && serviceLister(cluster.api, clock, log);
  const runtimeClasses = cluster && runtimeClassLister(cluster.api, clock, log);
  const podClusterParts = cluster && services && runtimeClasses && podCluster(cluster.api, { services, runtimeClasses }, clock, log);
  const cgroups = deps.nodeCgroups && new ContainerManager({ ...deps.nodeCgroups, activePods: pods.active, log });
  const mounter = deps.mounter ?? systemMounter(podsDirOf(config.rootDir), log);
  const cri = podCri(deps.runtime, deps.images, config, log, deps.nodeCredentials);
  // Claims and their volumes are read live, as the kubelet's populator reads them.
  const claims = cluster && { claim: cluster.api.getPersistentVolumeClaim.bind(cluster.api), volume: cluster.api.getPersistentVolume.bind(cluster.api) };
  const csiApi = cluster && csiApiReads(cluster.api);
  const volumeWorld = new VolumeWorld({ clock, ...definedOnly({ claims, csiDrivers: csiApi?.csiDriver }) });
  const host = podHost(config, {
    ...{ clock, log, mounter, memoryFeatures: deps.memoryFeatures, allocatable: () => admission().allocatable, runtimeHandlers: () => facts.runtimeHandlers(), volumes: volumeWorld },
    ...definedOnly({ podCgroups: cgroups, dns: deps.dns, machineMemory: deps.machineMemory }),
  });
  const startup = followPodStarts(metrics, statuses, pods.desired, now);
  const work = { cri, host, observe: podObserve(recorder, log, metrics, startup), resize: allocation, ...definedOnly({ cluster: podClusterParts }) };
  const callsInFlight = new CallsInFlight(now, log, hangingCallThresholdMs(config.runtimeRequestTimeoutMs));
  const hostIP = config.nodeIp?.split(',')[0];
  const effects = createPodEffects({ work, statuses, callsInFlight, runtimeName: deps.runtimeName, networkError: () => facts.networkError(), ...definedOnly({ hostIP }) });
  const podMachine = podMachineWith(metrics.podWorked ? timedPodEffects(effects, now, metrics.podWorked.bind(metrics)) : effects);
  const relister = createRelister(cri.runtime, now, log, metrics.relisted?.bind(metrics));
  const stats = new StatsProvider({
    ...{ nodeName: config.nodeName, runtime: cri.runtime, images: deps.images, podLogsDir: config.podLogsDir, rootDir: config.rootDir, podsDir: podsDirOf(config.rootDir), now, log },
    volumes: volumeWorld,
    ...definedOnly({ machineMemory: deps.machineMemory, imageFsSimulated: deps.imageFsSimulated }),
  });
  const imageGc = new ImageGcManager({
    ...{ runtime: cri.runtime, images: deps.images, imageFs: () => stats.imageFs(), pulling: () => cri.puller.pulling(), policy: imageGcPolicy(config), now, log, recorder },
    ...{ node: nodeReference(config.nodeName), ...definedOnly({ sandboxImage: deps.sandboxImage }) },
    ...(cri.pullRecords ? { afterFreeingSpace: cri.pullRecords.pruneUnknownRecords.bind(cri.pullRecords) } : {}),
  });
  const containerGc = new ContainerGc({ runtime: cri.runtime, now, log, policy: containerGcPolicy(config), pods, sourcesReady: () => facts.sourcesReady() });
  // The CSI volume plugin (its registration writes the Node and the CSINode, so on a standalone node it
  // fails as the kubelet's does); the plugin manager's handlers by type (kubelet.go:
  // pluginManager.AddHandler(CSIPlugin, csi.PluginHandler)).
  const csiDrivers = new CsiDrivers();
  const csi = csiPlugin({ api: cluster?.api, nodeName: config.nodeName, drivers: csiDrivers, nodeInfo: csiNodeInfo, sleep: sleepOn(clock), log });
  const pluginHandlers = new Map<string, PluginHandler>([[PLUGIN_TYPES.csi, csi.handler]]);
  const csiOperations = new CsiOperations({
    ...{ rootDir: config.rootDir, nodeName: config.nodeName, drivers: { endpoint: (name) => csiDrivers.get(name)?.endpoint ?? null }, attach: volumeWorld },
    ...definedOnly({ api: csiApi, tokens: podClusterParts?.tokens }),
  });
  // A mapped raw block device is held open by a loop device (volumepathhandler AttachFileDevice).
  const loopDevices = systemLoopDevices();
  const loops = nodeLoopsOn({
    ...{ config, runtime: cri.runtime, images: deps.images, clock, log, recorder, nodeRecord, stats, mounter, pods, statuses, observe: metrics, imageGc, containerGc },
    health: () => facts.health(),
    pluginHandlers,
    storageError: () => csi.storageError(),
    volumes: {
      world: volumeWorld,
      deps: () => podVolumeDeps(host, podClusterParts, log),
      csi: csiOperations,
      block: {
        csi: new CsiBlockOperations({ rootDir: config.rootDir, nodeName: config.nodeName, csi: csiOperations, attach: volumeWorld, mounter, loops: loopDevices }),
        loops: loopDevices,
      },
    },
    ...definedOnly({ cluster, tokens: podClusterParts?.tokens, kernelLog: deps.kernelLog }),
  });
  const runtimeCleanup = orphanCleanup(work, () => relister.runningPodUids(), cgroups);
  const mirrorPods = cluster && { api: cluster.api, nodeName: config.nodeName, owner: () => (nodeRecord.uid ? nodeOwner({ name: config.nodeName, uid: nodeRecord.uid }) : null) };
  const podWorkers = createPodsLogic({
    ...{ podMachine, podManager, statuses, stages, activePods: pods.active, node: admission, recorder, allocation, runtime: runtimeCleanup, metrics, now, log },
    ...{ sourcesReady: () => facts.sourcesReady(), syncFrequencyMs: config.syncFrequencyMs, errorBackoffMs },
    random: deps.random ?? Math.random,
    ...definedOnly({ mirrorPods }),
  });
  const probes = createProbeManagerLogic({ statuses, podManager, runtime: cri.runtime, clock, random: deps.random ?? Math.random, log, recorder, metrics });
  const readRuntimeStatus = runtimeStatusReader(cri.runtime, config.runtimeRequestTimeoutMs, log);
  const runtimeStatus = fromPromise<RuntimeConditions>(({ signal }) => readRuntimeStatus(signal));
  const actors = { ...loops.logic, pods: podWorkers, pleg: plegMachineWith(relister), probes, facts: nodeFactsWriter(facts), runtimeStatus, ...definedOnly({ sources: deps.sources?.logic }) };
  const syncLoop = createActor(syncLoopMachine.provide({ actors }), { systemId: 'syncLoop', clock, input: syncLoopInput(deps, loops.inputs), ...definedOnly({ inspect: deps.inspect }) });
  return {
    syncLoop,
    podManager: podManager as DesiredPods,
    statuses: statuses as PodStatusReader,
    stages: stages as PodWorkerStages,
    facts: facts as NodeFactsView,
    recorder,
    allocation,
    stats,
    /** The CSI drivers registered on the node, by name: where the CSI client finds each one's endpoint. */
    csiDrivers,
    unhealthyReason: () => unhealthyReason(facts.health(), now()),
    hangingCalls: () => describeHanging(callsInFlight.hanging(), now()),
    /** Starts the node: the Service watch, then the syncLoop and all it runs. */
    start() {
      services?.start();
      runtimeClasses?.start();
      syncLoop.subscribe({ error: (err) => log('error', 'syncLoop failed', { err }) });
      syncLoop.start();
      recorder.event(nodeReference(config.nodeName), 'Normal', 'Starting', 'Starting kubelet.');
      if (deps.nodeCgroups?.enforcePods) recorder.event(nodeReference(config.nodeName), 'Normal', 'NodeAllocatableEnforced', 'Updated Node Allocatable limit across pods');
    },
    /** Stops the actors; the pods' containers keep running. */
    stop() {
      services?.stop();
      runtimeClasses?.stop();
      recorder.stop();
      syncLoop.stop();
      allocation.flush();
    },
  };
}

/** A registering driver's NodeGetInfo, over the CSI client on the endpoint it registered (csi_plugin.go RegisterPlugin). */
const csiNodeInfo: NodeInfoSource = (endpoint, signal) => new CsiNodeClient(endpoint).nodeGetInfo({ signal });

/** The syncLoop's settings: its ticks, the PLEG's periods (evented where the runtime streams events, containerd 1.7+), the loops' inputs. */
function syncLoopInput(deps: NodeDeps, loops: LoopInputs) {
  const { config } = deps;
  return {
    expectedSources: deps.sources?.expected ?? [],
    syncTickMs,
    housekeepingMs,
    pleg: { periodMs: config.plegRelistPeriodMs, ...(config.eventedPleg ? { evented: { relistPeriodMs: config.eventedPlegRelistPeriodMs } } : {}) },
    loops,
    ...(deps.runtimeConditions ? { networkError: runtimeNetworkError(deps.runtimeConditions) } : {}),
  };
}
