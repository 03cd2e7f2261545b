/**
 * The event catalogue: every event the agent's actors send one another, by namespace, with the
 * creators used where an event is made in more than one place. Actors declare which of these they
 * accept (a subset of `AgentEvent`); the syncLoop's routing table and the visualizer's payload
 * table are checked against this file by the compiler.
 *
 *   CONFIG.*   sources → syncLoop → pod workers: pods added, updated, removed, deleted, reconciled
 *   SOURCE.*   sources → syncLoop: a source delivered its first snapshot, or failed to read;
 *              the API source's mirror pods (→ pod workers, which keep mirrors in step)
 *   PLEG.*     pleg → syncLoop → pod workers → pod: a container started, died or was removed;
 *              pleg → syncLoop: a relist finished or failed (runtime health)
 *   RELIST.*, STREAM.*   inside the pleg: its own relist requests and its event stream's news
 *   PROBE.*    probe manager → syncLoop → pod workers → pod: a probe's result changed
 *   TICK.*     syncLoop → pod workers / housekeeping: the shared resync and housekeeping ticks
 *   POD.*      pod workers → pod: commands (UPDATE, SYNC, KILL, RELEASE);
 *              pod → pod workers: reports (SYNCED, TERMINATING, TERMINATED, FINISHED), and its end (ENDED)
 *   CRI.*      a pod's effect actor → itself: each runtime call it made, for inspectors only
 *   OOM.*      the OOM watcher's kernel log follower → the watcher: a system OOM, the log ended
 *   PLUGINS.*  inside the plugin manager: its watcher's sockets created and removed, the
 *              operations its reconciler asks its executor for, and how they went
 *   VOLUMES.*  the volume world → the volume manager's loop: pods' volumes to set up, refresh, tear down
 *   VOLUME.*   the volume manager's loop → one pod volume's actor: refresh it, tear it down
 *   CERTIFICATE.*  → a certificate manager: its template changed (the serving certificate's addresses)
 *   NODE.*     syncLoop → node status loop: the runtime's health changed (report it now);
 *              eviction manager → syncLoop → node status loop and pod workers: the node's
 *              pressure conditions changed; eviction manager → syncLoop → pod workers → pod: evict
 *              a pod (POD.KILL with the terminal status the eviction gives it)
 */
import type { CertificateTemplate } from './api/cluster.ts';
import type { NodePressureCondition, ProbeKind, ProbeResult, Pod, SourceName } from './api/types.ts';
import type { RuntimeHandler } from './runtime/types.ts';

// ---- CONFIG.* and SOURCE.* -------------------------------------------------------------------

/** The kinds of change a merged config update carries (pkg/kubelet/types/pod_update.go PodOperation). */
const configOps = ['ADD', 'UPDATE', 'REMOVE', 'DELETE', 'RECONCILE'] as const;
export type ConfigOp = (typeof configOps)[number];

export type ConfigEvent = { type: `CONFIG.${ConfigOp}`; source: SourceName; pods: Pod[] };

export type SourceEvent =
  | { type: 'SOURCE.SEEN'; source: SourceName }
  /** Every configured source has been seen (the syncLoop tells it once, config.go SeenAllSources). */
  | { type: 'SOURCE.ALL_SEEN' }
  /**
   * A source could not read or run something; `warning`: the kubelet records an event on the pod
   * for it (a duplicate name, an API pod the node cannot run), which the node's recorder writes.
   */
  | { type: 'SOURCE.ERROR'; source: SourceName; message: string; warning?: SourceWarning }
  /** The mirror pods the API source sees now (never run; matched against the static pods). */
  | { type: 'SOURCE.MIRRORS'; pods: Pod[] }
  /** How a source is doing: the API source `listing`, `watching` (from a version), `backingOff`. */
  | { type: 'SOURCE.STATE'; source: SourceName; phase: string; detail: string };

/** The event a source asks the node to record on a pod it left out. */
export interface SourceWarning {
  pod: Pod;
  reason: string;
  message: string;
}

export const configEvent = (op: ConfigOp, source: SourceName, pods: Pod[]): ConfigEvent => ({ type: `CONFIG.${op}`, source, pods });

