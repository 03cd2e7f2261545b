/**
 * The node's heartbeat: its Lease in `kube-node-lease`, renewed every quarter of the lease's
 * duration (10 s for the default 40 s). The node lifecycle controller reads the Lease, not the
 * status, to tell that the node is alive (k8s.io/component-helpers/apimachinery/lease/controller.go).
 *
 *   `renewing`    the `renew` actor writes the lease (from the last one written, or read afresh
 *                 after a failure; created when missing) → `waiting`; a failure → `backingOff`.
 *   `waiting`     one renew interval → `renewing`.
 *   `backingOff`  200 ms after the first failure, doubling up to 7 s (backoffEnsureLease) →
 *                 `renewing`. A failed renewal forgets the cached lease, so the next try reads it.
 *
 * Context records when it last renewed and the last error, for the visualizer and the logs.
 * Never: writes anything but its own Lease; its renewals never wait on other API traffic (the
 * effects use their own request deadline).
 */
import { assign, fromPromise, setup } from 'xstate';
import { notProvided } from '../notProvided.ts';
import type { Lease } from '../api/cluster.ts';
import { leaseBackoffMs, renewIntervalMs } from './lease.ts';

export interface LeaseEffects {
  /** Writes the renewed lease, starting from `latest` (null: read it first, create it if missing). */
  renew(latest: Lease | null, signal: AbortSignal): Promise<Lease>;
}

interface LeaseInput {
  leaseDurationSeconds: number;
}

interface LeaseContext {
  renewIntervalMs: number;
  latest: Lease | null;
  failures: number;
  renewals: number;
  lastRenewTime: string | null;
  lastError: string | null;
}


export const nodeLeaseMachine = setup({
  types: {
    context: {} as LeaseContext,
    input: {} as LeaseInput,
  },
  actors: {
    renew: fromPromise<Lease, { latest: Lease | null }>(notProvided('nodeLease', 'renew')),
  },
  delays: {
    renewInterval: ({ context }) => context.renewIntervalMs,
    backoff: ({ context }) => leaseBackoffMs(context.failures),
  },
}).createMachine({
  id: 'nodeLease',
  context: ({ input }) => ({
    renewIntervalMs: renewIntervalMs(input.leaseDurationSeconds),
    latest: null,
    failures: 0,
    renewals: 0,
    lastRenewTime: null,
    lastError: null,
  }),
  initial: 'renewing',
  states: {
    renewing: {
      invoke: {
        src: 'renew',
        input: ({ context }) => ({ latest: context.latest }),
        onDone: {
          target: 'waiting',
          actions: assign(({ context, event }) => ({
            latest: event.output,
            failures: 0,
            renewals: context.renewals + 1,
            lastRenewTime: event.output.spec.renewTime ?? null,
            lastError: null,
          })),
        },
        onError: {
          target: 'backingOff',
          actions: assign(({ context, event }) => ({
            latest: null,
            failures: context.failures + 1,
            lastError: event.error instanceof Error ? event.error.message : String(event.error),
          })),
        },
      },
    },
    waiting: { after: { renewInterval: 'renewing' } },
    backingOff: { after: { backoff: 'renewing' } },
  },
});

type NodeLeaseMachine = typeof nodeLeaseMachine;

export function nodeLeaseMachineWith(effects: LeaseEffects): NodeLeaseMachine {
  return nodeLeaseMachine.provide({
    actors: { renew: fromPromise<Lease, { latest: Lease | null }>(({ input, signal }) => effects.renew(input.latest, signal)) },
  });
}
