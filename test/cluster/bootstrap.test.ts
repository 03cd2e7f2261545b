/**
 * TLS bootstrap and client certificate rotation against a kubeadm-like control plane
 * (controlPlane.ts `kubeadm: true`: bootstrap-token authentication, kubeadm's RBAC, the
 * controller-manager approving and signing node client CSRs with the cluster CA, certificates of
 * ROTATION_SIGNING_DURATION), statelet on sim:// holding only a bootstrap kubeconfig:
 *   - rotation on (kubeadm's config): the kubeconfig is written at once pointing at
 *     kubelet-client-current.pem, the certificate manager's `csr-…` request (usages digital
 *     signature, client auth) is sent with the token and auto-approved, the Node is created by
 *     `system:node:<name>` (its renewals under its own identity are join.test.ts's);
 *   - rotation off: a `node-csr-<digest>` request (usages with key encipherment) made before the
 *     node starts, the temporary key removed after;
 *   - a wrong token: the certificate manager says the API server's words and tries again.
 * Serving certificates (serverTLSBootstrap) are the serving side's (join.test.ts).
 */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, readdir, readlink, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentProcess, runStatelet } from '../support/agentProcess.ts';
import { type ControlPlane, nodes, startControlPlane, waitFor } from '../support/controlPlane.ts';
import { ROTATION_SIGNING_DURATION } from '../support/kubeadm.ts';

const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
let cp: ControlPlane | null = null;
let dir = '';
const agents: AgentProcess[] = [];

beforeAll(async () => {
  cp = await startControlPlane({ nodeNames: [], kubeadm: true, signingDuration: ROTATION_SIGNING_DURATION });
  dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-bootstrap-'));
}, 15 * 60_000);

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await cp?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

const ready = (node: k8s.V1Node | null) => node?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

/** A node with its own directory, bootstrap kubeconfig and kubelet.conf path. */
async function join(name: string, extraArgs: string[], token?: string) {
  const nodeDir = path.join(dir, name);
  const bootstrap = path.join(nodeDir, 'bootstrap-kubelet.conf');
  const { mkdir } = await import('node:fs/promises');
  await mkdir(nodeDir, { recursive: true });
  await cp!.kubeadm!.bootstrapKubeconfig(bootstrap);
  if (token) await writeFile(bootstrap, (await readFile(bootstrap, 'utf8')).replace(cp!.kubeadm!.token, token));
  const kubeconfig = path.join(nodeDir, 'kubelet.conf');
  const rootDir = path.join(nodeDir, 'root');
  const agent = await runStatelet(
    ['--container-runtime-endpoint=sim://', `--bootstrap-kubeconfig=${bootstrap}`, `--kubeconfig=${kubeconfig}`, `--hostname-override=${name}`, '--node-ip=127.0.0.1', ...extraArgs],
    { rootDir },
  );
  agents.push(agent);
  return { agent, kubeconfig, certDir: path.join(rootDir, 'pki') };
}

const failure = (agent: AgentProcess, err: unknown) => new Error(`${String(err)}\n--- statelet:\n${agent.output().slice(-6000)}`);