// ---- PLEG.* ---------------------------------------------------------------------------------

/** The container lifecycle events the PLEG tells (pkg/kubelet/pleg/pleg.go PodLifeCycleEventType). */
const plegContainerEventTypes = ['PLEG.CONTAINER_STARTED', 'PLEG.CONTAINER_DIED', 'PLEG.CONTAINER_REMOVED'] as const;
export type PlegEventType = (typeof plegContainerEventTypes)[number];

export interface PlegEvent {
  type: PlegEventType;
  podUid: string;
  /** A container id, or the sandbox id for the sandbox's own lifecycle. */
  containerId: string;
}

export const isPlegEvent = (event: { type: string }): event is PlegEvent => (plegContainerEventTypes as readonly string[]).includes(event.type);

/** What the PLEG tells its parent: container events, and how each relist went (runtime health). */
export type PlegReport =
  | PlegEvent
  | { type: 'PLEG.RELISTED'; at: number; durationMs: number }
  | { type: 'PLEG.RELIST_FAILED'; error: string };

/** What one event from the runtime's container event stream means to the PLEG. */
export interface StreamUpdate {
  events: PlegEvent[];
  /** The event named a container whose pod is not known: relist to find out. */
  relist: boolean;
}

/** Why the runtime's container event stream ended. */
export interface StreamEnd {
  /** The runtime has no event stream (gRPC UNIMPLEMENTED): do not try again. */
  unimplemented: boolean;
  error: string;
}

/** Events the PLEG sends itself and receives from its stream actor. */
export type PlegInternalEvent =
  | { type: 'RELIST.NOW' }
  | { type: 'RELIST.DONE' }
  | ({ type: 'STREAM.UPDATE' } & StreamUpdate)
  | ({ type: 'STREAM.ENDED' } & StreamEnd);

// ---- PROBE.* --------------------------------------------------------------------------------

/** A probe worker's result for a container changed (the probe manager sends only changes). */
export type ProbeResultEvent = {
  type: 'PROBE.RESULT';
  podUid: string;
  containerId: string;
  containerName: string;
  kind: ProbeKind;
  result: ProbeResult;
};

// ---- TICK.* ---------------------------------------------------------------------------------

/**
 * `TICK.RUNTIME_BACK`: the runtime answers again after relists failed; pods whose last sync
 * failed (most likely because of it) are synced now rather than after their error back-off.
 */
export type TickEvent = { type: 'TICK.SYNC' } | { type: 'TICK.HOUSEKEEPING' } | { type: 'TICK.RUNTIME_BACK' };

// ---- POD.* ----------------------------------------------------------------------------------

/** Why a pod actor gets a new spec (pkg/kubelet/types/types.go SyncPodType: `create` and `update`; its `sync` is POD.SYNC here and its `kill` POD.KILL). */
export type UpdateType = 'create' | 'update';

/**
 * The terminal status a kill gives its pod (the kubelet's KillPodOptions.PodStatusFunc): phase
 * Failed with this reason and message, and a DisruptionTarget condition with `disruptionReason`
 * when there is one (a local-storage eviction has none: eviction_manager.go localStorageEviction).
 */
export interface KillStatus {
  reason: string;
  message: string;
  disruptionReason?: string;
}

/** Commands to one pod actor. */
type PodCommand =
  | { type: 'POD.UPDATE'; pod: Pod; updateType: UpdateType }
  | { type: 'POD.SYNC' }
  | { type: 'POD.KILL'; gracePeriodSeconds?: number; deleted?: boolean; reason?: string; status?: KillStatus }
  /** The supervisor lets go of the actor (the pod is forgotten, or the agent is stopping). */
  | { type: 'POD.RELEASE' };

/** Everything a pod actor accepts. */
export type PodEvent = PodCommand | PlegEvent | ProbeResultEvent;

/** The pieces of a pod actor's work: a sync, a termination, a cleanup. */
export type PodWork = 'sync' | 'terminate' | 'cleanup';

