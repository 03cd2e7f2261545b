/**
 * The certificate manager's effects over the API and the file store (certificate_manager.go
 * rotateCerts, generateCSR, getClientset): a fresh ECDSA key per attempt, kept here (never in the
 * machine's context or events) until its certificate is stored; the CSR sent with the identity the
 * manager is given for it (the current certificate's, or the bootstrap credentials while there is
 * none); the wait for issuance; the store's swap.
 */
import type { CertificateSigningRequests } from '../client/api.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import type { Announcement, CertificateManagerEffects, ManagedCertificate } from './certificateManager.ts';
import { type CertificateTemplate, type KeyUsage, generateNodeKey, makeCsr } from './csr.ts';
import { requestCertificate, waitForCertificate } from './csrClient.ts';
import { nextRotationDeadline } from './deadline.ts';
import type { CertificateFileStore } from './store.ts';

export interface CertificateManagerEffectsOptions {
  /** The signer asked; also the manager's name in its log lines (certificate_manager.go NewManager). */
  signerName: string;
  usages: readonly KeyUsage[];
  /** The CSR API to send with now (client-go ClientsetFn: the current identity's, the bootstrap one while there is none). */
  csrApi(): CertificateSigningRequests;
  store: CertificateFileStore;
  clock: Clock;
  log: Logger;
  random?: () => number;
  /** Told of each failed attempt (the renew-errors metric). */
  onRenewFailure?(): void;
  /** The first deadline is now, whatever the certificate (a bootstrap pair to rotate out: getCurrentCertificateOrBootstrap's forceRotation). */
  forceRotation?: boolean;
}

export function createCertificateManagerEffects(options: CertificateManagerEffectsOptions): CertificateManagerEffects {
  const { store, clock, log, signerName } = options;
  const random = options.random ?? Math.random;
  /** The key of each request sent and not yet stored, by the request's name. */
  const keys = new Map<string, string>();
  /** The certificate issued for a request, until it is stored with its key. */
  const issued = new Map<string, string>();
  const managed = (template: CertificateTemplate | null): ManagedCertificate => {
    const leaf = store.currentPair()?.leaf ?? null;
    return { leaf, deadline: nextRotationDeadline(leaf, template, clock.now(), random()) };
  };
  return {
    load: async (template) => {
      const loaded = managed(template);
      return options.forceRotation ? { ...loaded, deadline: clock.now() } : loaded;
    },
    submit: async (template) => {
      log('info', 'Rotating certificates', { signer: signerName });
      const keyPem = generateNodeKey();
      const request = await requestCertificate(options.csrApi(), { request: makeCsr(keyPem, template), signerName, usages: options.usages, keyPem, template });
      // One request at a time: an earlier one's key and certificate are of no more use.
      keys.clear();
      issued.clear();
      keys.set(request.name, keyPem);
      log('info', 'Certificate signing request sent; waiting for it to be issued', { signer: signerName, csr: request.name });
      return request;
    },
    waitForIssuance: async (request, signal) => {
      const cert = await waitForCertificate(options.csrApi(), request, clock, signal);
      issued.set(request.name, cert);
    },
    store: async (request, template) => {
      const key = keys.get(request.name);
      const cert = issued.get(request.name);
      if (!key || !cert) throw new Error(`no key or certificate kept for csr "${request.name}"`);
      const pair = await store.update(cert, key);
      keys.delete(request.name);
      issued.delete(request.name);
      log('info', 'Certificate issued and stored', { signer: signerName, csr: request.name, file: store.currentPath, notAfter: pair.leaf.notAfter.toISOString() });
      return managed(template);
    },
    announce: (announcement: Announcement) => {
      if (announcement.what === 'deadline') {
        const waitMs = Math.max(0, announcement.deadline - clock.now());
        if (announcement.notAfter) log('info', 'Certificate expiration and rotation deadline', { signer: signerName, expiration: announcement.notAfter.toISOString(), rotationDeadline: new Date(announcement.deadline).toISOString(), waitMs });
      } else {
        options.onRenewFailure?.();
        log('error', announcement.error, { signer: signerName, failures: announcement.failures, retryInMs: announcement.retryInMs });
      }
    },
    now: () => clock.now(),
    random,
  };
}
