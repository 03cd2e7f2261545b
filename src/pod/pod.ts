/**
 * The pod actor: one per pod UID, the kubelet's pod worker as a statechart.
 *
 * Phases
 *   starting     Transient: a pod first seen already being deleted (its deletionTimestamp set
 *                while the agent was not watching: a watch gap, a relist, the agent's restart)
 *                goes straight to `terminating` and is never synced, so nothing of it starts and
 *                whatever of it runs is stopped (pkg/kubelet/pod_workers.go UpdatePod: "Pod is
 *                marked for graceful deletion, begin teardown"); any other pod goes on to `syncing`.
 *   syncing      Reconcile the runtime to the spec, again and again. Two regions:
 *                - `worker`: `working` runs one sync (the `syncPod` actor: read the runtime, decide
 *                  with computePodActions, act, publish status); `idle` waits for the next reason
 *                  to sync. Updates that arrive while working are kept in ONE pending slot (the
 *                  newest wins) and run as soon as the sync ends. A PLEG event about what the
 *                  last sync left in place (`seen`, when it needed nothing more) is no reason to
 *                  sync (runtimeSeen.ts); events during a sync count once it has ended.
 *                - `progress`: where the pod stands, as the last sync observed it: `sandbox`,
 *                  `initializing` (`starting` / `running` / `failed` for init container
 *                  `context.progress.index`), `running`. It follows the runtime; it is never
 *                  written on its own.
 *   terminating  Stop every container with the grace period, then the sandbox (`terminatePod`).
 *                A second kill can only shorten the grace period, which restarts the kill with the
 *                shorter one; nothing brings the pod back to `syncing`.
 *   terminated   Final status, and (once the pod is gone from config) removal of its containers
 *                and sandboxes (`cleanupPod`); then `finished`, where the actor waits to be
 *                forgotten by its supervisor. A terminated UID never runs again: a `create` for it
 *                only sets `restartRequested`, and the supervisor starts a fresh actor once this
 *                one has finished.
 *
 *   released     Final. The supervisor let go of the actor: after `finished`, once the pod is gone
 *                from config; or in any state when the agent stops (the pod's containers keep
 *                running, and the next agent adopts them). Leaving stops any invoked work.
 *
 * Events accepted
 *   POD.UPDATE (all states), POD.SYNC and PLEG.* (syncing; ignored after), POD.KILL (all states),
 *   POD.RELEASE (all states), PROBE.RESULT (syncing: recorded in `context.probes`, one entry per
 *   container and kind; a result that differs from what the pod held — a liveness/startup Failure,
 *   startup Success, a readiness change — asks for a sync, which passes the results to computePodActions
 *   and the status; terminating: readiness is recorded; ignored after).
 *
 * Reports to the supervisor
 *   POD.SYNCED after each sync (ok or not, and when a backoff ends), POD.TERMINATING (on entering
 *   `terminating`, whatever led there), POD.TERMINATED, POD.FINISHED;
 *   POD.FAILED whenever a sync, a termination or a cleanup fails, with its error (the supervisor
 *   logs it: pod_workers.go "Error syncing pod, skipping"), before the work is retried.
 *
 * Effect actors (syncPod, terminatePod, cleanupPod) record each runtime call they make as
 * CRI.STARTED / CRI.FINISHED events sent to themselves, for inspectors; the pod never sees them.
 *
 * Never: performs I/O itself (every effect runs in an invoked actor), lets a grace period grow,
 * starts a sync after termination was requested.
 */
import { type AnyActorRef, type ErrorActorEvent, and, assign, enqueueActions, fromPromise, not, sendParent, setup } from 'xstate';
import { type Pod, type PodPhase, podRef, type ProbeKind, type ProbeResult } from '../api/types.ts';
import type { SyncMemory } from '../kuberuntime/startContainer.ts';
import type { ProbeResults } from '../kuberuntime/computePodActions.ts';
import { nextGracePeriod } from './gracePeriod.ts';
import { notProvided } from '../notProvided.ts';
import type { InitStep, PodProgress } from './progress.ts';
import { type RuntimeSeen, isSeen } from './runtimeSeen.ts';
import type { CallTrace } from '../runtime/callTrace.ts';
import { type KillStatus, type PlegEvent, type PodEvent, type PodReport, type PodWork, type ProbeResultEvent, type RuntimeCallEvent, isPlegEvent } from '../events.ts';


