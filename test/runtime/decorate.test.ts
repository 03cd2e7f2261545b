/**
 * `decorate` (src/runtime/decorate.ts): every call of a service through one `around` hook that
 * sees the call as the table describes it, a class instance's methods called on the instance, an
 * answer given at once or thrown made a promise, and the event stream passed through unless a
 * hook for it is given.
 */
import { describe, expect, it } from 'vitest';
import { type CriCall, containerIdOf } from '../../src/runtime/criCalls.ts';
import { type Around, decorate } from '../../src/runtime/decorate.ts';
import type { CallOptions, ContainerEvent, ImageService, RuntimeService } from '../../src/runtime/types.ts';

/** A runtime whose calls read its own state, as a class instance's do. */
class Counting {
  private started = 0;
  async startContainer(id: string): Promise<void> {
    this.started++;
    if (id === 'gone') throw new Error('no such container');
  }
  async version() {
    return { version: String(this.started), runtimeName: 'counting', runtimeVersion: '1', runtimeApiVersion: 'v1' };
  }
  containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent> {
    return [{ containerId: `${this.started}`, type: 'CONTAINER_STARTED_EVENT', createdAt: opts?.timeoutMs ?? 0 }] as unknown as AsyncIterable<ContainerEvent>;
  }
}

describe('decorate', () => {
  it('answers each call through the hook, which sees the call and its arguments; the methods run on the instance', async () => {
    const seen: string[] = [];
    const around: Around = async (call, args, proceed) => {
      seen.push(`${call.rpc} ${call.operation} ${containerIdOf(call, args) ?? ''}`.trimEnd());
      return proceed();
    };
    const runtime = decorate(new Counting() as unknown as RuntimeService, around);
    await runtime.startContainer('c1');
    await expect(runtime.startContainer('gone')).rejects.toThrow('no such container');
    expect((await runtime.version()).version).toBe('2');
    expect(seen).toEqual(['StartContainer start_container c1', 'StartContainer start_container gone', 'Version version']);
  });

  it('makes an answer given at once a promise, and one thrown a rejection', async () => {
    const images = {
      imageStatus(image: string) {
        if (image === 'bad') throw new Error('refused');
        return null;
      },
    } as unknown as ImageService;
    const passing: Around = (_call, _args, proceed) => proceed();
    const decorated = decorate(images, passing);
    const answer = decorated.imageStatus('busybox');
    expect(answer).toBeInstanceOf(Promise);
    expect(await answer).toBeNull();
    await expect(decorated.imageStatus('bad')).rejects.toThrow('refused');
  });

  it('lets the event stream through, on the instance, unless given a hook for it', async () => {
    const calls: CriCall[] = [];
    const recording: Around = (call, _args, proceed) => (calls.push(call), proceed());
    const passed = decorate(new Counting() as unknown as RuntimeService, recording);
    expect([...(passed.containerEvents({ timeoutMs: 5 }) as unknown as ContainerEvent[])]).toEqual([{ containerId: '0', type: 'CONTAINER_STARTED_EVENT', createdAt: 5 }]);
    expect(calls).toEqual([]);
    const hooked = decorate(new Counting() as unknown as RuntimeService, recording, (opts, open) => open({ ...opts, timeoutMs: 7 }));
    expect([...(hooked.containerEvents() as unknown as ContainerEvent[])]).toMatchObject([{ createdAt: 7 }]);
  });
});
