/**
 * The cluster CA of a kubeadm-like test control plane (what `kubeadm init` writes to
 * /etc/kubernetes/pki/ca.{crt,key}) and the certificates it signs before the cluster runs: the API
 * server's serving certificate (so the CA alone verifies it, as in a kubeadm cluster) and its
 * client certificate towards the kubelets. kube-controller-manager signs the nodes' certificates
 * with the same pair (--cluster-signing-cert-file/key-file), the API server trusts client
 * certificates from it (--client-ca-file) and verifies the kubelets' serving certificates with it
 * (--kubelet-certificate-authority).
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import forge from 'node-forge';
import { CA_EXTENSIONS, type TestKeyPair, certificate, keyPair } from './testPki.ts';

export interface ClusterCa {
  /** PEM of the CA certificate (ca.crt). */
  caFile: string;
  /** Its private key (ca.key, PKCS#8), for kube-controller-manager's signer. */
  keyFile: string;
  /** Signs a certificate for `subject` with the given extensions; returns the certificate and key files written to `dir/<name>.{crt,key}`. */
  issue(dir: string, name: string, subject: forge.pki.CertificateField[], extensions: object[]): Promise<{ certFile: string; keyFile: string }>;
}

let serial = 1;

export async function writeClusterCa(dir: string): Promise<ClusterCa> {
  const ca: TestKeyPair = keyPair();
  // kubeadm's CA subject (cmd/kubeadm/app/phases/certs/certlist.go KubeadmCertRootCA): CN kubernetes.
  const caName = [{ name: 'commonName', value: 'kubernetes' }];
  const caCert = certificate(caName, caName, ca.publicKey, ca.privateKey, '01', CA_EXTENSIONS);
  const caFile = path.join(dir, 'ca.crt');
  const keyFile = path.join(dir, 'ca.key');
  await writeFile(caFile, forge.pki.certificateToPem(caCert));
  await writeFile(keyFile, ca.privatePem, { mode: 0o600 });
  return {
    caFile,
    keyFile,
    async issue(into, name, subject, extensions) {
      const pair = keyPair();
      const cert = certificate(subject, caName, pair.publicKey, ca.privateKey, (++serial).toString(16).padStart(2, '0'), extensions);
      const files = { certFile: path.join(into, `${name}.crt`), keyFile: path.join(into, `${name}.key`) };
      await writeFile(files.certFile, forge.pki.certificateToPem(cert));
      await writeFile(files.keyFile, pair.privatePem, { mode: 0o600 });
      return files;
    },
  };
}

/**
 * The API server's serving certificate, signed by the cluster CA, for the names kubeadm gives it
 * (cmd/kubeadm/app/phases/certs/certlist.go KubeadmCertAPIServer) on loopback: 127.0.0.1 (where
 * the tests reach it), 10.0.0.1 (the `kubernetes` Service of --service-cluster-ip-range) and the
 * Service's DNS names.
 */
export function apiServerServingCertificate(ca: ClusterCa, dir: string): Promise<{ certFile: string; keyFile: string }> {
  return ca.issue(dir, 'apiserver', [{ name: 'commonName', value: 'kube-apiserver' }], [
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [
        { type: 7, ip: '127.0.0.1' },
        { type: 7, ip: '10.0.0.1' },
        ...['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'].map((value) => ({ type: 2, value })),
      ],
    },
  ]);
}
