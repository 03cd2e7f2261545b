/**
 * The kubeadm-like test control plane itself (controlPlane.ts with `kubeadm: true`), driven by
 * hand as a kubelet's TLS bootstrap drives it, with no agent: the join tests stand on it. The
 * bootstrap token asks for a node client certificate and kube-controller-manager approves and
 * signs it with the cluster CA for --cluster-signing-duration; with that certificate the node
 * registers its Node (the audit log shows by whom); a renewal under the node's own identity is
 * approved too; a serving CSR waits for an admin's approval.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane, waitFor } from '../support/controlPlane.ts';
import { NODE_BOOTSTRAP_TOKEN_GROUP, ROTATION_SIGNING_DURATION } from '../support/kubeadm.ts';

const NODE = 'kubeadm-node';
let cp: ControlPlane | null = null;

beforeAll(async () => {
  cp = await startControlPlane({ nodeNames: [], kubeadm: true, signingDuration: ROTATION_SIGNING_DURATION });
}, 15 * 60_000);

afterAll(async () => {
  await cp?.close();
});

/** A CSR as the kubelet makes it (RSA here; the control plane does not care which key). */
function csrPem(subject: forge.pki.CertificateField[], dnsNames: string[] = [], ips: string[] = []): { request: string; key: string } {
  const keys = forge.pki.rsa.generateKeyPair(2048);
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = keys.publicKey;
  csr.setSubject(subject);
  if (dnsNames.length + ips.length > 0) {
    csr.setAttributes([{ name: 'extensionRequest', extensions: [{ name: 'subjectAltName', altNames: [...dnsNames.map((value) => ({ type: 2, value })), ...ips.map((ip) => ({ type: 7, ip }))] }] }]);
  }
  csr.sign(keys.privateKey, forge.md.sha256.create());
  return { request: forge.pki.certificationRequestToPem(csr), key: forge.pki.privateKeyToPem(keys.privateKey) };
}

const nodeSubject = [
  { name: 'commonName', value: `system:node:${NODE}` },
  { name: 'organizationName', value: 'system:nodes' },
];

async function submit(config: k8s.KubeConfig, body: k8s.V1CertificateSigningRequest): Promise<string> {
  const created = await config.makeApiClient(k8s.CertificatesV1Api).createCertificateSigningRequest({ body });
  return created.metadata!.name!;
}

async function issued(name: string): Promise<X509Certificate> {
  let csr: k8s.V1CertificateSigningRequest | undefined;
  await waitFor(async () => {
    csr = await cp!.admin.makeApiClient(k8s.CertificatesV1Api).readCertificateSigningRequest({ name });
    return !!csr.status?.certificate;
  }, `CSR ${name} issued`);
  return new X509Certificate(Buffer.from(csr!.status!.certificate!, 'base64'));
}

const asClient = (cert: X509Certificate, key: string): k8s.KubeConfig => {
  const config = new k8s.KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'c', server: cp!.server, caFile: cp!.kubeadm!.caFile }],
    users: [{ name: 'u', certData: Buffer.from(cert.toString()).toString('base64'), keyData: Buffer.from(key).toString('base64') }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return config;
};

describe('the kubeadm-like control plane', () => {
  it('signs a bootstrap token’s node client CSR unasked, for the signing duration; the node registers and renews under its own name; a serving CSR waits for the admin', { timeout: 120_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const kubeadm = cp.kubeadm!;
    const bootstrap = new k8s.KubeConfig();
    bootstrap.loadFromFile(await kubeadm.bootstrapKubeconfig(path.join(cp.dir, 'node-bootstrap.conf')));
    expect(bootstrap.getCurrentUser()?.name).toBe('tls-bootstrap-token-user');
    const clusterCa = new X509Certificate(await readFile(kubeadm.caFile));

    // The bootstrap CSR: auto-approved (nodeclient) and signed with the cluster CA.
    const first = csrPem(nodeSubject);
    const bootstrapName = await submit(bootstrap, {
      metadata: { name: 'node-csr-test' },
      spec: { request: Buffer.from(first.request).toString('base64'), signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: ['digital signature', 'key encipherment', 'client auth'] },
    });
    const cert = await issued(bootstrapName);
    const approved = await cp.admin.makeApiClient(k8s.CertificatesV1Api).readCertificateSigningRequest({ name: bootstrapName });
    expect(approved.spec.username).toBe(`system:bootstrap:${kubeadm.token.split('.')[0]}`);
    expect(approved.spec.groups).toContain(NODE_BOOTSTRAP_TOKEN_GROUP);
    expect(approved.status?.conditions?.find((c) => c.type === 'Approved')?.reason).toBe('AutoApproved');
    expect(cert.verify(clusterCa.publicKey)).toBe(true);
    expect(cert.subject).toBe(`O=system:nodes\nCN=system:node:${NODE}`);
    // Backdated 5 minutes, the 3-minute duration not shortened (below 8 h).
    const lifetimeMs = Date.parse(cert.validTo) - Date.parse(cert.validFrom);
    expect(lifetimeMs).toBe((3 + 5) * 60_000);

    // The node registers with that certificate: the audit log names the node's user.
    const node = asClient(cert, first.key);
    await node.makeApiClient(k8s.CoreV1Api).createNode({ body: { metadata: { name: NODE } } });
    const creations = (await kubeadm.auditEvents()).filter((e) => e.objectRef?.resource === 'nodes' && e.objectRef.name === NODE);
    expect(creations.map((e) => [e.user.username, e.responseStatus?.code])).toEqual([[`system:node:${NODE}`, 201]]);

    // A renewal under the node's own identity (generateName csr-): approved through selfnodeclient.
    const second = csrPem(nodeSubject);
    const renewal = await submit(node, {
      metadata: { generateName: 'csr-' },
      spec: { request: Buffer.from(second.request).toString('base64'), signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: ['digital signature', 'client auth'] },
    });
    expect((await issued(renewal)).verify(clusterCa.publicKey)).toBe(true);

    // A serving CSR is never auto-approved; the admin's approval gets it signed.
    const serving = csrPem(nodeSubject, [NODE], ['127.0.0.1']);
    const servingName = await submit(node, {
      metadata: { generateName: 'csr-' },
      spec: { request: Buffer.from(serving.request).toString('base64'), signerName: 'kubernetes.io/kubelet-serving', usages: ['digital signature', 'key encipherment', 'server auth'] },
    });
    const pending = (await kubeadm.csrs()).find((c) => c.metadata?.name === servingName);
    expect(pending?.status?.conditions ?? []).toEqual([]);
    await kubeadm.approveCsr(servingName);
    const servingCert = await issued(servingName);
    expect(servingCert.verify(clusterCa.publicKey)).toBe(true);
    expect(servingCert.subjectAltName).toBe(`DNS:${NODE}, IP Address:127.0.0.1`);
  });
});
