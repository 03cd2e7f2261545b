/**
 * The certificate manager (src/certificate/certificateManager.ts) walked with its real effects
 * over a fake CSR API, a store in a temporary directory and the manual clock: issued, rotated at
 * its deadline, denied, failed, deleted, timed out, backing off.
 */
import { mkdtemp, readlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Actor, createActor } from 'xstate';
import { type CertificateManagerMachine, certificateManagerSummary, certificateManagerWith } from '../../src/certificate/certificateManager.ts';
import { CLIENT_SIGNER, ROTATION_USAGES, clientTemplate } from '../../src/certificate/csr.ts';
import { createCertificateManagerEffects } from '../../src/certificate/effects.ts';
import { servingTemplate } from '../../src/certificate/servingTemplate.ts';
import { CertificateFileStore } from '../../src/certificate/store.ts';
import { ApiError } from '../../src/client/api.ts';
import type { Logger } from '../../src/log.ts';
import { testCa } from '../support/csrSigner.ts';
import { FakeCsrApi } from '../support/fakeCsrApi.ts';
import { ManualClock } from '../support/manualClock.ts';

const HOUR = 3_600_000;

type Snapshot = ReturnType<Actor<CertificateManagerMachine>['getSnapshot']>;

/**
 * The actor's snapshot once `predicate` holds: the effects' promises and file writes run, and
 * the timers due now fire (a deadline that is now is a 0 ms delay), without moving the clock.
 */