describe('TLS bootstrap', () => {
  it('with rotation on: the kubeconfig points at kubelet-client-current.pem, a csr- request sent with the token is auto-approved, the Node is the node\'s own', { timeout: 4 * 60_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const name = 'boot-rotating';
    const { agent, kubeconfig, certDir } = await join(name, ['--rotate-certificates']);
    try {
      await cp.waitFor<k8s.V1Node>(nodes, name, ready, 120_000);
    } catch (err) {
      throw failure(agent, err);
    }
    const kubeadm = cp.kubeadm!;
    const tokenUser = `system:bootstrap:${kubeadm.token.split('.')[0]}`;
    const mine = (csr: k8s.V1CertificateSigningRequest) => csr.spec.signerName === CLIENT_SIGNER && csr.status?.certificate && new X509Certificate(Buffer.from(csr.status.certificate, 'base64')).subject === `O=system:nodes\nCN=system:node:${name}`;
    const first = (await kubeadm.csrs()).filter((csr) => mine(csr) && csr.spec.username === tokenUser);
    expect(first.map((csr) => csr.metadata?.name)).toEqual([expect.stringMatching(/^csr-/)]);
    expect(first[0]!.spec.usages).toEqual(['digital signature', 'client auth']);
    expect(first[0]!.status?.conditions?.find((c) => c.type === 'Approved')?.reason).toBe('AutoApproved');
    const creations = (await kubeadm.auditEvents()).filter((e) => e.objectRef?.resource === 'nodes' && e.objectRef.name === name && e.responseStatus?.code === 201);
    expect(creations.map((e) => e.user.username)).toEqual([`system:node:${name}`]);

    // kubeadm's kubelet.conf shape, 0600, naming the symlink to the timestamped pair (0600).
    expect((await stat(kubeconfig)).mode & 0o777).toBe(0o600);
    const written = new k8s.KubeConfig();
    written.loadFromFile(kubeconfig);
    expect(written.currentContext).toBe('default-context');
    expect(written.getCurrentCluster()?.name).toBe('default-cluster');
    expect(written.getCurrentUser()?.name).toBe('default-auth');
    const current = path.join(certDir, 'kubelet-client-current.pem');
    expect(written.getCurrentUser()?.certFile).toBe(current);
    expect(written.getCurrentUser()?.keyFile).toBe(current);
    const firstFile = await readlink(current);
    expect(path.basename(firstFile)).toMatch(/^kubelet-client-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$/);
    expect((await stat(firstFile)).mode & 0o777).toBe(0o600);
    expect((await stat(certDir)).mode & 0o777).toBe(0o755);
    // Never the key or the token in the log.
    const key = (await readFile(current, 'utf8')).match(/-----BEGIN EC PRIVATE KEY-----\n([^\n]+)/)?.[1] ?? 'none';
    expect(agent.output()).not.toContain(key);
    expect(agent.output()).not.toContain(kubeadm.token.split('.')[1]);

    // Its renewals, sent as the node itself while pods come and go, are join.test.ts's.
    await cp.waitFor<k8s.V1Node>(nodes, name, ready, 60_000);
    expect(agent.child.exitCode).toBeNull();
  });

  it('with rotation off: a node-csr-<digest> request with key encipherment, made before the node starts; the temporary key is gone after', { timeout: 4 * 60_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const name = 'boot-fixed';
    const { agent, certDir } = await join(name, []);
    try {
      await cp.waitFor<k8s.V1Node>(nodes, name, ready, 120_000);
    } catch (err) {
      throw failure(agent, err);
    }
    const csrs = (await cp.kubeadm!.csrs()).filter((csr) => csr.spec.signerName === CLIENT_SIGNER && csr.spec.username === `system:bootstrap:${cp!.kubeadm!.token.split('.')[0]}` && csr.metadata?.name?.startsWith('node-csr-'));
    const issued = csrs.filter((csr) => csr.status?.certificate && new X509Certificate(Buffer.from(csr.status.certificate, 'base64')).subject.endsWith(`CN=system:node:${name}`));
    expect(issued).toHaveLength(1);
    expect(issued[0]!.metadata?.name).toMatch(/^node-csr-[A-Za-z0-9_-]{43}$/);
    expect(issued[0]!.spec.usages).toEqual(['digital signature', 'key encipherment', 'client auth']);
    expect(await readdir(certDir)).not.toContain('kubelet-client.key.tmp');
  });

  it('with a token the API server does not know: the manager says the API server\'s words and tries again, backing off', { timeout: 2 * 60_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const { agent } = await join('boot-wrong-token', ['--rotate-certificates'], 'abcdef.0123456789abcdef');
    await agent.waitForLog(/cannot create certificate signing request: Unauthorized/, 30_000);
    // Tried again after the back-off (2 s, then 4 s): a second refusal, and the agent still runs.
    await waitFor(async () => agent.output().match(/cannot create certificate signing request: Unauthorized/g)!.length >= 2, 'a second attempt', 30_000);
    expect(agent.child.exitCode).toBeNull();
  });
});
