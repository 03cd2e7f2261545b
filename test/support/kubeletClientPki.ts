/**
 * The certificates with which the test control plane's API server calls the agents' authenticated
 * API (`kubectl logs`, exec, port-forward go through it): a CA, and a client certificate signed by
 * it for `kube-apiserver-kubelet-client` in group `system:masters` (what kubeadm gives the API
 * server). Agents are started with `--client-ca-file` = that CA. A kubeadm-like control plane
 * passes its cluster CA, as kubeadm signs this certificate with it (and its kubelets' config.yaml
 * names that CA as `authentication.x509.clientCAFile`); otherwise a CA of its own is made.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import forge from 'node-forge';
import type { ClusterCa } from './clusterPki.ts';
import { CA_EXTENSIONS, certificate, keyPair } from './testPki.ts';

export interface KubeletClientPki {
  caFile: string;
  certFile: string;
  keyFile: string;
}

const CLIENT_NAME = [
  { name: 'commonName', value: 'kube-apiserver-kubelet-client' },
  { name: 'organizationName', value: 'system:masters' },
];
const CLIENT_EXTENSIONS = [{ name: 'keyUsage', digitalSignature: true, keyEncipherment: true }, { name: 'extKeyUsage', clientAuth: true }];

export async function writeKubeletClientPki(dir: string, clusterCa?: ClusterCa): Promise<KubeletClientPki> {
  if (clusterCa) {
    const issued = await clusterCa.issue(dir, 'apiserver-kubelet-client', CLIENT_NAME, CLIENT_EXTENSIONS);
    return { caFile: clusterCa.caFile, ...issued };
  }
  const ca = keyPair();
  const caName = [{ name: 'commonName', value: 'statelet-test-kubelet-client-ca' }];
  const caCert = certificate(caName, caName, ca.publicKey, ca.privateKey, '01', CA_EXTENSIONS);
  const client = keyPair();
  const clientCert = certificate(CLIENT_NAME, caName, client.publicKey, ca.privateKey, '02', CLIENT_EXTENSIONS);
  const files = { caFile: path.join(dir, 'kubelet-client-ca.crt'), certFile: path.join(dir, 'kubelet-client.crt'), keyFile: path.join(dir, 'kubelet-client.key') };
  await writeFile(files.caFile, forge.pki.certificateToPem(caCert));
  await writeFile(files.certFile, forge.pki.certificateToPem(clientCert));
  await writeFile(files.keyFile, client.privatePem, { mode: 0o600 });
  return files;
}