/** What a pod actor reports to its supervisor. */
export type PodReport =
  | {
      type: 'POD.SYNCED';
      uid: string;
      ok: boolean;
      retryAfterMs?: number;
      /** What a failed sync met (its errors, joined): the pod workers retry a network not ready sooner. */
      error?: string;
    }
  /** A piece of work failed and will be retried; `pod` is its `namespace/name`. */
  | { type: 'POD.FAILED'; uid: string; pod: string; work: PodWork; error: string }
  /** Termination began, asked for or on the pod's own (a terminal phase, a deletion seen at start). */
  | { type: 'POD.TERMINATING'; uid: string }
  | { type: 'POD.TERMINATED'; uid: string }
  | { type: 'POD.FINISHED'; uid: string; restartRequested: boolean };

/**
 * A pod actor ended, as the pod workers saw it (pod → its own subscription → pod workers):
 * released, so its systemId is free; or failed (`error`: a bug, not a runtime error).
 */
export type PodEnded = { type: 'POD.ENDED'; uid: string; error?: unknown };

// ---- CRI.* ----------------------------------------------------------------------------------

/** A runtime call of a pod's effect actor, as the actor records it for inspectors. */
export type RuntimeCallEvent =
  | { type: 'CRI.STARTED'; callId: number; call: string; target: string }
  | { type: 'CRI.FINISHED'; callId: number; call: string; target: string; durationMs: number; error?: string };

// ---- NODE.* ---------------------------------------------------------------------------------

/**
 * The node's own news: the runtime's health flipped, so Ready may have changed; the pressure
 * conditions now True (all of them, in the kubelet's order; none: no pressure); a pod to evict,
 * with its grace period and the status it ends with.
 */
export type NodeEvent =
  | { type: 'NODE.HEALTH_CHANGED' }
  /** The runtime's network as its Status said at the last poll (null: ready). */
  | { type: 'NODE.RUNTIME_NETWORK'; error: string | null }
  | { type: 'NODE.RUNTIME_HANDLERS'; handlers: readonly RuntimeHandler[] }
  | { type: 'NODE.PRESSURE'; conditions: NodePressureCondition[] }
  | { type: 'NODE.EVICT_POD'; uid: string; gracePeriodSeconds: number; status: KillStatus };

/** Inside the OOM watcher: an OOM of the whole machine (its event recorded), or the kernel log that can no longer be read. */
export type OomWatcherEvent = { type: 'OOM.SYSTEM'; process: string; pid: number } | { type: 'OOM.LOG_ENDED'; error: string };

/** A plugin in the plugin manager's actual state: its socket, the socket's generation it was registered from, what GetInfo said. */
export interface PluginRecord {
  path: string;
  uuid: string;
  type: string;
  name: string;
  /** Where the plugin's own API is served (GetInfo's endpoint; the registration socket when it gave none). */
  endpoint: string;
}

/** The plugin manager's own news (src/pluginmanager): what its watcher saw, and its operations. */
export type PluginManagerEvent =
  /** A plugin socket appeared or was replaced under the registry directory (the desired state's AddOrUpdatePlugin). */
  | { type: 'PLUGINS.SOCKET_CREATED'; path: string }
  | { type: 'PLUGINS.SOCKET_REMOVED'; path: string }
  /** The registry directory cannot be made or watched: no plugin can register. */
  | { type: 'PLUGINS.WATCH_FAILED'; error: string }
  /** reconciler → executor: the operations the states call for (the executor skips those pending or backing off). */
  | { type: 'PLUGINS.OPERATE'; unregister: PluginRecord[]; register: { path: string; uuid: string }[] }
  /** A plugin entered the actual state, validated, before its handler registers it (a removal from then on deregisters it). */
  | { type: 'PLUGINS.ADDED'; plugin: PluginRecord }
  /** A plugin left the actual state, before its handler deregisters it. */
  | { type: 'PLUGINS.REMOVED'; path: string }
  /** An operation ended: `error` null when it succeeded; `retryAfterMs` when it failed, its back-off. */
  | { type: 'PLUGINS.OPERATION_ENDED'; path: string; operation: 'register' | 'unregister'; error: string | null; retryAfterMs?: number }
  /** A handler's start-up work is done (the CSI handler's CSINode initialized). */
  | { type: 'PLUGINS.HANDLER_STARTED'; pluginType: string };

