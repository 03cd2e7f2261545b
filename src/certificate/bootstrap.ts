/**
 * TLS bootstrap of the node's client identity (pkg/kubelet/certificate/bootstrap/bootstrap.go):
 *   - `--kubeconfig` whose client certificates all parse and none is past NotAfter is used as it
 *     is (isClientConfigStillValid);
 *   - otherwise, with `--bootstrap-kubeconfig` and rotation on (LoadClientConfig), the kubeconfig is
 *     written at once pointing at `<cert-dir>/kubelet-client-current.pem`, and the certificate
 *     manager requests that certificate in the background with the bootstrap credentials;
 *   - with rotation off (LoadClientCert), the certificate is requested here before the node starts:
 *     the key kept in `<cert-dir>/kubelet-client.key.tmp` across restarts, the API server awaited
 *     (`/healthz`, ≤ 1 min), a `node-csr-<digest>` request, waited for ≤ 3600 s, stored, the
 *     kubeconfig written. A bootstrap that cannot finish says why and is tried again.
 * Files are written whole (a temporary file renamed) and 0600.
 */
import { X509Certificate } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { CertificateSigningRequests } from '../client/api.ts';
import { type Clock, sleepOn } from '../clock.ts';
import type { Logger } from '../log.ts';
import { BOOTSTRAP_USAGES, CLIENT_SIGNER, clientTemplate, digestedName, generateNodeKey, makeCsr } from './csr.ts';
import { requestCertificate, waitForCertificate } from './csrClient.ts';
import { pemBlocks } from './pair.ts';
import type { CertificateFileStore } from './store.ts';

/** The bootstrap's key, kept until its certificate is stored (bootstrap.go tmpPrivateKeyFile). */
export const TMP_PRIVATE_KEY_FILE = 'kubelet-client.key.tmp';
/** How long the CSR of a synchronous bootstrap is waited for (requestNodeCertificate). */
const BOOTSTRAP_WAIT_MS = 3600_000;
/** How long the API server is awaited before the request is sent anyway (waitForServer). */
const SERVER_WAIT_MS = 60_000;
const SERVER_POLL_MS = 2_000;

/** Writes `text` whole: a temporary file beside it (its directory made, as clientcmd.WriteToFile does), synced, renamed over it. */
export async function writeFileAtomically(file: string, text: string, mode: number): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
  const partial = `${file}.${process.pid}.tmp`;
  const handle = await open(partial, 'w', mode);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(partial, file);
}

export function loadKubeconfig(file: string): KubeConfig {
  const config = new KubeConfig();
  config.loadFromFile(file);
  return config;
}

/**
 * The client certificate and key (PEM) of the kubeconfig's current user, from its files or its
 * data (`embedded`); null when it has none.
 */
export async function kubeconfigClientPair(config: KubeConfig): Promise<{ cert: string; key: string; embedded: boolean } | null> {
  const user = config.getCurrentUser();
  const read = async (data: string | undefined, file: string | undefined) =>
    data ? Buffer.from(data, 'base64').toString('utf8') : file ? await readFile(file, 'utf8') : null;
  const cert = await read(user?.certData, user?.certFile);
  const key = await read(user?.keyData, user?.keyFile);
  return cert && key ? { cert, key, embedded: Boolean(user?.certData) } : null;
}

/**
 * Whether `file` is a kubeconfig whose client certificates all parse and none has expired
 * (isClientConfigStillValid; its key and CA are not checked); why not, for the log.
 */
export async function clientConfigStillValid(file: string, now: number): Promise<{ valid: true } | { valid: false; reason: string }> {
  if (!(await stat(file).then(() => true, () => false))) return { valid: false, reason: `${file} does not exist` };
  let pair: { cert: string; key: string } | null;
  try {
    pair = await kubeconfigClientPair(loadKubeconfig(file));
  } catch (err) {
    return { valid: false, reason: `unable to read existing bootstrap client config from ${file}: ${(err as Error).message}` };
  }
  const certs = pemBlocks(pair?.cert ?? '').filter((block) => block.type === 'CERTIFICATE');
  if (certs.length === 0) return { valid: false, reason: `unable to read TLS certificates from existing bootstrap client config read from ${file}` };
  for (const block of certs) {
    let notAfter: number;
    try {
      notAfter = Date.parse(new X509Certificate(block.pem).validTo);
    } catch (err) {
      return { valid: false, reason: `unable to load TLS certificates from existing bootstrap client config read from ${file}: ${(err as Error).message}` };
    }
    if (now > notAfter) return { valid: false, reason: `part of the existing bootstrap client certificate in ${file} is expired: ${new Date(notAfter).toISOString()}` };
  }
  return { valid: true };
}

/**
 * The kubeconfig of the node's own certificate (writeKubeconfigFromBootstrapping): the bootstrap
 * file's server and CA as `default-cluster`, `default-auth` with the certificate and key both in
 * `pemPath`, `default-context` (namespace `default`) current.
 */
export function kubeconfigFromBootstrap(bootstrap: KubeConfig, pemPath: string): string {
  const cluster = bootstrap.getCurrentCluster();
  if (!cluster?.server) throw new Error('the bootstrap kubeconfig\'s current context names no cluster server');
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'default-cluster',
        cluster: {
          server: cluster.server,
          ...(cluster.skipTLSVerify ? { 'insecure-skip-tls-verify': true } : {}),
          ...(cluster.caFile ? { 'certificate-authority': cluster.caFile } : cluster.caData ? { 'certificate-authority-data': cluster.caData } : {}),
        },
      },
    ],
    users: [{ name: 'default-auth', user: { 'client-certificate': pemPath, 'client-key': pemPath } }],
    contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', user: 'default-auth', namespace: 'default' } }],
    'current-context': 'default-context',
  });
}

