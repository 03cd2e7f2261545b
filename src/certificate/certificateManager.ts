/**
 * A certificate manager (client-go util/certificate/certificate_manager.go manager.Start,
 * rotateCerts): keeps the node's certificate for one template current, the client certificate
 * (CN `system:node:<name>`, O `system:nodes`) or the serving one (plus the node's addresses).
 *
 *   `loading`       the `load` actor reads the store's current pair and its rotation deadline
 *                   (now when there is none or it does not do for the template) → `valid`.
 *   `valid`         waits until the deadline (70–90 % of the lifetime) → `renewing`; `announce`
 *                   logs the wait. Without a template (a serving certificate before the node has an
 *                   IP) → `waitingForTemplate`.
 *   `renewing`      `submitting`: a fresh key and a CSR sent (`submit`); `awaitingIssuance`: the
 *                   CSR watched until it is issued (`waitForIssuance`), for at most 15 minutes
 *                   (certificateWaitTimeout); `storing`: the pair written and made current (`store`)
 *                   → `valid` with the new deadline. Any failure → `backingOff`.
 *   `backingOff`    2 s doubling with 10 % jitter for five attempts, then every 32 s (Start's
 *                   ExponentialBackoff and PollInfinite) → `renewing`; `announce` logs why.
 *
 * The keys never enter the context or an event: the effects keep a request's key until its
 * certificate is stored. The context holds what the visualizer shows (expiry, next renewal,
 * pending CSR, last error).
 */
import { assign, fromPromise, setup } from 'xstate';
import type { EventOf } from '../events.ts';
import { notProvided } from '../notProvided.ts';
import type { CertificateTemplate } from './csr.ts';
import { CERTIFICATE_WAIT_TIMEOUT_MS, retryDelayMs, sameTemplate, templateMismatch } from './deadline.ts';
import type { CertificateLeaf } from './pair.ts';

/** A pair made current, or found in the store, and when to renew it. */
export interface ManagedCertificate {
  leaf: CertificateLeaf | null;
  /** Epoch ms: when to request the next certificate. */
  deadline: number;
}

/** A request sent and not yet answered. */
export interface PendingRequest {
  name: string;
  uid: string;
}

export interface CertificateManagerInput {
  /** `client` or `serving`: in log lines and on the visualizer. */
  kind: 'client' | 'serving';
  /** What to request; null: nothing to request yet (a serving certificate without a node IP). */
  template: CertificateTemplate | null;
}

interface CertificateManagerContext {
  kind: 'client' | 'serving';
  template: CertificateTemplate | null;
  current: CertificateLeaf | null;
  deadline: number | null;
  pending: PendingRequest | null;
  /** The template of the last request sent (a change to it does not ask again). */
  requested: CertificateTemplate | null;
  /** Failed attempts in a row. */
  failures: number;
  rotations: number;
  lastError: string | null;
}

/** What the manager's `announce` actor is asked to log. */
export type Announcement = { what: 'deadline'; kind: string; notAfter: Date | null; deadline: number } | { what: 'failure'; kind: string; error: string; failures: number; retryInMs: number };

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

