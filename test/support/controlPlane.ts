/**
 * A real control plane for the cluster tests: etcd and kube-apiserver (test/controlplane, built
 * once per machine by scripts/controlplane/build.mjs) on loopback ports with fresh data, the
 * Node authorizer, RBAC and the NodeRestriction admission plugin on. It writes an admin
 * kubeconfig and one kubeconfig per node name whose identity is `system:node:<name>` in group
 * `system:nodes`, so an agent given that kubeconfig has exactly a real node's rights.
 *
 * By default no controller-manager and no scheduler run: tests bind pods themselves
 * (`spec.nodeName`), and `namespace()` creates the `default` ServiceAccount and publishes the
 * `kube-root-ca.crt` ConfigMap (also published in `default`). With `controllers: true` the upstream
 * kube-scheduler and kube-controller-manager of the same release run beside the API server
 * (built on demand by scripts/controlplane/build.mjs, cached like the control plane), each with
 * its own identity (`system:kube-scheduler`, `system:kube-controller-manager`, the users upstream's
 * RBAC bootstrap binds), the controller-manager with per-controller ServiceAccount credentials,
 * the API server's signing key and CA; then those objects come from the controllers, pods get
 * scheduled, and Deployments, ReplicaSets, garbage collection and namespace deletion work.
 *
 * With `kubeadm: true` it is set up as `kubeadm init` sets up a cluster for nodes to join
 * (kubeadm.ts): one cluster CA signs the API server's serving certificate and its client
 * certificate towards the kubelets, and is trusted for client certificates (--client-ca-file) and
 * for the kubelets' serving certificates (--kubelet-certificate-authority); bootstrap tokens
 * authenticate (--enable-bootstrap-token-auth), a token's Secret is in kube-system and kubeadm's
 * RBAC bindings let its holder ask for a node certificate; kube-controller-manager approves and
 * signs the nodes' client CSRs with the cluster CA for --cluster-signing-duration. An audit log
 * records who created each Node and CSR.
 *
 * Where Go is missing the suite skips, loudly, outside CI; on CI (`CI=true`) it fails instead.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { X509Certificate, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { freePort } from './agentProcess.ts';
import { type ClusterCa, apiServerServingCertificate, writeClusterCa } from './clusterPki.ts';
import { type Kubeadm, AUDIT_POLICY, kubeadmControllerManagerArgs, setUpKubeadm } from './kubeadm.ts';
import { writeKubeletClientPki } from './kubeletClientPki.ts';

export interface ControlPlane {
  /** `https://127.0.0.1:<port>` */
  server: string;
  /** The process of kube-apiserver and etcd (one binary), while it runs: for a bench's CPU figures. */
  pid(): number | undefined;
  dir: string;
  adminKubeconfig: string;
  /** The kubeconfig of `system:node:<name>` (one of the names given at start). */
  nodeKubeconfig(nodeName: string): string;
  admin: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  /**
   * Resolves with the object once `predicate` holds for it (null: it does not exist), as seen by
   * a GET and then a watch from that version: the test waits on the API's own notifications.
   */
  waitFor<T extends { metadata?: { resourceVersion?: string } }>(
    resource: ApiResource,
    name: string,
    predicate: (object: T | null) => boolean,
    timeoutMs?: number,
  ): Promise<T | null>;
  /** Runs the kubectl built from the same release, as the admin. */
  kubectl(args: string[]): Promise<string>;
  /** That kubectl binary. */
  kubectlPath: string;
  /** Creates a namespace with a unique name and its `default` ServiceAccount. */
  namespace(prefix?: string): Promise<string>;
  /** The CA of the API server's kubelet client certificate: agents take it as `--client-ca-file`. */
  kubeletClientCaFile: string;
  /** What a node needs to join a kubeadm-like control plane (started with `kubeadm: true`), else undefined. */
  kubeadm: Kubeadm | undefined;
  /** A component's log so far (for failure messages): the apiserver's unless named. */
  output(component?: Component): string;
  /**
   * Stops the apiserver (SIGTERM, SIGKILL after 10 s; `crash`: SIGKILL at once, as a machine
   * failing), keeping etcd's data for a restart. The scheduler and controller-manager, if any,
   * keep running and reconnect, as beside a restarting API server.
   */
  stop(options?: { crash?: boolean }): Promise<void>;
  /** Starts it again on the same ports and data (the fault tests). */
  restart(): Promise<void>;
  /** Stops it (and the controllers) and removes its data. */
  close(): Promise<void>;
}

