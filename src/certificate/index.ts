/**
 * What the agent composes the node's client identity from (loaded on demand: a node without
 * --bootstrap-kubeconfig or rotateCertificates never loads it).
 */
export { loadClientIdentity, kubeconfigClientPair, loadKubeconfig } from './bootstrap.ts';
export { certificateManagerWith } from './certificateManager.ts';
export { CLIENT_SIGNER, ROTATION_USAGES, clientTemplate } from './csr.ts';
export { createCertificateManagerEffects } from './effects.ts';
export { startExpiryCheck } from './expiry.ts';
export { CertificateFileStore } from './store.ts';
