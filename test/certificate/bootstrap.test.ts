import { mkdir, mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { TMP_PRIVATE_KEY_FILE, clientConfigStillValid, loadClientIdentity } from '../../src/certificate/bootstrap.ts';
import { clientTemplate, generateNodeKey, makeCsr } from '../../src/certificate/csr.ts';
import { CertificateFileStore } from '../../src/certificate/store.ts';
import { realClock } from '../../src/clock.ts';
import { testCa } from '../support/csrSigner.ts';
import { FakeCsrApi } from '../support/fakeCsrApi.ts';

const ca = testCa();
const HOUR = 3_600_000;

async function nodeFiles() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bootstrap-'));
  const bootstrap = path.join(dir, 'bootstrap-kubelet.conf');
  await writeFile(
    bootstrap,
    `apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: ${Buffer.from(ca.certPem).toString('base64')}
users:
- name: tls-bootstrap-token-user
  user:
    token: abcdef.0123456789abcdef
contexts:
- name: tls-bootstrap-token-user@kubernetes
  context: {cluster: kubernetes, user: tls-bootstrap-token-user}
current-context: tls-bootstrap-token-user@kubernetes
`,
  );
  const certDir = path.join(dir, 'pki');
  const store = await CertificateFileStore.open(certDir, 'kubelet-client', () => Date.now());
  return { dir, bootstrap, kubeconfig: path.join(dir, 'kubelet.conf'), certDir, store };
}

/** A kubeconfig whose user holds a certificate valid from `notBefore` for `lifetimeMs`. */
async function kubeconfigWithCert(file: string, notBefore: Date, lifetimeMs: number) {
  const key = generateNodeKey();
  const cert = ca.sign(makeCsr(key, clientTemplate('n1')), { lifetimeMs, notBefore });
  await writeFile(file, `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://x"}}]\nusers: [{name: u, user: {client-certificate-data: ${Buffer.from(cert).toString('base64')}, client-key-data: ${Buffer.from(key).toString('base64')}}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n`);
}