interface SyncRequest {
  pod: Pod;
  memory: SyncMemory;
  /** The probe results of the pod's containers, by container ID (absent: none yet). */
  probes?: PodProbeResults;
}

/** Probe results by container ID: liveness and startup for computePodActions, readiness for status. */
export interface PodProbeResults extends ProbeResults {
  readiness: Readonly<Record<string, ProbeResult>>;
}

/**
 * The latest probe result of each container, per kind, for the container ID it was about: one entry
 * per container and kind (a restarted container's entry replaces its predecessor's), plain data.
 */
type PodProbes = Readonly<Record<ProbeKind, Readonly<Record<string, { containerId: string; result: ProbeResult }>>>>;

const noProbes: PodProbes = { liveness: {}, readiness: {}, startup: {} };

/** What the pod assumes of a container without a result: readiness Failure, liveness Success, startup none. */
function currentProbeResult(probes: PodProbes, event: ProbeResultEvent): ProbeResult | undefined {
  const entry = probes[event.kind][event.containerName];
  if (entry?.containerId === event.containerId) return entry.result;
  return event.kind === 'readiness' ? 'Failure' : event.kind === 'liveness' ? 'Success' : undefined;
}

function probeResultsById(probes: PodProbes): PodProbeResults {
  const byId = (kind: ProbeKind) =>
    Object.fromEntries(Object.values(probes[kind]).map(({ containerId, result }) => [containerId, result]));
  return { liveness: byId('liveness'), readiness: byId('readiness'), startup: byId('startup') };
}

export interface SyncOutcome {
  memory: SyncMemory;
  progress: PodProgress;
  phase: PodPhase;
  /** The pod reached Succeeded or Failed: it terminates on its own. */
  isTerminal: boolean;
  /** Container restarts so far, summed over the pod's containers (for display). */
  restarts?: number;
  /** When a backoff expires and another sync could make progress. */
  retryAfterMs?: number;
  /** Non-fatal errors of this sync (the sync is retried sooner). */
  errors: string[];
  /** The runtime as the sync left the pod, when nothing more was to be done there (runtimeSeen.ts). */
  seen?: RuntimeSeen;
}

interface TerminateRequest {
  pod: Pod;
  gracePeriodSeconds: number;
  memory: SyncMemory;
  /** The terminal status the kill gives the pod (an eviction), published before its containers stop. */
  killStatus?: KillStatus | null;
}

interface CleanupRequest {
  pod: Pod;
  /** The pod is gone from config: remove its containers and sandboxes. */
  removeRuntime: boolean;
  memory: SyncMemory;
}

/**
 * The side effects the pod actor invokes; the composition root provides the implementation. Each
 * reports the runtime calls it makes to `calls`.
 */
export interface PodEffects {
  syncPod(request: SyncRequest, signal: AbortSignal, calls: CallTrace): Promise<SyncOutcome>;
  terminatePod(request: TerminateRequest, signal: AbortSignal, calls: CallTrace): Promise<void>;
  cleanupPod(request: CleanupRequest, signal: AbortSignal, calls: CallTrace): Promise<void>;
}

/**
 * The effect actor records each runtime call it makes as an event sent to itself. The actor
 * ignores them; they exist for the inspection API, so the visualizer (or Stately's inspector)
 * sees every call, its duration and its error, while the pod machine runs no macrostep for them.
 */
function callsRecordedOn(self: AnyActorRef): CallTrace {
  // A call can outlive its actor (a preStop hook shared with a later, shorter kill): then it is not recorded.
  const record = (event: RuntimeCallEvent) => {
    if (self.getSnapshot().status === 'active') self.send(event);
  };
  return {
    started: ({ id, call, target }) => record({ type: 'CRI.STARTED', callId: id, call, target }),
    finished: ({ id, call, target }, durationMs, error) => {
      const event: RuntimeCallEvent = { type: 'CRI.FINISHED', callId: id, call, target, durationMs: Math.round(durationMs * 10) / 10 };
      if (error !== undefined) event.error = errorMessage(error);
      record(event);
    },
  };
}

