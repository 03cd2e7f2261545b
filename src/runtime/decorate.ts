/**
 * One way to stand around the CRI calls of a runtime: `decorate(service, around)` answers every
 * call of the service's through `around(call, args, proceed)`, which sees the call as the table
 * describes it (criCalls.ts: its RPC, its operation name, what it is about) with its arguments, and
 * makes it with `proceed()`. The metrics (instrumented.ts), the call trace (callTrace.ts), the pod-ID
 * recorder (kuberuntime/podIds.ts) and the test kit's fault injector are each one `around`, as the
 * kubelet's instrumentedRuntimeService (pkg/kubelet/kuberuntime/instrumented_services.go) is one
 * wrapper over every call.
 *
 * The event stream (`containerEvents`) is not a call: it passes through, unless an `events` hook
 * is given. The methods are called on the service itself, so a class instance keeps its `this`.
 */
import { CRI_METHODS, type CriArgs, type CriCall, type CriMethod, type CriResult, criCall } from './criCalls.ts';
import type { CallOptions, ContainerEvent, ImageService, RuntimeService } from './types.ts';

/** Stands around one call: answers it, by `proceed()` (the service's answer) or otherwise. */
export type Around = <M extends CriMethod>(call: CriCall<M>, args: CriArgs<M>, proceed: () => Promise<CriResult<M>>) => Promise<CriResult<M>>;

/** Stands around the event stream: given the caller's options and how to open the service's stream. */
export type AroundEvents = (opts: CallOptions | undefined, open: (opts?: CallOptions) => AsyncIterable<ContainerEvent>) => AsyncIterable<ContainerEvent>;

/** The CRI calls as an implementation may answer them: at once, or with a promise. */
export type CriAnswers = { [M in CriMethod]: (...args: CriArgs<M>) => CriResult<M> | Promise<CriResult<M>> };

type EventStream = Pick<RuntimeService, 'containerEvents'>;

/** Every call of both services, and the event stream (sim://'s engine, the gRPC client). */
export function decorate(service: CriAnswers & EventStream, around: Around, events?: AroundEvents): RuntimeService & ImageService;
export function decorate(service: RuntimeService, around: Around, events?: AroundEvents): RuntimeService;
export function decorate(service: ImageService, around: Around): ImageService;
export function decorate(service: Partial<CriAnswers & EventStream>, around: Around, events?: AroundEvents): object {
  const decorated: Partial<Record<CriMethod, unknown> & EventStream> = {};
  for (const method of CRI_METHODS) {
    if (typeof service[method] === 'function') decorated[method] = aroundCall(service as CriAnswers, criCall(method), around);
  }
  if (service.containerEvents) {
    const open = service.containerEvents.bind(service);
    decorated.containerEvents = events ? (opts) => events(opts, open) : open;
  }
  return decorated;
}

function aroundCall<M extends CriMethod>(service: CriAnswers, call: CriCall<M>, around: Around): (...args: CriArgs<M>) => Promise<CriResult<M>> {
  return (...args) => around(call, args, () => answer(service, call.method, args));
}

/** The service's answer as a promise: one it fails at once rejects, as a call does. */
export function answer<M extends CriMethod>(service: CriAnswers, method: M, args: CriArgs<M>): Promise<CriResult<M>> {
  try {
    return Promise.resolve(service[method](...args));
  } catch (error) {
    return Promise.reject(error);
  }
}
