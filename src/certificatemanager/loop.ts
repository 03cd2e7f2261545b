/**
 * The certificate managers' registrations: in a cluster with `rotateCertificates`, the node keeps
 * its client certificate current beside its other loops, and with `serverTLSBootstrap` its serving
 * certificate (kubelet.go: the kubelet starts its client certificate manager with the node, and
 * the serving one in NewMainKubelet; src/certificate holds the machine and its effects, which the
 * agent composes with the node's stores and API clients).
 */
import { certificateManagerMachine, certificateManagerSummary, servingCertificateManagerMachine } from '../certificate/certificateManager.ts';
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';

export const certificateManagerLoop = defineNodeLoop({
  name: 'certificateManager',
  machine: certificateManagerMachine,
  start: ({ cluster }) => cluster?.clientCertificateManager ?? null,
  accepts: [],
  /** `expires 2027-12-07 21:30 · renews 2027-10-… · 2 issued`, a pending CSR, or the failures. */
  summary: certificateManagerSummary,
});

export const servingCertificateManagerLoop = defineNodeLoop({
  name: 'servingCertificateManager',
  machine: servingCertificateManagerMachine,
  start: ({ cluster }) => cluster?.servingCertificateManager ?? null,
  accepts: [],
  /** As the client's: the serving certificate's expiry, its next renewal, a pending CSR waiting for approval. */
  summary: certificateManagerSummary,
});
