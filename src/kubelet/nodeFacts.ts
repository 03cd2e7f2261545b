/**
 * What the syncLoop knows of the node, for the parts that read it: the runtime's health as the
 * PLEG's relists last found it (/healthz, the Ready condition), the runtime's network as its
 * Status last said (each pod's sync waits for it: kubelet.go SyncPod, runtimeState.networkErrors),
 * the runtime handlers that Status reported (a sandbox's user namespace is checked against them:
 * kubelet_getters.go HandlerSupportsUserNamespaces, runtimeState.runtimeHandlers),
 * and whether every configured source has been seen (config.go SeenAllSources: a pod removed before
 * then is not killed). The kubelet keeps these in runtimeState and its sources' readiness and reads
 * them under a lock; here the syncLoop tells them as catalogue events to its `facts` child, the one
 * writer (`nodeFactsWriter`), and everyone else reads `NodeFactsView`, never the syncLoop's snapshot.
 */
import { fromCallback } from 'xstate';
import type { EventOf } from '../events.ts';
import { type RelistHealth, runtimeNetworkError } from '../node/health.ts';
import type { RuntimeHandler, RuntimeStatusInfo } from '../runtime/types.ts';

/** The events the syncLoop tells its facts child. */
export type NodeFactEvent = EventOf<'PLEG.RELISTED'> | EventOf<'PLEG.RELIST_FAILED'> | EventOf<'NODE.RUNTIME_NETWORK'> | EventOf<'NODE.RUNTIME_HANDLERS'> | EventOf<'SOURCE.ALL_SEEN'>;

export interface NodeFactsView {
  /** The runtime's health as the relists last found it. */
  health(): RelistHealth;
  /** How long the last successful relist took; null before the first. */
  lastRelistDurationMs(): number | null;
  /** The runtime's network error (null: ready). */
  networkError(): string | null;
  /** Every configured source has delivered its first snapshot. */
  sourcesReady(): boolean;
  /** The runtime handlers its Status last reported (none: empty); null before it first answered. */
  runtimeHandlers(): readonly RuntimeHandler[] | null;
}

export class NodeFacts implements NodeFactsView {
  private relist: RelistHealth & { durationMs: number | null } = { lastRelistAt: null, lastRuntimeError: null, durationMs: null };
  private network: string | null;
  private allSourcesSeen: boolean;
  private handlers: readonly RuntimeHandler[] | null;

  /**
   * `networkError`: the network as the runtime's Status at the agent's start found it (the kubelet
   * starts from "unknown"; absent: taken as ready until the first poll). `sourcesReady`: no source
   * is configured, so there is none to wait for.
   */
  constructor(initial: { networkError?: string | null; sourcesReady: boolean; runtimeHandlers?: readonly RuntimeHandler[] }) {
    this.network = initial.networkError ?? null;
    this.handlers = initial.runtimeHandlers ?? null;
    this.allSourcesSeen = initial.sourcesReady;
  }

  /**
   * The facts a node starts from: the runtime's network as its Status at the agent's start found it
   * (none: not read, taken as ready until the first poll), and sources ready when none is expected.
   */
  static atStart(runtime: { conditions?: RuntimeStatusInfo['conditions'] | undefined; handlers?: readonly RuntimeHandler[] | undefined }, expectedSources: readonly string[]): NodeFacts {
    return new NodeFacts({
      sourcesReady: expectedSources.length === 0,
      ...(runtime.conditions ? { networkError: runtimeNetworkError(runtime.conditions) } : {}),
      ...(runtime.handlers ? { runtimeHandlers: runtime.handlers } : {}),
    });
  }

  record(event: NodeFactEvent): void {
    switch (event.type) {
      case 'PLEG.RELISTED':
        this.relist = { lastRelistAt: event.at, lastRuntimeError: null, durationMs: event.durationMs };
        return;
      case 'PLEG.RELIST_FAILED':
        this.relist = { ...this.relist, lastRuntimeError: event.error };
        return;
      case 'NODE.RUNTIME_NETWORK':
        this.network = event.error;
        return;
      case 'SOURCE.ALL_SEEN':
        this.allSourcesSeen = true;
        return;
      case 'NODE.RUNTIME_HANDLERS':
        this.handlers = event.handlers;
        return;
    }
  }

  health(): RelistHealth {
    return { lastRelistAt: this.relist.lastRelistAt, lastRuntimeError: this.relist.lastRuntimeError };
  }

  lastRelistDurationMs(): number | null {
    return this.relist.durationMs;
  }

  networkError(): string | null {
    return this.network;
  }

  runtimeHandlers(): readonly RuntimeHandler[] | null {
    return this.handlers;
  }

  sourcesReady(): boolean {
    return this.allSourcesSeen;
  }
}

/** The syncLoop's `facts` child: each fact it is told, into the read model. */
export function nodeFactsWriter(facts: NodeFacts) {
  return fromCallback<NodeFactEvent>(({ receive }) => receive((event) => facts.record(event)));
}