const READY_TIMEOUT_MS = 60_000;

export type Component = 'apiserver' | 'kube-scheduler' | 'kube-controller-manager';
const CONTROLLERS = ['kube-scheduler', 'kube-controller-manager'] as const;
/** An upstream component that may run beside the API server. */
type Upstream = (typeof CONTROLLERS)[number];

/** An API collection: its path (`/api/v1/namespaces/ns/pods`) and how to GET one object of it. */
export interface ApiResource {
  path: string;
}

export const pods = (namespace: string): ApiResource => ({ path: `/api/v1/namespaces/${namespace}/pods` });
export const nodes: ApiResource = { path: '/api/v1/nodes' };
export const leases: ApiResource = { path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases' };
export const events = (namespace: string): ApiResource => ({ path: `/api/v1/namespaces/${namespace}/events` });

interface Binaries {
  controlplane: string;
  kubectl: string;
  kubeScheduler?: string;
  kubeControllerManager?: string;
}

/** Where a missing Go is fatal (CI, `required`) or a reason to skip (a developer's machine). */
async function binaries(required: boolean, components: readonly Upstream[]): Promise<Binaries | null> {
  // @ts-expect-error: a plain ESM script without type declarations
  const build = (await import('../../scripts/controlplane/build.mjs')) as {
    controlPlaneBinaries(): Promise<{ controlplane: string; kubectl: string } | { skip: string }>;
    conformanceBinaries(options: { only: string[] }): Promise<Record<string, string> | { skip: string }>;
  };
  let result: Binaries | { skip: string } = await build.controlPlaneBinaries();
  if (components.length > 0 && !('skip' in result)) {
    const more = await build.conformanceBinaries({ only: [...components] });
    result = 'skip' in more ? { skip: more.skip as string } : { ...result, ...more };
  }
  if ('skip' in result) {
    if (required) {
      console.error(`statelet: the control plane cannot be built here: ${result.skip}. Install Go 1.26 (https://go.dev/dl).`);
      return null;
    }
    if (process.env.CI === 'true') throw new Error(`cluster suite cannot run on CI: ${result.skip}`);
    console.warn(`\n${'!'.repeat(78)}\n!! SKIPPING the cluster suite: ${result.skip}.\n!! Install Go 1.26 (https://go.dev/dl) to run it; CI runs it.\n${'!'.repeat(78)}\n`);
    return null;
  }
  return result;
}

function kubeconfigYaml(server: string, caFile: string, user: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: statelet-test',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority: ${caFile}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: statelet-test',
    '  context:',
    '    cluster: statelet-test',
    `    user: ${user}`,
    'current-context: statelet-test',
    '',
  ].join('\n');
}

/**
 * Starts a control plane with node identities for `nodeNames`, or returns null (having said why)
 * where it cannot be built outside CI.
 */
