/**
 * The pod lifecycle as seen from outside, as a small invoke-free machine for `createTestModel`,
 * and the real system it drives: the real pod actor on the TestRuntime with a SimulatedClock.
 *
 * The pod under test has one init container and one regular container, restartPolicy Never (so an
 * exit ends the pod instead of restarting a container), and a 30 s termination grace period.
 *
 *   absent ──ADD──► initializing ──INIT_EXIT_OK──► running ──CONTAINER_EXIT──► terminated
 *                     │  └──INIT_EXIT_FAIL──────────────────────────────────►    │  ▲
 *                     └──KILL──► terminating.graceful ◄──KILL── running          │  │ STOPPED
 *                                 └──KILL_SHORTER──► terminating.shortened ──────┼──┘
 *   running ──RELEASE──► abandoned (the agent stops; the containers keep running) │
 *   terminated ──REMOVE──► removed ──RELEASE──► released                       ◄──┘
 *
 * Each model event maps to what happens to a real pod (a container exits in the fake runtime and
 * the PLEG or the sync tick tells the actor; the supervisor kills, removes or releases it), and
 * each model state to what must then be true of the actor and of the runtime (`LifecycleSut`).
 */
import { type SnapshotFrom, setup, waitFor } from 'xstate';
import { Label } from '../../src/kuberuntime/labels.ts';
import type { HoldController } from '../support/faults.ts';
import type { ContainerStatus } from '../../src/runtime/types.ts';
import { type PodHarness, container, makePod, podHarness } from '../support/pods.ts';

export type LifecycleEvent =
  | { type: 'ADD' }
  | { type: 'INIT_EXIT_OK' }
  | { type: 'INIT_EXIT_FAIL' }
  | { type: 'CONTAINER_EXIT' }
  | { type: 'KILL' }
  | { type: 'KILL_SHORTER' }
  | { type: 'STOPPED' }
  | { type: 'REMOVE' }
  | { type: 'RELEASE' };

export const lifecycleModel = setup({ types: { events: {} as LifecycleEvent } }).createMachine({
  id: 'lifecycle',
  initial: 'absent',
  states: {
    absent: { on: { ADD: 'initializing' } },
    initializing: {
      on: { INIT_EXIT_OK: 'running', INIT_EXIT_FAIL: 'terminated', KILL: 'terminating' },
    },
    running: {
      on: { CONTAINER_EXIT: 'terminated', KILL: 'terminating', RELEASE: 'abandoned' },
    },
    terminating: {
      initial: 'graceful',
      on: { STOPPED: 'terminated' },
      states: {
        graceful: { on: { KILL_SHORTER: 'shortened' } },
        shortened: {},
      },
    },
    terminated: { on: { REMOVE: 'removed' } },
    removed: { on: { RELEASE: 'released' } },
    released: { type: 'final' },
    abandoned: { type: 'final' },
  },
});

export type LifecycleSnapshot = SnapshotFrom<typeof lifecycleModel>;

export const specGrace = 30;
export const shorterGrace = 3;
const tickMs = 1_000;

type PodActor = ReturnType<PodHarness['start']>;

/** A process that runs until stopped and then reports exit code 137, as one killed by a signal does. */
const killedByStop = ['sh', '-c', "trap 'exit 137' TERM; sleep 3600 & wait"];

/** One real pod on the fake runtime, driven by the model's events. */
export class LifecycleSut {
  readonly h = podHarness();
  readonly pod = makePod('life', {
    restartPolicy: 'Never',
    initContainers: [container('init', { command: killedByStop })],
    containers: [container('main', { command: killedByStop })],
    terminationGracePeriodSeconds: specGrace,
  });
  private actorRef: PodActor | undefined;
  private stopHold: HoldController | undefined;
  /** Length of the runtime call log when the pod was first seen terminated. */
  private terminatedAtCall: number | undefined;

  get actor(): PodActor {
    if (this.actorRef === undefined) throw new Error('the pod was not added');
    return this.actorRef;
  }

  get hasActor(): boolean {
    return this.actorRef !== undefined;
  }

  get uid(): string {
    return this.pod.metadata.uid;
  }

  // ---------------------------------------------------------------- events

  async add(): Promise<void> {
    this.tick();
    this.actorRef = this.h.start(this.pod);
    await waitFor(this.actor, (s) => s.matches({ syncing: { worker: 'idle' } }));
  }

  async initExits(exitCode: number): Promise<void> {
    this.tick();
    const init = await this.container('init');
    this.h.runtime.exitContainer(init.id, exitCode);
    if (exitCode === 0) {
      // The periodic sync notices; the init container is done, the regular one starts.
      await this.syncOnce({ type: 'POD.SYNC' });
    } else {
      // The PLEG notices; under restartPolicy Never the pod has failed and terminates.
      this.actor.send({ type: 'PLEG.CONTAINER_DIED', podUid: this.uid, containerId: init.id });
      await this.finished();
    }
  }