/**
 * The pod status writer's news: a pod's status to write again although it did not change (its
 * static pod's mirror was created); the writer's own resync tick and its progress (statuses
 * waiting, written, pods deleted), inside its loop.
 */
export type StatusWriterEvent =
  | { type: 'STATUS.REWRITE'; uid: string }
  | { type: 'STATUS.RESYNC' }
  | { type: 'STATUS.PROGRESS'; queued: number; writes: number; deletes: number; error: string | null };

/**
 * To a certificate manager: what to request changed (a serving certificate's SANs follow the
 * Node's addresses; null: no IP yet, nothing to request). The manager asks again at once when its
 * certificate lacks something the template asks for and it has not asked for this template yet
 * (certificate_manager.go Start, its templateChanged loop).
 */
export type CertificateEvent = { type: 'CERTIFICATE.TEMPLATE'; template: CertificateTemplate | null };

// ---- VOLUMES.* and VOLUME.* ------------------------------------------------------------------

/** One volume of one pod, as the volume manager runs an actor for it (its id: `<pod uid>/<volume name>`). */
export interface PodVolumeRef {
  id: string;
  uid: string;
  /** `namespace/name`. */
  pod: string;
  /** The pod's name for the volume. */
  outerName: string;
  /** The node's name for it (`kubernetes.io/local-volume/pv-1`). */
  uniqueName: string;
  /** The name its operations report it by: the PersistentVolume's for a claim, else the pod's volume name. */
  specName: string;
  /** The plugin that serves it. */
  kind: 'emptyDir' | 'configMap' | 'secret' | 'downwardAPI' | 'projected' | 'hostPath' | 'hostPathPV' | 'localPV' | 'csiPV' | 'csiInline';
  /** A raw block volume (volumeMode Block, in volumeDevices): mapped into the pod, not mounted (GenerateMapVolumeFunc). */
  map?: true;
  /** Found set up on disk at the agent's start (reconstruction) for a pod that no longer wants it: only torn down. */
  foundOnDisk?: true;
}

/**
 * The volume manager's work: the pods' desired volumes changed (volumes to set up, to set up again
 * to refresh their files, to expand online because their PersistentVolume grew, to tear down),
 * told by the volume world to the volume manager's loop; the loop's commands to one pod volume's actor.
 */
export type VolumeEvent =
  | { type: 'VOLUMES.CHANGED'; mount: PodVolumeRef[]; remount: string[]; expand: string[]; unmount: string[] }
  | { type: 'VOLUME.REMOUNT' }
  | { type: 'VOLUME.EXPAND' }
  | { type: 'VOLUME.UNMOUNT' };

// ---- The whole catalogue ----------------------------------------------------------------------

type AgentEvent =
  | ConfigEvent
  | SourceEvent
  | PlegReport
  | PlegInternalEvent
  | ProbeResultEvent
  | TickEvent
  | PodCommand
  | PodReport
  | PodEnded
  | RuntimeCallEvent
  | NodeEvent
  | OomWatcherEvent
  | PluginManagerEvent
  | StatusWriterEvent
  | CertificateEvent
  | VolumeEvent;

export type AgentEventType = AgentEvent['type'];

/** The event of a type, e.g. `EventOf<'POD.KILL'>`. */
export type EventOf<T extends AgentEventType> = Extract<AgentEvent, { type: T }>;

/**
 * What the syncLoop passes on to the pod workers as it is: config, container events, probe
 * results, the mirror pods seen, a source's warning about a pod (recorded there), the eviction
 * manager's news.
 */
export const routedToPodWorkers = [
  ...configOps.map((op) => `CONFIG.${op}` as const),
  ...plegContainerEventTypes,
  'PROBE.RESULT',
  'SOURCE.MIRRORS',
  'SOURCE.ERROR',
  'NODE.PRESSURE',
  'NODE.EVICT_POD',
] as const satisfies readonly AgentEventType[];
