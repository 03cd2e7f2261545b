/**
 * The certificates with which the test control plane's API server calls the agents' authenticated
 * API (`kubectl logs`, exec, port-forward go through it): a CA, and a client certificate signed by
 * it for `kube-apiserver-kubelet-client` in group `system:masters` (what kubeadm gives the API
 * server). Agents are started with `--client-ca-file` = that CA.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import forge from 'node-forge';
import { CA_EXTENSIONS, certificate, keyPair } from './testPki.ts';

export interface KubeletClientPki {
  caFile: string;
  certFile: string;
  keyFile: string;
}

export async function writeKubeletClientPki(dir: string): Promise<KubeletClientPki> {
  const ca = keyPair();
  const caName = [{ name: 'commonName', value: 'statelet-test-kubelet-client-ca' }];
  const caCert = certificate(caName, caName, ca.publicKey, ca.privateKey, '01', CA_EXTENSIONS);
  const client = keyPair();
  const clientName = [
    { name: 'commonName', value: 'kube-apiserver-kubelet-client' },
    { name: 'organizationName', value: 'system:masters' },
  ];
  const clientCert = certificate(clientName, caName, client.publicKey, ca.privateKey, '02', [{ name: 'keyUsage', digitalSignature: true, keyEncipherment: true }, { name: 'extKeyUsage', clientAuth: true }]);
  const files = { caFile: path.join(dir, 'kubelet-client-ca.crt'), certFile: path.join(dir, 'kubelet-client.crt'), keyFile: path.join(dir, 'kubelet-client.key') };
  await writeFile(files.caFile, forge.pki.certificateToPem(caCert));
  await writeFile(files.certFile, forge.pki.certificateToPem(clientCert));
  await writeFile(files.keyFile, client.privatePem, { mode: 0o600 });
  return files;
}