const certificateManagerSetup = setup({
  types: {
    context: {} as CertificateManagerContext,
    input: {} as CertificateManagerInput,
    events: {} as EventOf<'CERTIFICATE.TEMPLATE'>,
  },
  actors: {
    load: fromPromise<ManagedCertificate, { template: CertificateTemplate | null }>(notProvided('certificateManager', 'load')),
    submit: fromPromise<PendingRequest, { template: CertificateTemplate }>(notProvided('certificateManager', 'submit')),
    waitForIssuance: fromPromise<void, PendingRequest>(notProvided('certificateManager', 'waitForIssuance')),
    store: fromPromise<ManagedCertificate, { request: PendingRequest; template: CertificateTemplate }>(notProvided('certificateManager', 'store')),
    announce: fromPromise<void, Announcement>(notProvided('certificateManager', 'announce')),
  },
  delays: {
    /** Until the deadline on the clock the effects read; provided with it (`certificateManagerWith`). */
    untilDeadline: () => 0,
    /** The retry wait after `failures` failures; provided with its jitter. */
    retry: ({ context }) => retryDelayMs(context.failures, 0),
    issuanceTimeout: CERTIFICATE_WAIT_TIMEOUT_MS,
  },
  guards: {
    hasTemplate: ({ context }) => context.template !== null,
    /**
     * The new template asks for what the certificate lacks, and no request for it was sent
     * (Start's templateChanged: certSatisfiesTemplate and the last request's template).
     */
    asksAgain: ({ context, event }) =>
      event.template !== null &&
      (context.current === null || templateMismatch(context.current, event.template) !== null) &&
      !(context.requested !== null && sameTemplate(context.requested, event.template)),
  },
  actions: {
    takeTemplate: assign({ template: ({ event }) => event.template }),
    failed: assign(({ context }, params: { error: unknown }) => ({ failures: context.failures + 1, lastError: errorText(params.error), pending: null })),
  },
});

/**
 * The manager's machine under `id`: the client's `certificateManager` and the serving
 * `servingCertificateManager` are one machine, named apart as node loops are by their machines' ids.
 */
function certificateManagerNamed(id: string) {
  return certificateManagerSetup.createMachine({
  id,
  context: ({ input }) => ({
    kind: input.kind,
    template: input.template,
    current: null,
    deadline: null,
    pending: null,
    requested: null,
    failures: 0,
    rotations: 0,
    lastError: null,
  }),
  on: {
    // A request under way for the old template is dropped (its wait cancelled) and one is sent for the new.
    'CERTIFICATE.TEMPLATE': [{ guard: 'asksAgain', target: '.renewing', reenter: true, actions: ['takeTemplate', assign({ pending: null })] }, { actions: 'takeTemplate' }],
  },
  initial: 'loading',
  states: {
    loading: {
      invoke: {
        src: 'load',
        input: ({ context }) => ({ template: context.template }),
        onDone: { target: 'valid', actions: assign(({ event }) => ({ current: event.output.leaf, deadline: event.output.deadline })) },
        onError: { target: 'backingOff', actions: { type: 'failed', params: ({ event }) => ({ error: event.error }) } },
      },
    },
    valid: {
      always: { guard: ({ context }) => context.template === null, target: 'waitingForTemplate' },
      invoke: {
        src: 'announce',
        input: ({ context }) => ({ what: 'deadline' as const, kind: context.kind, notAfter: context.current?.notAfter ?? null, deadline: context.deadline ?? 0 }),
      },
      after: { untilDeadline: 'renewing' },
    },
    waitingForTemplate: {
      on: {
        'CERTIFICATE.TEMPLATE': [
          { guard: 'asksAgain', target: 'renewing', actions: 'takeTemplate' },
          // A certificate that already does for it: kept until its deadline.
          { guard: ({ event }) => event.template !== null, target: 'valid', actions: 'takeTemplate' },
        ],
      },
    },
    renewing: {
      initial: 'submitting',
      states: {
        submitting: {
          invoke: {
            src: 'submit',
            input: ({ context }) => ({ template: context.template! }),
            onDone: { target: 'awaitingIssuance', actions: assign({ pending: ({ event }) => event.output, requested: ({ context }) => context.template }) },
            onError: { target: `#${id}.backingOff`, actions: { type: 'failed', params: ({ event }) => ({ error: event.error }) } },
          },
        },
        awaitingIssuance: {
          invoke: {
            src: 'waitForIssuance',
            input: ({ context }) => context.pending!,
            onDone: 'storing',
            onError: {
              target: `#${id}.backingOff`,
              actions: { type: 'failed', params: ({ event }) => ({ error: new Error(`certificate request was not signed: ${errorText(event.error)}`) }) },
            },
          },
          after: {
            issuanceTimeout: {
              target: `#${id}.backingOff`,
              actions: { type: 'failed', params: () => ({ error: new Error('certificate request was not signed: timed out waiting for the condition') }) },
            },
          },
        },
        storing: {
          invoke: {
            src: 'store',
            input: ({ context }) => ({ request: context.pending!, template: context.template! }),
            onDone: {
              target: `#${id}.valid`,
              actions: assign(({ context, event }) => ({
                current: event.output.leaf,
                deadline: event.output.deadline,
                pending: null,
                failures: 0,
                lastError: null,
                rotations: context.rotations + 1,
              })),
            },
            onError: {
              target: `#${id}.backingOff`,
              actions: { type: 'failed', params: ({ event }) => ({ error: new Error(`Unable to store the new cert/key pair: ${errorText(event.error)}`) }) },
            },
          },
        },
      },
    },
    backingOff: {
      invoke: {
        src: 'announce',
        input: ({ context }) => ({ what: 'failure' as const, kind: context.kind, error: context.lastError ?? '', failures: context.failures, retryInMs: retryDelayMs(context.failures, 0) }),
      },
      after: { retry: [{ guard: 'hasTemplate', target: 'renewing' }, { target: 'waitingForTemplate' }] },
    },
  },
});
}