async function until(clock: ManualClock, actor: Actor<CertificateManagerMachine>, predicate: (s: Snapshot) => boolean): Promise<Snapshot> {
  for (let i = 0; i < 500; i++) {
    clock.runDue();
    if (predicate(actor.getSnapshot())) return actor.getSnapshot();
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error(`the manager stayed in ${JSON.stringify(actor.getSnapshot().value)}`);
}
const ca = testCa();

async function manager(options: { random?: number } = {}) {
  const clock = new ManualClock(Date.now());
  const api = new FakeCsrApi(ca);
  const store = await CertificateFileStore.open(await mkdtemp(path.join(os.tmpdir(), 'cert-manager-')), 'kubelet-client', () => clock.now());
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const log: Logger = (level, message, fields) => void lines.push({ level, message, ...(fields ? { fields } : {}) });
  const effects = createCertificateManagerEffects({ signerName: CLIENT_SIGNER, usages: ROTATION_USAGES.client, csrApi: () => api, store, clock, log, random: () => options.random ?? 0.5 });
  const actor: Actor<CertificateManagerMachine> = createActor(certificateManagerWith(effects), { clock, input: { kind: 'client', template: clientTemplate('n1') } });
  actor.start();
  const inState = (value: string) => until(clock, actor, (s) => s.matches(value as never));
  /** The request the manager waits on, once it has sent it. */
  const pending = async () => (await until(clock, actor, (s) => s.matches({ renewing: 'awaitingIssuance' }))).context.pending!.name;
  return { clock, api, store, lines, actor, inState, pending };
}

describe('certificate manager', () => {
  it('asks at once without a certificate, stores the issued one, then renews at 70–90 % of its lifetime', async () => {
    const m = await manager({ random: 0.5 });
    const first = await m.pending();
    expect(first).toMatch(/^csr-/);
    const csr = m.api.csrs.get(first)!;
    expect(csr.spec.signerName).toBe('kubernetes.io/kube-apiserver-client-kubelet');
    expect(csr.spec.usages).toEqual(['digital signature', 'client auth']);
    let changes = 0;
    m.store.onChange(() => changes++);
    const issuedAt = new Date(m.clock.now());
    m.api.issue(first, 10 * HOUR, issuedAt);
    const valid = await m.inState('valid');
    expect(changes).toBe(1);
    expect(m.store.current()?.notAfter.getTime()).toBe(Math.floor((issuedAt.getTime() + 10 * HOUR) / 1000) * 1000);
    expect(await readlink(m.store.currentPath)).toMatch(/kubelet-client-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem$/);
    // random 0.5: 80 % of the lifetime, from NotBefore (seconds in the certificate).
    const notBefore = Math.floor(issuedAt.getTime() / 1000) * 1000;
    expect(valid.context.deadline).toBe(notBefore + 8 * HOUR);
    expect(certificateManagerSummary(valid.context)).toMatch(/^expires \d{4}-\d\d-\d\d \d\d:\d\d · renews \d{4}-.* · 1 issued$/);
    expect(m.api.openWatches).toBe(0);

    m.clock.advance(valid.context.deadline! - m.clock.now() - 1);
    expect(m.actor.getSnapshot().matches('valid')).toBe(true);
    m.clock.advance(1);
    const second = await m.pending();
    expect(second).not.toBe(first);
    expect(certificateManagerSummary(m.actor.getSnapshot().context)).toContain(`CSR ${second} pending`);
    m.api.issue(second, 10 * HOUR, new Date(m.clock.now()));
    await m.inState('valid');
    expect(changes).toBe(2);
    expect(m.actor.getSnapshot().context.rotations).toBe(2);
    // A new key each time.
    expect(m.api.requestPem(first)).not.toBe(m.api.requestPem(second));
    m.actor.stop();
  });

  it.each([
    {
      name: 'denied',
      refuse: (api: FakeCsrApi, csr: string) => api.deny(csr, 'NotMine', 'no'),
      message: 'certificate request was not signed: certificate signing request is denied, reason: NotMine, message: no',
    },
    {
      name: 'failed',
      refuse: (api: FakeCsrApi, csr: string) => api.fail(csr, 'SignerValidationFailure', 'bad usages'),
      message: 'certificate request was not signed: certificate signing request failed, reason: SignerValidationFailure, message: bad usages',
    },
    { name: 'deleted', refuse: (api: FakeCsrApi, csr: string) => api.remove(csr), message: /certificate request was not signed: csr "csr-.*" was deleted/ },
  ])('backs off when the request is $name, with the kubelet\'s words, and asks again after 2 s plus jitter', async ({ refuse, message }) => {
    const m = await manager();
    const first = await m.pending();
    refuse(m.api, first);
    const backingOff = await m.inState('backingOff');
    expect(backingOff.context.lastError).toMatch(message);
    expect(backingOff.context.failures).toBe(1);
    expect(m.lines.some((line) => line.level === 'error' && line.message === backingOff.context.lastError)).toBe(true);
    expect(m.store.current()).toBeNull();
    m.clock.advance(2_099); // 2 s plus the jitter (random 0.5: 5 % of 2 s)
    expect(m.actor.getSnapshot().matches('backingOff')).toBe(true);
    m.clock.advance(1);
    const second = await m.pending();
    expect(second).not.toBe(first);
    m.actor.stop();
  });

  it('gives up on a request after 15 minutes, then backs off 2, 4, 8, 16 s and then 32 s between attempts', async () => {
    const m = await manager({ random: 0 });
    await m.pending();
    m.clock.advance(15 * 60_000);
    const timedOut = await m.inState('backingOff');
    expect(timedOut.context.lastError).toBe('certificate request was not signed: timed out waiting for the condition');
    expect(m.api.openWatches).toBe(0);
    // Later attempts fail at once: the API refuses the request.
    const waits: number[] = [];
    for (const wait of [2_000, 4_000, 8_000, 16_000, 32_000, 32_000]) {
      m.api.createFailure = new ApiError(403, 'Forbidden', 'forbidden', 'POST certificatesigningrequests');
      m.clock.advance(wait - 1);
      expect(m.actor.getSnapshot().matches('backingOff')).toBe(true);
      m.clock.advance(1);
      const again = await until(m.clock, m.actor, (s) => s.matches('backingOff') && s.context.failures === timedOut.context.failures + waits.length + 1);
      expect(again.context.lastError).toBe('cannot create certificate signing request: forbidden');
      waits.push(wait);
    }
    expect(m.actor.getSnapshot().context.failures).toBe(7);
    m.actor.stop();
  });

  it('renews at once a certificate that is not for its template, or one to rotate out, and keeps one that is', async () => {
    const m = await manager();
    const first = await m.pending();
    m.api.issue(first, 10 * HOUR, new Date(m.clock.now()));
    await m.inState('valid');
    m.actor.stop();
    // The next start, for another node's name: the stored certificate does not do.
    const effects = createCertificateManagerEffects({ signerName: CLIENT_SIGNER, usages: ROTATION_USAGES.client, csrApi: () => m.api, store: m.store, clock: m.clock, log: () => {}, random: () => 0.5 });
    const other = createActor(certificateManagerWith(effects), { clock: m.clock, input: { kind: 'client', template: clientTemplate('n2') } }).start();
    await until(m.clock, other, (s) => s.matches({ renewing: 'awaitingIssuance' }));
    other.stop();
    const same = createActor(certificateManagerWith(effects), { clock: m.clock, input: { kind: 'client', template: clientTemplate('n1') } }).start();
    const kept = await until(m.clock, same, (s) => s.matches('valid'));
    expect(kept.context.deadline).toBeGreaterThan(m.clock.now());
    same.stop();
    // A bootstrap pair (a kubeconfig's embedded certificate seeded into the store) is rotated out at once.
    const forced = createActor(certificateManagerWith(createCertificateManagerEffects({ signerName: CLIENT_SIGNER, usages: ROTATION_USAGES.client, csrApi: () => m.api, store: m.store, clock: m.clock, log: () => {}, forceRotation: true })), {
      clock: m.clock,
      input: { kind: 'client', template: clientTemplate('n1') },
    }).start();
    await until(m.clock, forced, (s) => s.matches({ renewing: 'awaitingIssuance' }));
    forced.stop();
  });

  it('waits without a template (a serving certificate before the node has an IP), asks once one comes, and again when the addresses change', async () => {
    const m = await manager();
    m.actor.stop();
    const serving = await CertificateFileStore.open(await mkdtemp(path.join(os.tmpdir(), 'cert-serving-')), 'kubelet-server', () => m.clock.now());
    const effects = createCertificateManagerEffects({ signerName: 'kubernetes.io/kubelet-serving', usages: ROTATION_USAGES.serving, csrApi: () => m.api, store: serving, clock: m.clock, log: () => {} });
    const actor = createActor(certificateManagerWith(effects), { clock: m.clock, input: { kind: 'serving', template: null } }).start();
    const waiting = await until(m.clock, actor, (s) => s.matches('waitingForTemplate'));
    expect(certificateManagerSummary(waiting.context)).toBe('no certificate yet · no address to request a certificate for');
    expect(m.api.names()).toEqual([]);

    const first = servingTemplate('n1', [{ type: 'InternalIP', address: '10.0.0.5' }, { type: 'Hostname', address: 'n1' }])!;
    actor.send({ type: 'CERTIFICATE.TEMPLATE', template: first });
    const asked = await until(m.clock, actor, (s) => s.matches({ renewing: 'awaitingIssuance' }));
    expect(m.api.csrs.get(asked.context.pending!.name)!.spec).toMatchObject({ signerName: 'kubernetes.io/kubelet-serving', usages: ['digital signature', 'server auth'] });
    // The same template again while its request is pending: no second request.
    actor.send({ type: 'CERTIFICATE.TEMPLATE', template: { ...first } });
    expect(actor.getSnapshot().context.pending).toEqual(asked.context.pending);
    m.api.issue(asked.context.pending!.name, 10 * HOUR, new Date(m.clock.now()));
    const issued = await until(m.clock, actor, (s) => s.matches('valid'));
    expect(issued.context.current).toMatchObject({ dnsNames: ['n1'], ipAddresses: ['10.0.0.5'] });

    // A new address: the certificate lacks it, so a new request at once, without waiting for the deadline.
    actor.send({ type: 'CERTIFICATE.TEMPLATE', template: servingTemplate('n1', [{ type: 'InternalIP', address: '10.0.0.6' }, { type: 'Hostname', address: 'n1' }]) });
    const again = await until(m.clock, actor, (s) => s.matches({ renewing: 'awaitingIssuance' }));
    expect(again.context.pending!.name).not.toBe(asked.context.pending!.name);
    expect([...m.api.csrs.values()].filter((csr) => csr.spec.signerName === 'kubernetes.io/kubelet-serving')).toHaveLength(2);
    actor.stop();

    // Started again without addresses, then told ones its stored certificate already covers: kept, no request.
    const restarted = createActor(certificateManagerWith(effects), { clock: m.clock, input: { kind: 'serving', template: null } }).start();
    await until(m.clock, restarted, (s) => s.matches('waitingForTemplate'));
    restarted.send({ type: 'CERTIFICATE.TEMPLATE', template: first });
    const kept = await until(m.clock, restarted, (s) => s.matches('valid'));
    expect(kept.context.deadline).toBeGreaterThan(m.clock.now());
    expect([...m.api.csrs.values()].filter((csr) => csr.spec.signerName === 'kubernetes.io/kubelet-serving')).toHaveLength(2);
    restarted.stop();
  });
});