export interface BootstrapOptions {
  kubeconfig: string;
  bootstrapKubeconfig?: string;
  nodeName: string;
  store: CertificateFileStore;
  rotateCertificates: boolean;
  /** The CSR API with the bootstrap credentials (rotation off: the synchronous request). */
  bootstrapApi(): CertificateSigningRequests;
  clock: Clock;
  log: Logger;
  /** Stops a synchronous bootstrap's retries (the agent stopping). */
  signal?: AbortSignal;
}

/** What the agent goes on with: the kubeconfig to use, and whether the manager must ask with the bootstrap credentials while it has no certificate. */
export interface ClientIdentity {
  kubeconfig: string;
  /** The bootstrap kubeconfig, when the node's own certificate is still to come (the manager's CSR credentials until then). */
  bootstrapKubeconfig?: string;
}

/** LoadClientConfig / LoadClientCert as the kubelet's server.go chooses between them. */
export async function loadClientIdentity(options: BootstrapOptions): Promise<ClientIdentity> {
  const { kubeconfig, bootstrapKubeconfig, log } = options;
  if (!bootstrapKubeconfig) return { kubeconfig };
  const still = await clientConfigStillValid(kubeconfig, options.clock.now());
  if (still.valid) {
    log('info', 'Current kubeconfig file contents are still valid, no bootstrap necessary', { kubeconfig });
    return { kubeconfig };
  }
  log('info', 'Kubeconfig is missing or its client certificate cannot be used; bootstrapping', { kubeconfig, reason: still.reason });
  const bootstrap = loadBootstrap(bootstrapKubeconfig);
  if (options.rotateCertificates) {
    await writeFileAtomically(kubeconfig, kubeconfigFromBootstrap(bootstrap, options.store.currentPath), 0o600);
    log('info', 'Use the bootstrap credentials to request a cert, and set kubeconfig to point to the certificate dir', { kubeconfig, certificate: options.store.currentPath });
    return { kubeconfig, bootstrapKubeconfig };
  }
  const sleep = sleepOn(options.clock);
  for (;;) {
    try {
      await loadClientCert(options, bootstrap);
      return { kubeconfig };
    } catch (err) {
      if (options.signal?.aborted) throw err;
      log('error', 'Failed to bootstrap the client certificate; retrying', { err: (err as Error).message, retryInMs: BOOTSTRAP_RETRY_MS });
      await sleep(BOOTSTRAP_RETRY_MS, options.signal);
    }
  }
}

/** Between two tries of a synchronous bootstrap: kubeadm's kubelet.service restarts the kubelet after 10 s (RestartSec=10). */
const BOOTSTRAP_RETRY_MS = 10_000;

function loadBootstrap(file: string): KubeConfig {
  try {
    return loadKubeconfig(file);
  } catch (err) {
    throw new Error(`unable to load bootstrap kubeconfig: ${(err as Error).message}`);
  }
}

/** One synchronous bootstrap (LoadClientCert). */
async function loadClientCert(options: BootstrapOptions, bootstrap: KubeConfig): Promise<void> {
  const { store, clock, log, nodeName } = options;
  const keyFile = path.join(store.certDir, TMP_PRIVATE_KEY_FILE);
  // The current pair's key, else the one kept from an earlier try, else a new one kept for the next.
  let keyPem = store.currentPair()?.key ?? null;
  if (!keyPem) {
    keyPem = await readFile(keyFile, 'utf8').catch(() => null);
    if (!keyPem || !pemBlocks(keyPem).some((block) => block.type.endsWith('PRIVATE KEY'))) {
      keyPem = generateNodeKey();
      await writeFileAtomically(keyFile, keyPem, 0o600);
    }
  }
  const api = options.bootstrapApi();
  const signal = options.signal ?? new AbortController().signal;
  if (!(await waitForServer(api, clock, signal))) log('info', 'Error waiting for apiserver to come up', { err: 'timed out waiting to connect to apiserver' });
  const template = clientTemplate(nodeName);
  const request = await requestCertificate(api, {
    request: makeCsr(keyPem, template),
    name: digestedName(keyPem, template, BOOTSTRAP_USAGES),
    signerName: CLIENT_SIGNER,
    usages: BOOTSTRAP_USAGES,
    keyPem,
    template,
  });
  log('info', 'Waiting for client certificate to be issued', { csr: request.name });
  const timeout = new AbortController();
  const timer = clock.setTimeout(() => timeout.abort(new Error('timed out waiting for the condition')), BOOTSTRAP_WAIT_MS);
  let cert: string;
  try {
    cert = await waitForCertificate(api, request, clock, AbortSignal.any([signal, timeout.signal]));
  } finally {
    clock.clearTimeout(timer);
  }
  await store.update(cert, keyPem);
  await rm(keyFile, { force: true });
  await writeFileAtomically(options.kubeconfig, kubeconfigFromBootstrap(bootstrap, store.currentPath), 0o600);
  log('info', 'Client certificate issued; kubeconfig written', { csr: request.name, kubeconfig: options.kubeconfig });
}

/** Polls `/healthz` every 2 s for up to a minute (waitForServer): whether the API server answered. */
async function waitForServer(api: CertificateSigningRequests, clock: Clock, signal: AbortSignal): Promise<boolean> {
  const sleep = sleepOn(clock);
  const until = clock.now() + SERVER_WAIT_MS;
  while (clock.now() < until) {
    if (await api.serverResponds()) return true;
    await sleep(SERVER_POLL_MS, signal);
  }
  return false;
}