describe('clientConfigStillValid (bootstrap.go isClientConfigStillValid)', () => {
  it('is valid for a certificate in its lifetime, not for a missing file, an expired certificate or no certificate', async () => {
    const { dir } = await nodeFiles();
    const file = path.join(dir, 'k.conf');
    expect(await clientConfigStillValid(file, Date.now())).toEqual({ valid: false, reason: `${file} does not exist` });
    await kubeconfigWithCert(file, new Date(), HOUR);
    expect(await clientConfigStillValid(file, Date.now())).toEqual({ valid: true });
    await kubeconfigWithCert(file, new Date(Date.now() - 2 * HOUR), HOUR);
    expect(await clientConfigStillValid(file, Date.now())).toMatchObject({ valid: false, reason: expect.stringMatching(/^part of the existing bootstrap client certificate in .* is expired: /) });
    await writeFile(file, 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://x"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n');
    expect(await clientConfigStillValid(file, Date.now())).toMatchObject({ valid: false, reason: expect.stringMatching(/^unable to read TLS certificates/) });
  });
});

describe('loadClientIdentity', () => {
  const quiet = () => {};

  it('with rotation on writes the kubeconfig (0600) at once, pointing at kubelet-client-current.pem, with the bootstrap file\'s server and CA', async () => {
    const f = await nodeFiles();
    const api = new FakeCsrApi(ca);
    const identity = await loadClientIdentity({ kubeconfig: f.kubeconfig, bootstrapKubeconfig: f.bootstrap, nodeName: 'n1', store: f.store, rotateCertificates: true, bootstrapApi: () => api, clock: realClock, log: quiet });
    expect(identity).toEqual({ kubeconfig: f.kubeconfig, bootstrapKubeconfig: f.bootstrap });
    expect((await stat(f.kubeconfig)).mode & 0o777).toBe(0o600);
    const current = path.join(f.certDir, 'kubelet-client-current.pem');
    expect(parse(await readFile(f.kubeconfig, 'utf8'))).toEqual({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'default-cluster', cluster: { server: 'https://10.0.0.1:6443', 'certificate-authority-data': Buffer.from(ca.certPem).toString('base64') } }],
      users: [{ name: 'default-auth', user: { 'client-certificate': current, 'client-key': current } }],
      contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', user: 'default-auth', namespace: 'default' } }],
      'current-context': 'default-context',
    });
    expect(api.names()).toEqual([]);
  });

  it('uses a still valid kubeconfig as it is', async () => {
    const f = await nodeFiles();
    await kubeconfigWithCert(f.kubeconfig, new Date(), HOUR);
    const before = await readFile(f.kubeconfig, 'utf8');
    const identity = await loadClientIdentity({ kubeconfig: f.kubeconfig, bootstrapKubeconfig: f.bootstrap, nodeName: 'n1', store: f.store, rotateCertificates: true, bootstrapApi: () => new FakeCsrApi(ca), clock: realClock, log: quiet });
    expect(identity).toEqual({ kubeconfig: f.kubeconfig });
    expect(await readFile(f.kubeconfig, 'utf8')).toBe(before);
  });

  it('with rotation off requests a node-csr-<digest> certificate before returning, keeping the key in kubelet-client.key.tmp until it is stored', async () => {
    const f = await nodeFiles();
    const api = new FakeCsrApi(ca);
    api.autoIssueMs = HOUR;
    const identity = await loadClientIdentity({ kubeconfig: f.kubeconfig, bootstrapKubeconfig: f.bootstrap, nodeName: 'n1', store: f.store, rotateCertificates: false, bootstrapApi: () => api, clock: realClock, log: quiet });
    expect(identity).toEqual({ kubeconfig: f.kubeconfig });
    const [name] = api.names();
    expect(name).toMatch(/^node-csr-[A-Za-z0-9_-]{43}$/);
    expect(api.csrs.get(name!)!.spec).toMatchObject({ signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: ['digital signature', 'key encipherment', 'client auth'] });
    expect(f.store.current()).not.toBeNull();
    expect(await readdir(f.certDir)).not.toContain(TMP_PRIVATE_KEY_FILE);
    const written = new KubeConfig();
    written.loadFromFile(f.kubeconfig);
    expect(written.getCurrentUser()?.certFile).toBe(path.join(f.certDir, 'kubelet-client-current.pem'));
  });

  it('after a restart reuses the kept key, so the same request (its name) is found and waited on', async () => {
    const f = await nodeFiles();
    const key = generateNodeKey();
    await mkdir(f.certDir, { recursive: true });
    await writeFile(path.join(f.certDir, TMP_PRIVATE_KEY_FILE), key, { mode: 0o600 });
    const api = new FakeCsrApi(ca);
    // The request of the earlier run, already there.
    const { digestedName, BOOTSTRAP_USAGES } = await import('../../src/certificate/csr.ts');
    const name = digestedName(key, clientTemplate('n1'), BOOTSTRAP_USAGES);
    await api.createCertificateSigningRequest({
      metadata: { name },
      spec: { request: Buffer.from(makeCsr(key, clientTemplate('n1'))).toString('base64'), signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: [...BOOTSTRAP_USAGES] },
    });
    setTimeout(() => api.issue(name, HOUR), 50);
    await loadClientIdentity({ kubeconfig: f.kubeconfig, bootstrapKubeconfig: f.bootstrap, nodeName: 'n1', store: f.store, rotateCertificates: false, bootstrapApi: () => api, clock: realClock, log: quiet });
    expect(api.names()).toEqual([name]);
    expect(f.store.current()?.key).toBe(key);
  });

  it('says why a bootstrap cannot finish (denied) and tries again', async () => {
    const f = await nodeFiles();
    const api = new FakeCsrApi(ca);
    const errors: string[] = [];
    const stop = new AbortController();
    const done = loadClientIdentity({
      kubeconfig: f.kubeconfig,
      bootstrapKubeconfig: f.bootstrap,
      nodeName: 'n1',
      store: f.store,
      rotateCertificates: false,
      bootstrapApi: () => api,
      clock: realClock,
      log: (level, _message, fields) => void (level === 'error' && errors.push(String(fields?.['err']))),
      signal: stop.signal,
    });
    await expect.poll(() => api.names().length).toBe(1);
    api.deny(api.names()[0]!, 'NotYours', 'denied by the admin');
    await expect.poll(() => errors).toEqual(['certificate signing request is denied, reason: NotYours, message: denied by the admin']);
    stop.abort(new Error('stopped'));
    await expect(done).rejects.toThrow('stopped');
    await expect(stat(f.kubeconfig)).rejects.toThrow(/ENOENT/);
  });
});
