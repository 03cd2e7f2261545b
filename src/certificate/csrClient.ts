/**
 * Sending a CSR and waiting for its certificate (client-go util/certificate/csr/csr.go
 * RequestCertificate, WaitForCertificate), over the CSR API of whichever identity sends it.
 */
import type { CertificateSigningRequest } from '../api/cluster.ts';
import { type CertificateSigningRequests, apiErrorText, isAlreadyExists, isGone } from '../client/api.ts';
import { type Clock, sleepOn } from '../clock.ts';
import { type CertificateTemplate, type KeyUsage, csrMatches } from './csr.ts';
import { issuanceOf } from './issuance.ts';

/** How long a watch that failed waits before it lists and watches again (an informer's retry, roughly). */
const REWATCH_MS = 1_000;

export interface CsrToSend {
  /** PEM `CERTIFICATE REQUEST`. */
  request: string;
  /** A fixed name (the bootstrap request's), or none: `generateName: csr-`. */
  name?: string;
  signerName: string;
  usages: readonly KeyUsage[];
  /** The request's key and subject: an existing request of the same name must have them (ensureCompatible). */
  keyPem: string;
  template: CertificateTemplate;
}

/** Creates the request; one of the same fixed name is reused when it was made with the same key and subject. */
export async function requestCertificate(api: CertificateSigningRequests, csr: CsrToSend): Promise<{ name: string; uid: string }> {
  const object: CertificateSigningRequest = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: csr.name ? { name: csr.name } : { generateName: 'csr-' },
    spec: { request: Buffer.from(csr.request).toString('base64'), signerName: csr.signerName, usages: [...csr.usages] },
  };
  let created: CertificateSigningRequest;
  try {
    created = await api.createCertificateSigningRequest(object);
  } catch (err) {
    if (!(csr.name && isAlreadyExists(err))) throw new Error(`cannot create certificate signing request: ${apiErrorText(err)}`, { cause: err });
    try {
      created = await api.getCertificateSigningRequest(csr.name);
    } catch (getErr) {
      throw new Error(`cannot retrieve certificate signing request: ${apiErrorText(getErr)}`, { cause: getErr });
    }
    const existing = Buffer.from(created.spec.request, 'base64').toString('utf8');
    if (created.spec.signerName !== csr.signerName) throw new Error(`retrieved csr is not compatible: csr signerNames differ: new "${created.spec.signerName}", orig: "${csr.signerName}"`);
    if (!csrMatches(existing, csr.keyPem, csr.template)) throw new Error('retrieved csr is not compatible: its subject or key differs from this request\'s');
  }
  return { name: created.metadata.name ?? '', uid: created.metadata.uid ?? '' };
}

/**
 * The issued certificate chain (PEM) of request `name` with UID `uid`: it is listed and then
 * watched by `metadata.name` (a watch the server closes resumes; a 410 lists again; another
 * failure waits a second and starts over). Rejects with the kubelet's words when the request is
 * denied, failed, deleted or replaced, and with the signal's reason when aborted.
 */
export function waitForCertificate(api: CertificateSigningRequests, request: { name: string; uid: string }, clock: Clock, signal: AbortSignal): Promise<string> {
  const fieldSelector = `metadata.name=${request.name}`;
  const sleep = sleepOn(clock);
  return new Promise<string>((resolve, reject) => {
    let watch: { stop(): void } | undefined;
    let resourceVersion = '';
    let done = false;
    const finish = (outcome: { issued: string } | { refused: string } | { aborted: unknown }) => {
      if (done) return;
      done = true;
      watch?.stop();
      signal.removeEventListener('abort', onAbort);
      if ('issued' in outcome) resolve(outcome.issued);
      else if ('refused' in outcome) reject(new Error(outcome.refused));
      else reject(outcome.aborted);
    };
    const onAbort = () => finish({ aborted: signal.reason ?? new Error('aborted') });
    signal.addEventListener('abort', onAbort, { once: true });
    const look = (type: 'ADDED' | 'MODIFIED' | 'DELETED', csr: CertificateSigningRequest) => {
      if (csr.metadata.name !== request.name) return;
      const issuance = issuanceOf(type, csr, request.name, request.uid);
      if (issuance) finish(issuance);
    };
    const retry = () => {
      sleep(REWATCH_MS, signal).then(list, () => undefined);
    };
    const startWatch = () => {
      if (done) return;
      watch = api.watchCertificateSigningRequests(fieldSelector, resourceVersion, {
        onEvent: (type, csr) => {
          if (csr.metadata.resourceVersion) resourceVersion = csr.metadata.resourceVersion;
          look(type, csr);
        },
        onBookmark: (version) => {
          resourceVersion = version;
        },
        onEnd: (err) => {
          watch = undefined;
          if (done) return;
          if (!err) startWatch();
          else if (isGone(err)) list();
          else retry();
        },
      });
    };
    const list = () => {
      if (done) return;
      api.listCertificateSigningRequests(fieldSelector).then(
        (result) => {
          const found = result.items.find((item) => item.metadata.name === request.name);
          if (!found) return finish({ refused: `csr "${request.name}" was deleted` });
          look('ADDED', found);
          resourceVersion = result.resourceVersion;
          startWatch();
        },
        () => retry(),
      );
    };
    if (signal.aborted) onAbort();
    else list();
  });
}