export interface PodContext {
  uid: string;
  ref: string;
  pod: Pod;
  /** The single pending update slot: the newest spec received while a sync ran. */
  pendingPod: Pod | null;
  /** A reason to sync again arrived while a sync ran. */
  syncRequested: boolean;
  /** PLEG events that arrived while a sync ran: news or not once it is done (runtimeSeen.ts). */
  plegWhileSyncing: PlegEvent[];
  /** What the last sync left the pod at in the runtime, when it needed nothing more; a PLEG event telling the same starts no sync. */
  seen: RuntimeSeen | null;
  progress: PodProgress;
  phase: PodPhase;
  memory: SyncMemory;
  lastError: string | null;
  /** Set once termination is requested; only ever shrinks. */
  gracePeriodSeconds: number | null;
  /** The terminal status a kill asked for (an eviction); the newest such kill's. */
  killStatus: KillStatus | null;
  /** The pod is gone from config (removed or deleted): its runtime objects are removed at the end. */
  deleted: boolean;
  restartRequested: boolean;
  /** Syncs run so far (for the visualizer and tests). */
  syncCount: number;
  /** Container restarts, as the last sync counted them (for display). */
  restarts: number;
  /** The probe manager's latest results for this pod's containers. */
  probes: PodProbes;
}

/** What a released pod actor leaves behind: which UID it was. */
interface PodOutput {
  uid: string;
}

export interface PodInput {
  pod: Pod;
}

const initialMemory: SyncMemory = { backoff: {}, reasons: {} };
const killRetryMs = 1_000;

/**
 * The pod machine as it is drawn (the model tests and the visualizer use this definition); its
 * effect actors only fail until `podMachineWith` provides the real ones.
 */
