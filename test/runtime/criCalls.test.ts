/**
 * The one list of CRI calls (src/runtime/criCalls.ts) against what implements them: every call is
 * an RPC of its service in api.proto, a row of the table of wire calls, a method of the gRPC client
 * and of sim://'s engine, and answered by sim://'s server over gRPC; each has an operation name of
 * its own; and the table's argument positions are checked by the compiler.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRI_CALLS, type CriArgs, type CriCallEntry, type CriMethod, criMethodOf, isCriMethod } from '../../src/runtime/criCalls.ts';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { WIRE_CALLS } from '../../src/runtime/cri/wireCalls.ts';
import { serviceDefinition } from '../../src/runtime/cri/wire.ts';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { CriError } from '../../src/runtime/types.ts';
import { CALL_ARGS, type SimOverGrpc, simOverGrpc } from './support.ts';

const calls = Object.entries(CRI_CALLS) as [CriMethod, (typeof CRI_CALLS)[CriMethod]][];

let sim: SimOverGrpc;
beforeAll(async () => {
  sim = await simOverGrpc('statelet-cri-calls-');
});
afterAll(() => sim.close());

describe('the CRI calls', () => {
  it.each(calls)('%s is an RPC of its service in api.proto, a wire call, and a method of the gRPC client and of sim://’s engine', (method, { service, rpc }) => {
    expect(serviceDefinition(service)[rpc], `${service}.${rpc} in api.proto`).toBeDefined();
    expect(WIRE_CALLS[method]).toBeDefined();
    expect(typeof (CriClient.prototype as unknown as Record<string, unknown>)[method]).toBe('function');
    expect(typeof (SimEngine.prototype as unknown as Record<string, unknown>)[method]).toBe('function');
    expect(criMethodOf(rpc)).toBe(method);
    expect(isCriMethod(method)).toBe(true);
  });

  it.each(calls)('%s is answered by sim://’s server over gRPC (or refused by the engine, never unknown or unreadable)', async (method) => {
    try {
      await (sim.client as unknown as Record<CriMethod, (...args: CriArgs<CriMethod>) => Promise<unknown>>)[method](...CALL_ARGS[method]);
    } catch (error) {
      // The sample arguments name a sandbox and a container the runtime does not have.
      expect(error).toBeInstanceOf(CriError);
      expect((error as CriError).code).toBe('NOT_FOUND');
    }
  });

  it('gives each call an operation name of its own, in the kubelet’s form', () => {
    const operations = calls.map(([, call]) => call.operation);
    expect(new Set(operations).size).toBe(calls.length);
    for (const operation of operations) expect(operation).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });

  it('leaves the event stream and unknown names out', () => {
    expect(isCriMethod('containerEvents')).toBe(false);
    expect(criMethodOf('GetContainerEvents')).toBeUndefined();
  });

  it('refuses, at compile time, an argument position that holds something else', () => {
    const entries: CriCallEntry<'stopContainer'>[] = [
      { service: 'RuntimeService', rpc: 'StopContainer', operation: 'stop_container', options: 2, about: { container: 0 }, allowance: 1 },
      // @ts-expect-error: argument 0 is the container's ID, not its allowance in seconds
      { service: 'RuntimeService', rpc: 'StopContainer', operation: 'stop_container', options: 2, allowance: 0 },
      // @ts-expect-error: StopContainer takes three arguments
      { service: 'RuntimeService', rpc: 'StopContainer', operation: 'stop_container', options: 3 },
      // @ts-expect-error: it carries no sandbox config
      { service: 'RuntimeService', rpc: 'StopContainer', operation: 'stop_container', options: 2, about: { pod: 0 } },
      // @ts-expect-error: it answers no ID
      { service: 'RuntimeService', rpc: 'StopContainer', operation: 'stop_container', options: 2, creates: 'container' },
    ];
    const createContainer: CriCallEntry<'createContainer'>[] = [
      // @ts-expect-error: argument 1 is the container's config, not the pod's
      { service: 'RuntimeService', rpc: 'CreateContainer', operation: 'create_container', options: 3, about: { pod: 1 } },
    ];
    // @ts-expect-error: no such method
    const misspelt: CriCallEntry<'stopContainr'> | undefined = undefined;
    expect([...entries, ...createContainer, misspelt]).toHaveLength(7);
  });
});
