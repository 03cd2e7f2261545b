/**
 * The one list of CRI calls (src/runtime/criCalls.ts) against what implements them: every call is
 * an RPC of its service in api.proto, a method of the gRPC client and of sim:// in-process, and the
 * call trace names it by its RPC.
 */
import { describe, expect, it } from 'vitest';
import { CRI_CALLS, type CriMethod, criMethodOf, isCriMethod } from '../../src/runtime/criCalls.ts';
import { type TracedCall, tracedImages, tracedRuntime } from '../../src/runtime/callTrace.ts';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { serviceDefinition } from '../../src/runtime/cri/wire.ts';
import type { ImageService, RuntimeService } from '../../src/runtime/types.ts';
import { InProcessRuntime } from '../support/inProcessRuntime.ts';

const calls = Object.entries(CRI_CALLS) as [CriMethod, (typeof CRI_CALLS)[CriMethod]][];

/** An answer any call's trace can read: a list (of nothing) with a container's metadata. */
const answer = Object.assign([], { metadata: { name: 'app' }, state: 'SANDBOX_READY', network: { ip: '' }, image: 'busybox' });
/** A runtime whose every method answers at once. */
const answering = new Proxy({}, { get: () => async () => answer }) as RuntimeService & ImageService;
/** Arguments each call accepts: an id, a config with metadata and an image, a number; a request for the streaming calls. */
const idArgs = ['0123456789abcdef', { metadata: { name: 'app', namespace: 'default', uid: 'u', attempt: 0 }, image: { image: 'busybox' } }, { metadata: { name: 'sandbox' } }, 1];
const argsOf = (method: CriMethod): unknown[] => (['exec', 'attach', 'portForward'].includes(method) ? [{ containerId: '0123456789abcdef', podSandboxId: '0123456789abcdef' }] : idArgs);

describe('the CRI calls', () => {
  it.each(calls)('%s is an RPC of its service in api.proto, and of the gRPC client and sim:// in-process', (method, { service, rpc }) => {
    expect(serviceDefinition(service)[rpc], `${service}.${rpc} in api.proto`).toBeDefined();
    expect(typeof (CriClient.prototype as unknown as Record<string, unknown>)[method]).toBe('function');
    expect(typeof (InProcessRuntime.prototype as unknown as Record<string, unknown>)[method]).toBe('function');
    expect(criMethodOf(rpc)).toBe(method);
    expect(isCriMethod(method)).toBe(true);
  });

  it.each(calls)('%s is traced under its RPC name', async (method, { service, rpc }) => {
    const seen: TracedCall[] = [];
    const trace = { started: (call: TracedCall) => seen.push(call), finished: () => {} };
    const traced = (service === 'RuntimeService' ? tracedRuntime(answering, trace) : tracedImages(answering, trace)) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    await traced[method]!(...argsOf(method));
    expect(seen.map((c) => c.call)).toEqual([rpc]);
  });

  it('leaves the event stream and unknown names out', () => {
    expect(isCriMethod('containerEvents')).toBe(false);
    expect(criMethodOf('GetContainerEvents')).toBeUndefined();
  });
});
