/**
 * The client certificate manager's registration: in a cluster with `rotateCertificates`, the node
 * keeps its client certificate current beside its other loops (kubelet.go: the kubelet starts its
 * client certificate manager with the node; src/certificate holds the machine and its effects,
 * which the agent composes with the node's store and API clients).
 */
import { certificateManagerMachine, certificateManagerSummary } from '../certificate/certificateManager.ts';
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';

export const certificateManagerLoop = defineNodeLoop({
  name: 'certificateManager',
  machine: certificateManagerMachine,
  start: ({ cluster }) => cluster?.clientCertificateManager ?? null,
  accepts: [],
  /** `expires 2027-12-07 21:30 · renews 2027-10-… · 2 issued`, a pending CSR, or the failures. */
  summary: certificateManagerSummary,
});
