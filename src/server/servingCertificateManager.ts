/**
 * The serving certificate manager of serverTLSBootstrap (pkg/kubelet/certificate/kubelet.go
 * NewKubeletServerCertificateManager): a certificate manager (src/certificate) with the serving
 * template — CN `system:node:<name>`, O `system:nodes`, the Node's addresses as SANs — asking the
 * `kubernetes.io/kubelet-serving` signer for `digital signature` and `server auth`, keeping its
 * pairs in `<cert-dir>/kubelet-server-<timestamp>.pem` behind `kubelet-server-current.pem`. The
 * store is the port's certificate source: none until the first request is approved and issued.
 *
 * The manager runs as the node's `servingCertificateManager` loop (src/certificatemanager/loop.ts),
 * a line of its own on the visualizer beside the client's; this module opens its store and composes
 * its machine, before the node starts.
 *
 * The template is fixed for the agent's life, as statelet's Node addresses are (--node-ip, the
 * machine's address, the hostname); after a restart with other addresses the stored certificate
 * no longer satisfies the template and a new one is requested at once (the manager's deadline).
 */
import type { NodeAddress } from '../api/cluster.ts';
import { type CertificateManagerInput, type CertificateManagerMachine, certificateManagerWith, servingCertificateManagerMachine } from '../certificate/certificateManager.ts';
import { ROTATION_USAGES, SERVING_SIGNER } from '../certificate/csr.ts';
import { createCertificateManagerEffects } from '../certificate/effects.ts';
import { servingTemplate } from '../certificate/servingTemplate.ts';
import type { CertificateSource } from '../certificate/source.ts';
import { CertificateFileStore } from '../certificate/store.ts';
import type { CertificateSigningRequests } from '../client/api.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';

export interface ServingCertificateManagerOptions {
  certDir: string;
  nodeName: string;
  /** The Node's status.addresses. */
  addresses: readonly NodeAddress[];
  /** The CSR API, under the node's current client identity. */
  csrApi(): CertificateSigningRequests;
  /** Metrics: the TTL of the pair in use, read from the store, and a count of failed renewals. */
  metrics?: { addServingCertificateManager(source: CertificateSource, now: () => number): { renewFailed(): void } };
  clock: Clock;
  log: Logger;
}

export interface ServingCertificateManager {
  /** The stored pair the port presents; null until one is issued. */
  source: CertificateSource;
  /** The manager's machine with its effects, and its input: what the node loop starts. */
  logic: CertificateManagerMachine;
  input: CertificateManagerInput;
}

/** Opens the `kubelet-server` store and composes its manager. */
export async function prepareServingCertificateManager(options: ServingCertificateManagerOptions): Promise<ServingCertificateManager> {
  const { clock, log } = options;
  const store = await CertificateFileStore.open(options.certDir, 'kubelet-server', () => clock.now());
  const template = servingTemplate(options.nodeName, options.addresses);
  if (!template) log('warn', 'No IP address to request a serving certificate for; the node serves none until it has one', { node: options.nodeName });
  const counted = options.metrics?.addServingCertificateManager(store, () => clock.now());
  const effects = createCertificateManagerEffects({
    signerName: SERVING_SIGNER,
    usages: ROTATION_USAGES.serving,
    csrApi: options.csrApi,
    store,
    clock,
    log,
    ...(counted ? { onRenewFailure: counted.renewFailed } : {}),
  });
  return { source: store, logic: certificateManagerWith(effects, servingCertificateManagerMachine), input: { kind: 'serving', template } };
}
