/**
 * The runtime's Status as the syncLoop polls it (its `runtimeStatus` region; the kubelet's
 * updateRuntimeUp): one CRI Status call, its conditions and runtime handlers returned for the
 * syncLoop to keep the network state from (src/node/health.ts runtimeNetworkError) and to tell
 * the node's facts. What it logs, it logs on a change
 * only: the Status failing and answering again, the network going not ready and ready again (the
 * kubelet logs each poll; at 5 s that is a line every 5 s per cause here for as long as it lasts).
 */
import type { Logger } from '../log.ts';
import type { RuntimeHandler, RuntimeService, RuntimeStatusInfo } from '../runtime/types.ts';
import { runtimeNetworkError } from './health.ts';

/**
 * What one Status answer says: its conditions, and its runtime handlers, none being an empty list
 * (the kubelet's runtimeState.setRuntimeHandlers in updateRuntimeUp, from toKubeRuntimeStatus).
 */
export interface RuntimeStatusAnswer {
  conditions: RuntimeStatusInfo['conditions'];
  handlers: readonly RuntimeHandler[];
}

/** Reads the runtime's Status once; rejects when the call fails. */
export type RuntimeStatusReader = (signal: AbortSignal) => Promise<RuntimeStatusAnswer>;

export function runtimeStatusReader(runtime: RuntimeService, timeoutMs: number, log: Logger): RuntimeStatusReader {
  let failing = false;
  let networkError: string | null = null;
  return async (signal) => {
    let conditions: RuntimeStatusInfo['conditions'];
    let handlers: readonly RuntimeHandler[];
    try {
      const status = await runtime.status({ signal, timeoutMs });
      conditions = status.conditions;
      handlers = status.runtimeHandlers ?? [];
    } catch (err) {
      // Aborted: the syncLoop stopped, nothing failed.
      if (!failing && !signal.aborted) log('error', 'Container runtime sanity check failed', { err });
      failing ||= !signal.aborted;
      throw err;
    }
    if (failing) log('info', 'Container runtime status answers again');
    failing = false;
    const now = runtimeNetworkError(conditions);
    if (now !== networkError) {
      if (now) log('warn', 'Container runtime network not ready', { err: now });
      else log('info', 'Container runtime network ready');
      networkError = now;
    }
    return { conditions, handlers };
  };
}
