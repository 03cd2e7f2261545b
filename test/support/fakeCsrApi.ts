/**
 * An in-memory CSR API for the certificate machinery's unit tests: requests created (with
 * `generateName`), read, listed and watched by name, and the approver's and signer's moves made by
 * the test (`issue`, `deny`, `fail`, `remove`). The real API server is what test/cluster runs against.
 */
import type { CertificateSigningRequest } from '../../src/api/cluster.ts';
import { ApiError, type CertificateSigningRequests, type WatchEventType, type WatchHandlers } from '../../src/client/api.ts';
import type { TestCa } from './csrSigner.ts';

export class FakeCsrApi implements CertificateSigningRequests {
  readonly csrs = new Map<string, CertificateSigningRequest>();
  private rv = 1;
  private seq = 0;
  private readonly watchers = new Set<{ name: string; handlers: WatchHandlers<CertificateSigningRequest> }>();
  /** The next create fails with this. */
  createFailure: ApiError | null = null;
  responds = true;
  /** Set: each request created is approved and signed for this long right after (an auto-approver). */
  autoIssueMs: number | null = null;

  constructor(private readonly ca: TestCa) {}

  private notify(type: WatchEventType, csr: CertificateSigningRequest) {
    for (const watcher of this.watchers) if (watcher.name === csr.metadata.name) watcher.handlers.onEvent(type, structuredClone(csr));
  }

  async createCertificateSigningRequest(csr: CertificateSigningRequest): Promise<CertificateSigningRequest> {
    if (this.createFailure) {
      const failure = this.createFailure;
      this.createFailure = null;
      throw failure;
    }
    const name = csr.metadata.name ?? `${csr.metadata.generateName}${(this.seq++).toString(36).padStart(5, 'x')}`;
    if (this.csrs.has(name)) throw new ApiError(409, 'AlreadyExists', `certificatesigningrequests.certificates.k8s.io "${name}" already exists`, 'POST certificatesigningrequests');
    const stored: CertificateSigningRequest = { ...structuredClone(csr), metadata: { name, uid: `uid-${this.seq++}`, resourceVersion: String(this.rv++) }, status: {} };
    this.csrs.set(name, stored);
    this.notify('ADDED', stored);
    if (this.autoIssueMs !== null) {
      const lifetimeMs = this.autoIssueMs;
      setTimeout(() => this.issue(name, lifetimeMs), 1);
    }
    return structuredClone(stored);
  }

  async getCertificateSigningRequest(name: string): Promise<CertificateSigningRequest> {
    const csr = this.csrs.get(name);
    if (!csr) throw new ApiError(404, 'NotFound', `certificatesigningrequests.certificates.k8s.io "${name}" not found`, `GET certificatesigningrequests ${name}`);
    return structuredClone(csr);
  }

  async listCertificateSigningRequests(fieldSelector: string) {
    const name = fieldSelector.replace(/^metadata\.name=/, '');
    return { items: [...this.csrs.values()].filter((csr) => csr.metadata.name === name).map((csr) => structuredClone(csr)), resourceVersion: String(this.rv) };
  }

  watchCertificateSigningRequests(fieldSelector: string, _resourceVersion: string, handlers: WatchHandlers<CertificateSigningRequest>) {
    const watcher = { name: fieldSelector.replace(/^metadata\.name=/, ''), handlers };
    this.watchers.add(watcher);
    return { stop: () => void this.watchers.delete(watcher) };
  }

  async serverResponds(): Promise<boolean> {
    return this.responds;
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  /** The request's PEM, as sent. */
  requestPem(name: string): string {
    return Buffer.from(this.csrs.get(name)!.spec.request, 'base64').toString('utf8');
  }

  private update(name: string, change: (csr: CertificateSigningRequest) => void) {
    const csr = this.csrs.get(name);
    if (!csr) throw new Error(`no csr ${name}`);
    change(csr);
    csr.metadata.resourceVersion = String(this.rv++);
    this.notify('MODIFIED', csr);
  }

  /** Approved and signed for `lifetimeMs` from `notBefore`. */
  issue(name: string, lifetimeMs: number, notBefore?: Date): void {
    this.update(name, (csr) => {
      csr.status = {
        conditions: [{ type: 'Approved', status: 'True', reason: 'AutoApproved', message: 'Auto approving kubelet client certificate after SubjectAccessReview.' }],
        certificate: Buffer.from(this.ca.sign(this.requestPem(name), { lifetimeMs, ...(notBefore ? { notBefore } : {}) })).toString('base64'),
      };
    });
  }

  deny(name: string, reason: string, message: string): void {
    this.update(name, (csr) => {
      csr.status = { conditions: [{ type: 'Denied', status: 'True', reason, message }] };
    });
  }

  fail(name: string, reason: string, message: string): void {
    this.update(name, (csr) => {
      csr.status = { conditions: [{ type: 'Approved', status: 'True' }, { type: 'Failed', status: 'True', reason, message }] };
    });
  }

  remove(name: string): void {
    const csr = this.csrs.get(name)!;
    this.csrs.delete(name);
    for (const watcher of this.watchers) if (watcher.name === name) watcher.handlers.onEvent('DELETED', structuredClone(csr));
  }

  /** The names of the requests, in creation order. */
  names(): string[] {
    return [...this.csrs.keys()];
  }
}