export async function startControlPlane(options: {
  nodeNames: string[];
  required?: boolean;
  apiserverArgs?: string[];
  /** Also run kube-scheduler and kube-controller-manager (built on first use: minutes). */
  controllers?: boolean;
  /** More flags for kube-controller-manager (e.g. `--allocate-node-cidrs`, `--cluster-cidr`). */
  controllerManagerArgs?: string[];
  /**
   * Set up as `kubeadm init` does for nodes that join with a bootstrap token (see the header);
   * kube-controller-manager runs even without `controllers` (then only the controllers that the
   * nodes' certificates and the namespaces' ServiceAccounts need).
   */
  kubeadm?: boolean;
  /**
   * kube-controller-manager's --cluster-signing-duration (a Go duration) with `kubeadm`: how long
   * the nodes' certificates are valid (its own default, 8760h, capped at the test CA's end, when
   * not given). ROTATION_SIGNING_DURATION makes a node rotate its certificates within a test.
   */
  signingDuration?: string;
}): Promise<ControlPlane | null> {
  const controllers = options.controllers ?? false;
  const kubeadm = options.kubeadm ?? false;
  if (options.signingDuration !== undefined && !kubeadm) throw new Error('signingDuration needs kubeadm: true (no controller-manager signs certificates otherwise)');
  // Which of the upstream components run beside the API server.
  const upstream: readonly Upstream[] = controllers ? CONTROLLERS : kubeadm ? ['kube-controller-manager'] : [];
  const bins = await binaries(options.required ?? false, upstream);
  if (!bins) return null;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-cp-'));
  const [securePort, etcdPort, etcdPeerPort] = [await freePort(), await freePort(), await freePort()];
  const server = `https://127.0.0.1:${securePort}`;

  const token = () => randomBytes(16).toString('hex');
  const adminToken = token();
  const nodeTokens = new Map(options.nodeNames.map((name) => [name, token()]));
  // The controllers' own users, which upstream's RBAC bootstrap binds to their roles.
  const controllerTokens = new Map(upstream.map((name) => [name, token()]));
  await writeFile(
    path.join(dir, 'tokens.csv'),
    [
      `${adminToken},admin,uid-admin,system:masters`,
      ...[...nodeTokens].map(([name, t]) => `${t},system:node:${name},uid-node-${name},system:nodes`),
      ...[...controllerTokens].map(([name, t]) => `${t},system:${name},uid-${name}`),
    ].join('\n') + '\n',
  );
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  await writeFile(path.join(dir, 'sa.key'), privateKey, { mode: 0o600 });
  const clusterCa: ClusterCa | undefined = kubeadm ? await writeClusterCa(dir) : undefined;
  const kubeletClient = await writeKubeletClientPki(dir, clusterCa);
  const kubeadmArgs = clusterCa ? await kubeadmApiServerArgs(clusterCa, dir) : [];

  const args = [
    '-etcd-dir', path.join(dir, 'etcd'),
    '-etcd-port', String(etcdPort),
    '-etcd-peer-port', String(etcdPeerPort),
    '--',
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${securePort}`,
    `--cert-dir=${path.join(dir, 'pki')}`,
    '--endpoint-reconciler-type=none',
    `--token-auth-file=${path.join(dir, 'tokens.csv')}`,
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    '--allow-privileged=true',
    '--service-cluster-ip-range=10.0.0.0/24',
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-signing-key-file=${path.join(dir, 'sa.key')}`,
    `--service-account-key-file=${path.join(dir, 'sa.key')}`,
    // How it calls the nodes' authenticated API (logs, exec, port-forward): this client
    // certificate, at the node's InternalIP (agents in tests give --node-ip=127.0.0.1).
    `--kubelet-client-certificate=${kubeletClient.certFile}`,
    `--kubelet-client-key=${kubeletClient.keyFile}`,
    '--kubelet-preferred-address-types=InternalIP',
    '--v=0',
    ...kubeadmArgs,
    ...(options.apiserverArgs ?? []),
  ];
  let output = '';
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const start = () => {
    const proc = spawn(bins.controlplane, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    const keep = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.length > 1_000_000) output = output.slice(-500_000);
    };
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
  };

  // Without kubeadm the API server makes its own serving pair (the certificate then its CA).
  const caFile = clusterCa?.caFile ?? path.join(dir, 'pki', 'apiserver.crt');
  const adminKubeconfig = path.join(dir, 'admin.kubeconfig');
  const nodeKubeconfigs = new Map<string, string>();

  const waitReady = async () => {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let last = '';
    while (Date.now() < deadline) {
      if (child?.exitCode !== null) throw new Error(`the control plane exited with ${child?.exitCode}:\n${output.slice(-4000)}`);
      try {
        const ca = await readFile(caFile);
        const res = await fetchInsecureReady(server, adminToken, ca);
        if (res === 'ok') return;
        last = res;
      } catch (err) {
        last = String(err);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`the control plane was not ready after ${READY_TIMEOUT_MS / 1000} s (${last}):\n${output.slice(-4000)}`);
  };

  start();
  await waitReady();
  await writeFile(adminKubeconfig, kubeconfigYaml(server, caFile, 'admin', adminToken));
  for (const [name, t] of nodeTokens) {
    const file = path.join(dir, `${name}.kubeconfig`);
    await writeFile(file, kubeconfigYaml(server, caFile, `system:node:${name}`, t));
    nodeKubeconfigs.set(name, file);
  }
  const admin = new k8s.KubeConfig();
  admin.loadFromFile(adminKubeconfig);
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const runKubectl = async (kubectlArgs: string[]) => {
    const { stdout } = await promisify(execFile)(bins.kubectl, ['--kubeconfig', adminKubeconfig, ...kubectlArgs]);
    return stdout;
  };
  // The apiserver creates these itself once its bootstrap hooks have run.
  for (const name of ['default', 'kube-node-lease']) await waitFor(async () => !!(await core.readNamespace({ name }).catch(() => null)), `namespace ${name}`);
  // What kube-controller-manager's root-ca-cert-publisher does (when none runs): every namespace
  // gets the cluster CA as `kube-root-ca.crt`, which each pod's kube-api-access volume projects.
  const caPem = await readFile(caFile, 'utf8');
  const publishRootCA = (namespace: string) =>
    core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'kube-root-ca.crt' }, data: { 'ca.crt': caPem } } }).catch((err: unknown) => {
      if ((err as { code?: number }).code !== 409) throw err;
    });
  /** What a namespace needs before pods can be made in it: from the controller-manager if it runs. */
  const controllersProvisioned = (namespace: string) =>
    waitFor(
      async () =>
        !!(await core.readNamespacedServiceAccount({ namespace, name: 'default' }).catch(() => null)) &&
        !!(await core.readNamespacedConfigMap({ namespace, name: 'kube-root-ca.crt' }).catch(() => null)),
      `the controller-manager's default ServiceAccount and kube-root-ca.crt in ${namespace}`,
      READY_TIMEOUT_MS,
    );

  const components = new Map<Component, { child: ChildProcess; exited: Promise<void>; output: () => string }>();
  const stopControllers = async () => {
    await Promise.all(
      [...components.values()].map(async ({ child: proc, exited: done }) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return;
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        await done;
        clearTimeout(timer);
      }),
    );
  };
  /** A start that failed half-way: everything it started stopped, its directory removed. */
  const abandon = async () => {
    await stopControllers();
    child?.kill('SIGKILL');
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
  if (upstream.length > 0) {
    try {
      for (const name of upstream) {
        const kubeconfig = path.join(dir, `${name}.kubeconfig`);
        await writeFile(kubeconfig, kubeconfigYaml(server, caFile, `system:${name}`, controllerTokens.get(name)!));
        const port = await freePort();
        const common = [
          `--kubeconfig=${kubeconfig}`,
          // Delegated authentication (bearer tokens) and authorization of their own HTTPS port
          // (its /healthz is always allowed) as the same identity. The API server publishes no
          // client CA (extension-apiserver-authentication) with token authentication only: skip that lookup.
          `--authentication-kubeconfig=${kubeconfig}`,
          `--authorization-kubeconfig=${kubeconfig}`,
          '--authentication-skip-lookup=true',
          '--leader-elect=false',
          '--bind-address=127.0.0.1',
          `--secure-port=${port}`,
          `--cert-dir=${path.join(dir, `${name}-pki`)}`,
          '--v=1',
        ];
        const extra =
          name === 'kube-controller-manager'
            ? [
                `--service-account-private-key-file=${path.join(dir, 'sa.key')}`,
                // The CA alone (pki/apiserver.crt starts with the serving certificate, which a
                // ClusterTrustBundle refuses): kube-root-ca.crt, token Secrets, the trust bundle.
                `--root-ca-file=${await writeRootCa(caFile, path.join(dir, 'root-ca.crt'))}`,
                // Each controller under its own ServiceAccount (TokenRequest), as upstream's clusters run it.
                '--use-service-account-credentials=true',
                ...(clusterCa ? kubeadmControllerManagerArgs(clusterCa, { all: controllers, signingDuration: options.signingDuration }) : []),
                ...(options.controllerManagerArgs ?? []),
              ]
            : [];
        const proc = spawn((name === 'kube-scheduler' ? bins.kubeScheduler : bins.kubeControllerManager)!, [...common, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
        let log = '';
        const keep = (chunk: Buffer) => {
          log += chunk.toString();
          if (log.length > 1_000_000) log = log.slice(-500_000);
        };
        proc.stdout!.on('data', keep);
        proc.stderr!.on('data', keep);
        components.set(name, { child: proc, exited: new Promise((resolve) => proc.once('exit', () => resolve())), output: () => log });
        await waitHealthy(name, port, proc, () => log);
      }
      await controllersProvisioned('default');
    } catch (err) {
      await abandon();
      throw err;
    }
  } else {
    await publishRootCA('default');
  }

  let kubeadmParts: Kubeadm | undefined;
  if (clusterCa) {
    try {
      kubeadmParts = await setUpKubeadm({ dir, server, clusterCa, admin, kubectl: (kubectlArgs) => runKubectl(kubectlArgs) });
    } catch (err) {
      await abandon();
      throw err;
    }
  }

  let serial = 0;
  const stop = async (options: { crash?: boolean } = {}) => {
    if (!child || child.exitCode !== null) return;
    child.kill(options.crash ? 'SIGKILL' : 'SIGTERM');
    const timer = setTimeout(() => child?.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  return {
    server,
    pid: () => child?.pid,
    dir,
    adminKubeconfig,
    nodeKubeconfig: (name) => {
      const file = nodeKubeconfigs.get(name);
      if (!file) throw new Error(`no node identity for ${name} (started with ${options.nodeNames.join(', ')})`);
      return file;
    },
    admin,
    core,
    waitFor: (resource, name, predicate, timeoutMs = 30_000) => watchUntil(admin, resource, name, predicate, timeoutMs),
    kubectlPath: bins.kubectl,
    kubeletClientCaFile: kubeletClient.caFile,
    kubeadm: kubeadmParts,
    kubectl: runKubectl,
    namespace: async (prefix = 'test') => {
      const name = `${prefix}-${process.pid}-${++serial}`;
      await core.createNamespace({ body: { metadata: { name } } });
      if (upstream.includes('kube-controller-manager')) {
        await controllersProvisioned(name);
      } else {
        await core.createNamespacedServiceAccount({ namespace: name, body: { metadata: { name: 'default' } } });
        await publishRootCA(name);
      }
      return name;
    },
    output: (component: Component = 'apiserver') => {
      if (component === 'apiserver') return output;
      const started = components.get(component);
      if (!started) throw new Error(`${component} does not run here (start the control plane with controllers: true, or kubeadm: true for the controller-manager)`);
      return started.output();
    },
    stop,
    restart: async () => {
      await stop();
      start();
      await waitReady();
    },
    close: async () => {
      await stopControllers();
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function getObject<T>(config: k8s.KubeConfig, path: string): Promise<T | null> {
  const options: https.RequestOptions = {};
  await config.applyToHTTPSOptions(options);
  const cluster = config.getCurrentCluster()!;
  return new Promise((resolve, reject) => {
    const req = https.request(`${cluster.server}${path}`, { ...options, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => {
        if (res.statusCode === 404) return resolve(null);
        if (res.statusCode !== 200) return reject(new Error(`GET ${path}: ${res.statusCode} ${body}`));
        resolve(JSON.parse(body) as T);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

async function watchUntil<T extends { metadata?: { resourceVersion?: string } }>(
  config: k8s.KubeConfig,
  resource: ApiResource,
  name: string,
  predicate: (object: T | null) => boolean,
  timeoutMs: number,
): Promise<T | null> {
  const current = await getObject<T>(config, `${resource.path}/${name}`);
  if (predicate(current)) return current;
  let last: T | null = current;
  return new Promise((resolve, reject) => {
    let controller: AbortController | undefined;
    let settled = false;
    const finish = (err: Error | null, value: T | null = null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      controller?.abort();
      if (err) reject(err);
      else resolve(value);
    };
    const timer = setTimeout(
      () => finish(new Error(`timed out after ${timeoutMs} ms waiting on ${resource.path}/${name}; last seen (without managedFields):\n${JSON.stringify(last, (key, value: unknown) => (key === 'managedFields' ? undefined : value), 1)?.slice(0, 6000)}`)),
      timeoutMs,
    );
    const start = (resourceVersion?: string) =>
      new k8s.Watch(config)
        .watch(
          resource.path,
          { fieldSelector: `metadata.name=${name}`, ...(resourceVersion ? { resourceVersion } : {}) },
          (type: string, object: T) => {
            last = type === 'DELETED' ? null : object;
            if (type !== 'BOOKMARK' && type !== 'ERROR' && predicate(last)) finish(null, last);
          },
          (err: unknown) => {
            // The server may end a watch at any time; reopen it from the start until the deadline.
            if (!settled) setTimeout(() => void start().then((c) => (controller = c)), err ? 200 : 0);
          },
        )
        .then((c) => {
          controller = c;
          if (settled) c.abort();
          return c;
        });
    void start(current?.metadata?.resourceVersion);
  });
}

/**
 * The API server's flags that make it kubeadm's (cmd/kubeadm/app/phases/controlplane/manifests.go
 * getAPIServerCommand): the cluster CA's serving pair, client certificates and kubelet serving
 * certificates checked against that CA, bootstrap tokens, and an audit log of who creates Nodes
 * and CSRs (the tests' evidence that a node registered under its own identity).
 */
async function kubeadmApiServerArgs(ca: ClusterCa, dir: string): Promise<string[]> {
  const serving = await apiServerServingCertificate(ca, dir);
  await writeFile(path.join(dir, 'audit-policy.yaml'), AUDIT_POLICY);
  return [
    `--tls-cert-file=${serving.certFile}`,
    `--tls-private-key-file=${serving.keyFile}`,
    `--client-ca-file=${ca.caFile}`,
    // Only here: the other suites' agents serve a self-signed certificate, which this would refuse.
    `--kubelet-certificate-authority=${ca.caFile}`,
    '--enable-bootstrap-token-auth=true',
    `--audit-policy-file=${path.join(dir, 'audit-policy.yaml')}`,
    `--audit-log-path=${path.join(dir, 'audit.log')}`,
  ];
}

/** Writes the CA certificates of a PEM bundle (the self-signed serving pair's CA) to `file`. */
async function writeRootCa(bundleFile: string, file: string): Promise<string> {
  const blocks = (await readFile(bundleFile, 'utf8')).match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----\n?/g) ?? [];
  const cas = blocks.filter((pem) => new X509Certificate(pem).ca);
  if (cas.length === 0) throw new Error(`no CA certificate in ${bundleFile}`);
  await writeFile(file, cas.map((pem) => (pem.endsWith('\n') ? pem : `${pem}\n`)).join(''));
  return file;
}

/** Waits for a controller's /healthz on its HTTPS port (self-signed; the path needs no credentials). */
async function waitHealthy(name: string, port: number, proc: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = '';
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${name} exited with ${proc.exitCode ?? proc.signalCode}:\n${log().slice(-4000)}`);
    last = await new Promise<string>((resolve) => {
      const req = https.request(`https://127.0.0.1:${port}/healthz`, { rejectUnauthorized: false, timeout: 5_000 }, (res) => {
        res.resume();
        resolve(res.statusCode === 200 ? 'ok' : `healthz ${res.statusCode}`);
      });
      req.on('error', (err) => resolve(String(err)));
      req.on('timeout', () => req.destroy(new Error('healthz timed out')));
      req.end();
    });
    if (last === 'ok') return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${name} was not healthy after ${READY_TIMEOUT_MS / 1000} s (${last}):\n${log().slice(-4000)}`);
}

/** GET /readyz as the admin (anonymous requests may be refused until RBAC has bootstrapped). */
async function fetchInsecureReady(server: string, token: string, ca: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const req = https.request(`${server}/readyz`, { headers: { authorization: `Bearer ${token}` }, ca, timeout: 5_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200 ? 'ok' : `readyz ${res.statusCode}`);
    });
    req.on('error', (err) => resolve(String(err)));
    req.on('timeout', () => req.destroy(new Error('readyz timed out')));
    req.end();
  });
}

/** Polls `check` until it holds (for conditions only observable by asking the API server). */
export async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
