/**
 * The PLEG's effects on the TestRuntime: the relist record shared by the relist and the event
 * stream, so that a change is told once whichever sees it first.
 */
import { describe, expect, it } from 'vitest';
import { createRelister } from '../../src/pleg/relister.ts';
import type { StreamEnd, StreamUpdate } from '../../src/events.ts';
import { TestRuntime } from '../support/testRuntime.ts';
import type { CallOptions, ContainerEvent } from '../../src/runtime/types.ts';
import { plegLines, startPod } from '../support/plegFixtures.ts';

/** A TestRuntime whose event stream says only what the test pushes. */
class ScriptedStreamRuntime extends TestRuntime {
  private readonly pending: ContainerEvent[] = [];
  private wake: (() => void) | undefined;

  push(event: ContainerEvent): void {
    this.pending.push(event);
    this.wake?.();
  }

  override containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent> {
    const pending = this.pending;
    const waitForMore = () => new Promise<void>((resolve) => (this.wake = resolve));
    return (async function* () {
      while (!opts?.signal?.aborted) {
        const event = pending.shift();
        if (event) yield event;
        else await waitForMore();
      }
    })();
  }
}

/** Opens the relister's stream; `updates` collects what each event meant. */
function watch(relister: ReturnType<typeof createRelister>) {
  const controller = new AbortController();
  const updates: StreamUpdate[] = [];
  const ended = relister.watchEvents(controller.signal, (update) => updates.push(update));
  return { updates, ended, close: () => controller.abort(), lines: () => plegLines(updates.flatMap((u) => u.events)) };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

function setup(runtime = new TestRuntime()) {
  runtime.addImage('busybox');
  return { runtime, relister: createRelister(runtime, Date.now) };
}

describe('relister', () => {
  it('does not tell again at the relist what the stream told, nor the stream what the relist told', async () => {
    const { runtime, relister } = setup();
    await relister.relist(new AbortController().signal);
    const stream = watch(relister);
    const { uid, sandboxId, containerId } = await startPod(runtime, 'a');
    await settle();
    // The simulated runtime streams the sandbox's start too (as containerd 1.7+ does).
    expect(stream.lines()).toEqual([`PLEG.CONTAINER_STARTED ${uid}/${sandboxId}`, `PLEG.CONTAINER_STARTED ${uid}/${containerId}`]);
    // The relist finds what the stream told: nothing new.
    expect(plegLines((await relister.relist(new AbortController().signal)).events)).toEqual([]);
    // What only the relist saw (a container that started while no stream was open) is not told by the stream.
    stream.close();
    const { containerId: other } = await startPod(runtime, 'b');
    expect(plegLines((await relister.relist(new AbortController().signal)).events)).toContain(`PLEG.CONTAINER_STARTED uid-b/${other}`);
    const again = watch(relister);
    runtime.exitContainer(other, 0);
    await settle();
    expect(again.lines()).toEqual([`PLEG.CONTAINER_DIED uid-b/${other}`]);
    again.close();
    stream.close();
  });

  it('lays stream changes that arrive during a relist over its older listing', async () => {
    const { runtime, relister } = setup();
    const { uid, containerId } = await startPod(runtime, 'a');
    await relister.relist(new AbortController().signal);
    const stream = watch(relister);
    // The containers are listed at once (running); the sandboxes are held meanwhile.
    const hold = runtime.holdCalls('listPodSandbox');
    const relist = relister.relist(new AbortController().signal);
    await hold.whenPending(1);
    runtime.exitContainer(containerId, 1);
    await settle();
    expect(stream.lines()).toEqual([`PLEG.CONTAINER_DIED ${uid}/${containerId}`]);
    hold.releaseAll();
    // Without the overlay, the stale listing would say Started (and the next relist Died again).
    expect((await relist).events).toEqual([]);
    expect((await relister.relist(new AbortController().signal)).events).toEqual([]);
    stream.close();
  });

  it('reads sandbox events as the relist reads sandboxes, and resolves pods from the record', async () => {
    const runtime = new ScriptedStreamRuntime();
    const { relister } = setup(runtime);
    const { uid, sandboxId, containerId } = await startPod(runtime, 'a');
    await relister.relist(new AbortController().signal);
    const stream = watch(relister);
    const metadata = { name: 'a', uid, namespace: 'default', attempt: 0 };
    // The sandbox stops (containerd 1.7 and sim:// send the sandbox id as the container id).
    runtime.push({ containerId: sandboxId, type: 'CONTAINER_STOPPED_EVENT', createdAt: 0, podSandboxMetadata: metadata });
    // No metadata, but the record knows the container's pod.
    runtime.push({ containerId, type: 'CONTAINER_STOPPED_EVENT', createdAt: 0 });
    // Neither: the pod must be found by relisting.
    runtime.push({ containerId: 'stranger', type: 'CONTAINER_STARTED_EVENT', createdAt: 0 });
    await settle();
    expect(stream.updates).toEqual([
      { events: [{ type: 'PLEG.CONTAINER_DIED', podUid: uid, containerId: sandboxId }], relist: false },
      { events: [{ type: 'PLEG.CONTAINER_DIED', podUid: uid, containerId }], relist: false },
      { events: [], relist: true },
    ]);
    expect(relister.runningPodUids()).toEqual(new Set());
    stream.close();
  });

  it('tells Died and Removed for a deleted container it knew running, Removed only after Died', async () => {
    const runtime = new ScriptedStreamRuntime();
    const { relister } = setup(runtime);
    const a = await startPod(runtime, 'a');
    const b = await startPod(runtime, 'b');
    await relister.relist(new AbortController().signal);
    const stream = watch(relister);
    runtime.push({ containerId: a.containerId, type: 'CONTAINER_DELETED_EVENT', createdAt: 0 });
    runtime.push({ containerId: b.containerId, type: 'CONTAINER_STOPPED_EVENT', createdAt: 0 });
    runtime.push({ containerId: b.containerId, type: 'CONTAINER_DELETED_EVENT', createdAt: 0 });
    await settle();
    expect(stream.lines()).toEqual([
      `PLEG.CONTAINER_DIED ${a.uid}/${a.containerId}`,
      `PLEG.CONTAINER_REMOVED ${a.uid}/${a.containerId}`,
      `PLEG.CONTAINER_DIED ${b.uid}/${b.containerId}`,
      `PLEG.CONTAINER_REMOVED ${b.uid}/${b.containerId}`,
    ]);
    stream.close();
  });

  it('keeps the running pods up to date from the stream', async () => {
    const { runtime, relister } = setup();
    await relister.relist(new AbortController().signal);
    const stream = watch(relister);
    const { uid, sandboxId, containerId } = await startPod(runtime, 'a');
    await settle();
    expect(relister.runningPodUids()).toEqual(new Set([uid]));
    runtime.exitContainer(containerId, 0);
    await settle();
    // Its sandbox is still ready: the pod still runs.
    expect(relister.runningPodUids()).toEqual(new Set([uid]));
    await runtime.stopPodSandbox(sandboxId);
    await settle();
    expect(relister.runningPodUids()).toEqual(new Set());
    stream.close();
  });

  it('says why the stream ended: UNIMPLEMENTED, another error, or closed by the runtime', async () => {
    const unimplemented = new TestRuntime();
    unimplemented.setEventsUnimplemented();
    expect(await watch(createRelister(unimplemented, Date.now)).ended).toEqual<StreamEnd>({
      unimplemented: true,
      error: expect.stringMatching(/UNIMPLEMENTED/),
    });
    const broken = new TestRuntime();
    const stream = watch(createRelister(broken, Date.now));
    broken.breakEventStreams('UNAVAILABLE', 'runtime restarted');
    expect(await stream.ended).toEqual({ unimplemented: false, error: expect.stringMatching(/runtime restarted/) });
  });
});