  async mainExits(): Promise<void> {
    this.tick();
    const main = await this.container('main');
    this.h.runtime.exitContainer(main.id, 0);
    this.actor.send({ type: 'PLEG.CONTAINER_DIED', podUid: this.uid, containerId: main.id });
    await this.finished();
  }

  /** Kills with the spec's grace period; the stop is held in the runtime, so the pod stays terminating. */
  async kill(): Promise<void> {
    this.tick();
    this.stopHold = this.h.runtime.holdCalls('stopContainer');
    this.actor.send({ type: 'POD.KILL', reason: 'model: kill' });
    await this.stopHold.whenPending(1);
  }

  /** A second kill with a shorter grace period: the stop in flight is cancelled and made again. */
  async killShorter(): Promise<void> {
    this.tick();
    const hold = this.requireHold();
    this.actor.send({ type: 'POD.KILL', gracePeriodSeconds: shorterGrace, reason: 'model: kill sooner' });
    // Leaving `killing` aborted the held stop synchronously; wait for the new one.
    if (hold.pending !== 0) throw new Error('the stop in flight was not cancelled');
    await hold.whenPending(1);
  }

  /** The runtime finishes stopping the containers. */
  async stopped(): Promise<void> {
    this.tick();
    this.requireHold().releaseAll();
    this.stopHold = undefined;
    await this.finished();
  }

  /** The pod is removed from config. */
  async remove(): Promise<void> {
    this.tick();
    this.actor.send({ type: 'POD.KILL', deleted: true, reason: 'model: removed from config' });
    await waitFor(this.actor, (s) => s.matches({ terminated: 'finished' }) && s.context.deleted);
  }

  release(): void {
    this.tick();
    this.actor.send({ type: 'POD.RELEASE' });
  }

  // ---------------------------------------------------------------- observations

  async containers(): Promise<ContainerStatus[]> {
    const list = await this.h.runtime.listContainers({ labelSelector: { [Label.podUid]: this.uid } });
    return list.flatMap((c) => {
      const status = this.h.runtime.getContainer(c.id);
      return status === undefined ? [] : [status];
    });
  }

  async running(): Promise<string[]> {
    return (await this.containers()).filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => c.metadata.name).sort();
  }

  phase(): string | undefined {
    return this.h.statuses.get(this.uid)?.phase;
  }

  stopCalls(): number {
    return this.h.runtime.callLog('stopContainer').length;
  }

  holdPending(): number {
    return this.stopHold?.pending ?? 0;
  }

  /**
   * Checked in every model state. The regular container never exists before the init container
   * exited 0 (the clock moves 1 s before each event, so the times order them); once the pod was
   * terminated, no container is ever created or started again.
   */
  async checkAlways(): Promise<void> {
    const containers = await this.containers();
    const init = containers.filter((c) => c.metadata.name === 'init');
    for (const main of containers.filter((c) => c.metadata.name === 'main')) {
      const ok = init.some((i) => i.state === 'CONTAINER_EXITED' && i.exitCode === 0 && i.finishedAt <= main.createdAt);
      if (!ok) throw new Error(`main created at ${main.createdAt} before init succeeded: ${JSON.stringify(init)}`);
    }
    const snapshot = this.actorRef?.getSnapshot();
    if (this.terminatedAtCall === undefined && snapshot?.hasTag('terminated')) this.terminatedAtCall = this.h.runtime.calls.length;
    if (this.terminatedAtCall !== undefined) {
      const after = this.h.runtime.calls.slice(this.terminatedAtCall);
      const starts = after.filter((c) => c.method === 'createContainer' || c.method === 'startContainer' || c.method === 'runPodSandbox');
      if (starts.length > 0) throw new Error(`runtime work after terminated: ${JSON.stringify(starts)}`);
      if (snapshot !== undefined && (snapshot.matches('syncing') || snapshot.matches('terminating'))) {
        throw new Error(`actor back in ${JSON.stringify(snapshot.value)} after terminated`);
      }
    }
  }

  // ---------------------------------------------------------------- plumbing

  private tick(): void {
    this.h.clock.increment(tickMs);
  }

  private requireHold(): HoldController {
    if (this.stopHold === undefined) throw new Error('no kill in flight');
    return this.stopHold;
  }

  private async container(name: string): Promise<ContainerStatus> {
    const found = (await this.containers()).filter((c) => c.metadata.name === name && c.state === 'CONTAINER_RUNNING');
    if (found.length !== 1) throw new Error(`expected one running ${name}, found ${found.length}`);
    return found[0]!;
  }

  private async syncOnce(event: { type: 'POD.SYNC' }): Promise<void> {
    const before = this.actor.getSnapshot().context.syncCount;
    this.actor.send(event);
    await waitFor(this.actor, (s) => s.context.syncCount > before && s.matches({ syncing: { worker: 'idle' } }));
  }

  private async finished(): Promise<void> {
    await waitFor(this.actor, (s) => s.matches({ terminated: 'finished' }));
  }
}