export const certificateManagerMachine = certificateManagerNamed('certificateManager');
export const servingCertificateManagerMachine = certificateManagerNamed('servingCertificateManager');

export type CertificateManagerMachine = typeof certificateManagerMachine;

/** What a manager does, as the effects implement it (src/certificate/effects.ts). */
export interface CertificateManagerEffects {
  /** The store's pair and its deadline. */
  load(template: CertificateTemplate | null): Promise<ManagedCertificate>;
  /** A new key (kept by the effects) and a CSR for `template`, sent. */
  submit(template: CertificateTemplate, signal: AbortSignal): Promise<PendingRequest>;
  /** Resolves once the request is issued; rejects with the kubelet's words when it is denied, failed, deleted or replaced. */
  waitForIssuance(request: PendingRequest, signal: AbortSignal): Promise<void>;
  /** The issued certificate and its key stored and made current. */
  store(request: PendingRequest, template: CertificateTemplate): Promise<ManagedCertificate>;
  announce(announcement: Announcement): void;
  /** The clock's time (epoch ms). */
  now(): number;
  /** A number in [0, 1) for the back-off's jitter. */
  random(): number;
}

/** The manager's machine (the client's, or `servingCertificateManagerMachine`) with its effects. */
export function certificateManagerWith(effects: CertificateManagerEffects, machine: CertificateManagerMachine = certificateManagerMachine): CertificateManagerMachine {
  return machine.provide({
    actors: {
      load: fromPromise(({ input }) => effects.load(input.template)),
      submit: fromPromise(({ input, signal }) => effects.submit(input.template, signal)),
      waitForIssuance: fromPromise(({ input, signal }) => effects.waitForIssuance(input, signal)),
      store: fromPromise(({ input }) => effects.store(input.request, input.template)),
      announce: fromPromise(async ({ input }) => effects.announce(input)),
    },
    delays: {
      untilDeadline: ({ context }) => Math.max(0, (context.deadline ?? 0) - effects.now()),
      retry: ({ context }) => retryDelayMs(context.failures, effects.random()),
    },
  });
}

/** The manager's line on the visualizer: `expires 2027-12-07 21:30 · renews 2027-10-… · CSR csr-x pending`. */
export function certificateManagerSummary(context: CertificateManagerContext): string {
  const minute = (at: number | Date) => new Date(at).toISOString().slice(0, 16).replace('T', ' ');
  const parts = [context.current ? `expires ${minute(context.current.notAfter)}` : 'no certificate yet'];
  if (context.template === null) parts.push('no address to request a certificate for');
  else if (context.current && context.deadline !== null && !context.pending) parts.push(`renews ${minute(context.deadline)}`);
  if (context.pending) parts.push(`CSR ${context.pending.name} pending`);
  if (context.rotations) parts.push(`${context.rotations} issued`);
  if (context.lastError) parts.push(`${context.failures} failures: ${context.lastError}`);
  return parts.join(' · ');
}