export const podMachine = setup({
  types: {
    context: {} as PodContext,
    events: {} as PodEvent,
    input: {} as PodInput,
    output: {} as PodOutput,
  },
  actors: {
    syncPod: fromPromise<SyncOutcome, SyncRequest>(notProvided('pod', 'syncPod')),
    terminatePod: fromPromise<void, TerminateRequest>(notProvided('pod', 'terminatePod')),
    cleanupPod: fromPromise<void, CleanupRequest>(notProvided('pod', 'cleanupPod')),
  },
  delays: {
    killRetry: killRetryMs,
  },
  guards: {
    hasPendingWork: ({ context }) => context.pendingPod !== null || context.syncRequested,
    /** A PLEG event about what the last sync left in place: no news. */
    plegEventSeen: ({ context, event }) => isPlegEvent(event) && isSeen(context.seen ?? undefined, event),
    podDeleting: ({ context }) => context.pod.metadata.deletionTimestamp !== undefined,
    updateDeletesPod: ({ event }) =>
      event.type === 'POD.UPDATE' && event.pod.metadata.deletionTimestamp !== undefined,
    isCreate: ({ event }) => event.type === 'POD.UPDATE' && event.updateType === 'create',
    shortensGrace: ({ context, event }) => {
      if (event.type !== 'POD.KILL' && event.type !== 'POD.UPDATE') return false;
      const pod = event.type === 'POD.UPDATE' ? event.pod : context.pod;
      const override = event.type === 'POD.KILL' ? event.gracePeriodSeconds : undefined;
      const next = nextGracePeriod(context.gracePeriodSeconds ?? undefined, pod, override);
      return context.gracePeriodSeconds !== null && next < context.gracePeriodSeconds;
    },
    isNewDeletion: ({ context, event }) =>
      !context.deleted &&
      ((event.type === 'POD.KILL' && event.deleted === true) ||
        (event.type === 'POD.UPDATE' && event.pod.metadata.deletionTimestamp !== undefined)),
    atSandbox: ({ context }) => context.progress.stage === 'sandbox',
    atInit: ({ context }) => context.progress.stage === 'initializing',
    atRunning: ({ context }) => context.progress.stage === 'running',
    /** A probe result that changes what a sync would do or publish (a kill, started, ready). */
    probeChangesPod: ({ context, event }) =>
      event.type === 'PROBE.RESULT' && currentProbeResult(context.probes, event) !== event.result,
    isReadinessResult: ({ event }) => event.type === 'PROBE.RESULT' && event.kind === 'readiness',
    initStep: ({ context }, step: InitStep) =>
      context.progress.stage === 'initializing' && context.progress.step === step,
  },
  actions: {
    keepPending: assign({
      pendingPod: ({ event, context }) => (event.type === 'POD.UPDATE' ? event.pod : context.pendingPod),
    }),
    markSyncRequested: assign({ syncRequested: true }),
    keepPlegEvent: assign({
      plegWhileSyncing: ({ context, event }) => (isPlegEvent(event) ? [...context.plegWhileSyncing, event] : context.plegWhileSyncing),
    }),
    recordProbe: assign({
      probes: ({ context, event }) => {
        if (event.type !== 'PROBE.RESULT') return context.probes;
        const { kind, containerName, containerId, result } = event;
        return { ...context.probes, [kind]: { ...context.probes[kind], [containerName]: { containerId, result } } };
      },
    }),
    takePending: assign(({ context }) => ({
      pod: context.pendingPod ?? context.pod,
      pendingPod: null,
      syncRequested: false,
    })),
    applyUpdate: assign({
      pod: ({ event, context }) => (event.type === 'POD.UPDATE' ? event.pod : context.pod),
    }),
    recordSync: assign(({ context }, outcome: SyncOutcome) => ({
      memory: outcome.memory,
      progress: outcome.progress,
      phase: outcome.phase,
      restarts: outcome.restarts ?? context.restarts,
      lastError: outcome.errors[0] ?? null,
      syncCount: context.syncCount + 1,
      seen: outcome.seen ?? null,
      // An event that came during the sync and tells more than its end saw: sync again.
      syncRequested: context.syncRequested || context.plegWhileSyncing.some((e) => !isSeen(outcome.seen, e)),
      plegWhileSyncing: [],
    })),
    recordError: assign(({ context }, error: unknown) => ({
      lastError: errorMessage(error),
      syncCount: context.syncCount + 1,
      seen: null,
      syncRequested: context.syncRequested || context.plegWhileSyncing.length > 0,
      plegWhileSyncing: [],
    })),
    /** Tells the supervisor why the sync failed, if it did, and when this pod wants its next sync. */
    reportSynced: enqueueActions(({ context, enqueue }, result: { outcome: SyncOutcome } | { error: unknown }) => {
      const errors = 'outcome' in result ? result.outcome.errors : [errorMessage(result.error)];
      if (errors.length > 0) enqueue.sendParent(failure(context, 'sync', errors.join('; ')));
      const report: PodReport = { type: 'POD.SYNCED', uid: context.uid, ok: errors.length === 0 };
      if (errors.length > 0) report.error = errors.join('; ');
      if ('outcome' in result && result.outcome.retryAfterMs !== undefined) report.retryAfterMs = result.outcome.retryAfterMs;
      enqueue.sendParent(report);
    }),
    /** Tells the supervisor that a termination or a cleanup failed (it is retried). */
    reportFailed: sendParent(({ context }, params: { work: PodWork; error: unknown }) => failure(context, params.work, errorMessage(params.error))),
    requestTermination: assign(({ context, event }) => {
      // The newest spec wins, even one still waiting in the pending slot.
      const pod = event.type === 'POD.UPDATE' ? event.pod : (context.pendingPod ?? context.pod);
      const override = event.type === 'POD.KILL' ? event.gracePeriodSeconds : undefined;
      return {
        pod,
        pendingPod: null,
        syncRequested: false,
        plegWhileSyncing: [],
        gracePeriodSeconds: nextGracePeriod(context.gracePeriodSeconds ?? undefined, pod, override),
        killStatus: event.type === 'POD.KILL' && event.status ? event.status : context.killStatus,
        deleted:
          context.deleted ||
          (event.type === 'POD.KILL' && event.deleted === true) ||
          pod.metadata.deletionTimestamp !== undefined,
      };
    }),
    markDeleted: assign({ deleted: true }),
    requestRestart: assign({ restartRequested: true }),
    reportTerminating: sendParent(({ context }): PodReport => ({ type: 'POD.TERMINATING', uid: context.uid })),
    reportTerminated: sendParent(({ context }): PodReport => ({ type: 'POD.TERMINATED', uid: context.uid })),
    reportFinished: sendParent(({ context }): PodReport => ({
      type: 'POD.FINISHED',
      uid: context.uid,
      restartRequested: context.restartRequested,
    })),
  },
}).createMachine({
  id: 'pod',
  output: ({ context }): PodOutput => ({ uid: context.uid }),
  context: ({ input }) => ({
    uid: input.pod.metadata.uid,
    ref: podRef(input.pod),
    pod: input.pod,
    pendingPod: null,
    syncRequested: false,
    plegWhileSyncing: [],
    seen: null,
    progress: { stage: 'sandbox' },
    phase: 'Pending',
    memory: initialMemory,
    lastError: null,
    gracePeriodSeconds: null,
    killStatus: null,
    deleted: false,
    restartRequested: false,
    syncCount: 0,
    restarts: 0,
    probes: noProbes,
  }),
  initial: 'starting',
  on: {
    'POD.RELEASE': '.released',
  },
  states: {
    starting: {
      always: [{ guard: 'podDeleting', target: 'terminating', actions: 'requestTermination' }, { target: 'syncing' }],
    },
    syncing: {
      type: 'parallel',
      on: {
        'POD.KILL': { target: 'terminating', actions: 'requestTermination' },
        'POD.UPDATE': { guard: 'updateDeletesPod', target: 'terminating', actions: 'requestTermination' },
      },
      states: {
        worker: {
          initial: 'working',
          states: {
            working: {
              invoke: {
                src: 'syncPod',
                input: ({ context }) => ({ pod: context.pod, memory: context.memory, probes: probeResultsById(context.probes) }),
                onDone: [
                  {
                    guard: ({ event }) => event.output.isTerminal,
                    target: '#pod.terminating',
                    actions: [{ type: 'recordSync', params: ({ event }) => event.output }, 'requestTermination'],
                  },
                  {
                    target: 'idle',
                    actions: [
                      { type: 'recordSync', params: ({ event }) => event.output },
                      { type: 'reportSynced', params: ({ event }) => ({ outcome: event.output }) },
                    ],
                  },
                ],
                onError: {
                  target: 'idle',
                  actions: [
                    { type: 'recordError', params: ({ event }: { event: ErrorActorEvent }) => event.error },
                    { type: 'reportSynced', params: ({ event }: { event: ErrorActorEvent }) => ({ error: event.error }) },
                  ],
                },
              },
              on: {
                'POD.UPDATE': { guard: not('updateDeletesPod'), actions: 'keepPending' },
                'POD.SYNC': { actions: 'markSyncRequested' },
                'PLEG.*': { actions: 'keepPlegEvent' },
                'PROBE.RESULT': [
                  { guard: 'probeChangesPod', actions: ['recordProbe', 'markSyncRequested'] },
                  { actions: 'recordProbe' },
                ],
              },
            },
            idle: {
              always: { guard: 'hasPendingWork', target: 'working', actions: 'takePending' },
              on: {
                'POD.UPDATE': { guard: not('updateDeletesPod'), target: 'working', actions: 'applyUpdate' },
                'POD.SYNC': { target: 'working' },
                'PLEG.*': [{ guard: 'plegEventSeen' }, { target: 'working' }],
                'PROBE.RESULT': [
                  { guard: 'probeChangesPod', target: 'working', actions: 'recordProbe' },
                  { actions: 'recordProbe' },
                ],
              },
            },
          },
        },
        progress: {
          initial: 'sandbox',
          states: {
            sandbox: {
              always: [
                { guard: 'atInit', target: 'initializing' },
                { guard: 'atRunning', target: 'running' },
              ],
            },
            initializing: {
              initial: 'starting',
              always: [
                { guard: 'atSandbox', target: 'sandbox' },
                { guard: 'atRunning', target: 'running' },
              ],
              states: {
                starting: {
                  always: [
                    { guard: { type: 'initStep', params: 'running' }, target: 'running' },
                    { guard: { type: 'initStep', params: 'failed' }, target: 'failed' },
                  ],
                },
                running: {
                  always: [
                    { guard: { type: 'initStep', params: 'starting' }, target: 'starting' },
                    { guard: { type: 'initStep', params: 'failed' }, target: 'failed' },
                  ],
                },
                failed: {
                  always: [
                    { guard: { type: 'initStep', params: 'starting' }, target: 'starting' },
                    { guard: { type: 'initStep', params: 'running' }, target: 'running' },
                  ],
                },
              },
            },
            running: {
              always: [
                { guard: 'atSandbox', target: 'sandbox' },
                { guard: 'atInit', target: 'initializing' },
              ],
            },
          },
        },
      },
    },
    terminating: {
      tags: ['terminating'],
      entry: 'reportTerminating',
      initial: 'killing',
      on: {
        'POD.KILL': [
          { guard: 'shortensGrace', target: '.killing', reenter: true, actions: 'requestTermination' },
          { guard: 'isNewDeletion', actions: 'markDeleted' },
        ],
        'POD.UPDATE': [
          { guard: and(['updateDeletesPod', 'shortensGrace']), target: '.killing', reenter: true, actions: 'requestTermination' },
          { guard: 'isNewDeletion', actions: ['applyUpdate', 'markDeleted'] },
          { guard: 'isCreate', actions: 'requestRestart' },
          { actions: 'applyUpdate' },
        ],
        // Readiness goes on while the containers stop (liveness and startup no longer matter).
        'PROBE.RESULT': { guard: 'isReadinessResult', actions: 'recordProbe' },
      },
      states: {
        killing: {
          invoke: {
            src: 'terminatePod',
            input: ({ context }) => ({
              pod: context.pod,
              gracePeriodSeconds: context.gracePeriodSeconds ?? 1,
              memory: context.memory,
              killStatus: context.killStatus,
            }),
            onDone: { target: '#pod.terminated', actions: 'reportTerminated' },
            onError: {
              target: 'retrying',
              actions: [
                { type: 'recordError', params: ({ event }: { event: ErrorActorEvent }) => event.error },
                { type: 'reportFailed', params: ({ event }: { event: ErrorActorEvent }) => ({ work: 'terminate' as const, error: event.error }) },
              ],
            },
          },
        },
        retrying: { after: { killRetry: 'killing' } },
      },
    },
    terminated: {
      tags: ['terminated'],
      initial: 'cleaning',
      on: {
        // A deletion arriving now still removes the runtime objects: cleanup starts over with it.
        'POD.UPDATE': [
          { guard: 'isNewDeletion', target: '.cleaning', reenter: true, actions: ['applyUpdate', 'markDeleted'] },
          { guard: 'isCreate', actions: 'requestRestart' },
          { actions: 'applyUpdate' },
        ],
        'POD.KILL': { guard: 'isNewDeletion', target: '.cleaning', reenter: true, actions: 'markDeleted' },
      },
      states: {
        cleaning: {
          invoke: {
            src: 'cleanupPod',
            input: ({ context }) => ({ pod: context.pod, removeRuntime: context.deleted, memory: context.memory }),
            onDone: { target: 'finished' },
            onError: {
              target: 'retrying',
              actions: [
                { type: 'recordError', params: ({ event }: { event: ErrorActorEvent }) => event.error },
                { type: 'reportFailed', params: ({ event }: { event: ErrorActorEvent }) => ({ work: 'cleanup' as const, error: event.error }) },
              ],
            },
          },
        },
        retrying: { after: { killRetry: 'cleaning' } },
        finished: { tags: ['finished'], entry: 'reportFinished' },
      },
    },
    released: { type: 'final' },
  },
});

export type PodMachine = typeof podMachine;

/** The pod machine running `effects`, as the composition gives them. */
export function podMachineWith(effects: PodEffects): PodMachine {
  return podMachine.provide({
    actors: {
      syncPod: fromPromise<SyncOutcome, SyncRequest>(({ input, signal, self }) => effects.syncPod(input, signal, callsRecordedOn(self))),
      terminatePod: fromPromise<void, TerminateRequest>(({ input, signal, self }) =>
        effects.terminatePod(input, signal, callsRecordedOn(self)),
      ),
      cleanupPod: fromPromise<void, CleanupRequest>(({ input, signal, self }) => effects.cleanupPod(input, signal, callsRecordedOn(self))),
    },
  });
}

/** The report of a failed piece of work. */
function failure(context: PodContext, work: PodWork, error: string): PodReport {
  return { type: 'POD.FAILED', uid: context.uid, pod: context.ref, work, error };
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
