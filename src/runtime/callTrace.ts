/**
 * Runtime calls made visible: decorators over the RuntimeService and ImageService that report
 * each call's start and finish (with its duration and error) to a `CallTrace`. The pod's effect
 * actors wrap the runtime this way for the length of one sync, so the visualizer's event log can
 * show which CRI call a pod is waiting on and how long each took.
 *
 * A call is named by its CRI method (`CreateContainer`) and a target that says what it is about:
 * `sandbox`, a container's name, an image. Container IDs are turned back into names from what the
 * decorator saw come back (CreateContainer, ListContainers, ContainerStatus) or was given; an ID
 * it never saw shows as its first 13 characters. Nothing else of a request (commands, env, mounts) is reported.
 */
import { type CriCall, type CriRpc, allowanceSecondsOf, containerIdOf, containerNameOf, imageOf, podUidOf, sandboxIdOf } from './criCalls.ts';
import { decorate } from './decorate.ts';
import type { AuthConfig, CallOptions, Container, ContainerStatus, ImageService, RuntimeService } from './types.ts';

/** One runtime call: `id` tells apart calls with the same method and target under way together. */
export interface TracedCall {
  id: number;
  call: string;
  target: string;
  /** How long the call may take by design (StopContainer's grace period, ExecSync's timeout), in ms. */
  allowanceMs?: number;
}

export interface CallTrace {
  started(call: TracedCall): void;
  finished(call: TracedCall, durationMs: number, error?: unknown): void;
}

let lastCallId = 0;

/** Runs `run` as one traced call. */
async function traceCall<T>(trace: CallTrace, call: CriRpc, target: string, run: () => Promise<T>, allowanceMs?: number): Promise<T> {
  const traced: TracedCall = { id: ++lastCallId, call, target, ...(allowanceMs ? { allowanceMs } : {}) };
  trace.started(traced);
  const startedAt = performance.now();
  try {
    const result = await run();
    trace.finished(traced, performance.now() - startedAt);
    return result;
  } catch (err) {
    trace.finished(traced, performance.now() - startedAt, err);
    throw err;
  }
}

const shortId = (id: string) => id.slice(0, 13);

/**
 * The RuntimeService, each call reported to `trace`; `known`: container IDs and names seen before.
 * Streams (containerEvents) pass through.
 */
export function tracedRuntime(runtime: RuntimeService, trace: CallTrace, known: Iterable<[string, string]> = []): RuntimeService {
  const names = new Map<string, string>(known);
  return decorate(runtime, (call, args, proceed) => {
    const containerId = containerIdOf(call, args);
    const allowanceSeconds = allowanceSecondsOf(call, args);
    const learning = async () => {
      const result = await proceed();
      // The names the runtime hands back: a container made, a listing, a status.
      if (call.creates === 'container') names.set(result as string, containerNameOf(call, args)!);
      else if (call.method === 'listContainers') for (const c of result as Container[]) names.set(c.id, c.metadata.name);
      else if (call.method === 'containerStatus') names.set(containerId!, (result as ContainerStatus).metadata.name);
      return result;
    };
    const target = containerId !== undefined ? (names.get(containerId) ?? shortId(containerId)) : targetOf(call, args);
    return traceCall(trace, call.rpc, target, learning, allowanceSeconds === undefined ? undefined : allowanceSeconds * 1000);
  });
}

/**
 * What a call that names no container is about: the container it makes, the image (PullImage's
 * before its pod), `sandbox` for a sandbox or a pod's config, nothing for a node-wide call.
 */
function targetOf(call: CriCall, args: readonly unknown[]): string {
  const named = containerNameOf(call, args) ?? imageOf(call, args);
  if (named !== undefined) return named;
  return sandboxIdOf(call, args) !== undefined || podUidOf(call, args) !== undefined ? 'sandbox' : '';
}

/** The ImageService, each call reported to `trace`. */
export function tracedImages(images: ImageService, trace: CallTrace): ImageService {
  return decorate(images, (call, args, proceed) => traceCall(trace, call.rpc, targetOf(call, args), proceed));
}

/** Every call reported to each of `traces`. */
export function allOf(...traces: CallTrace[]): CallTrace {
  return {
    started: (call) => traces.forEach((trace) => trace.started(call)),
    finished: (call, durationMs, error) => traces.forEach((trace) => trace.finished(call, durationMs, error)),
  };
}

/** An image pulled: its reference, and which of the credentials given pulled it (-1: pulled without any). */
export interface PulledImage {
  imageRef: string;
  authIndex: number;
}

/** Anything that pulls images for a pod (the agent's shared, de-duplicating puller). */
export interface ImagePulls {
  /** Pulls with each credential in turn until one succeeds; with none, once without credentials. */
  pull(image: string, auths: readonly AuthConfig[], opts?: CallOptions): Promise<PulledImage>;
}

/** A pod's view of the shared puller: its wait for an image, reported as one `PullImage`. */
export function tracedPulls(puller: ImagePulls, trace: CallTrace): ImagePulls {
  return { pull: (image, auths, opts) => traceCall(trace, 'PullImage', image, () => puller.pull(image, auths, opts)) };
}
