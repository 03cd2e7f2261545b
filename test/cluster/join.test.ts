/**
 * statelet joins a kubeadm-like cluster (controlPlane.ts `kubeadm: true`) as a kubelet does after
 * `kubeadm join`: started from kubeadm's systemd drop-in command line with kubeadm's config.yaml
 * and kubeadm-flags.env (kubeadmNode.ts), holding nothing but the bootstrap token — as the
 * `statelet` command users run (bin/statelet.js), on sim://, on a private containerd, and as
 * `--nodes=3` simulated nodes that each bootstrap their own identity:
 *   - the bootstrap CSR is approved by kube-controller-manager: with kubeadm's
 *     `rotateCertificates: true` the certificate manager asks (`csr-…`, client-go
 *     certificate_manager.go rotateCerts), with `--rotate-certificates=false` the synchronous
 *     bootstrap (`node-csr-…`, bootstrap.go requestNodeCertificate); the Node is created by
 *     `system:node:<name>` (the API server's audit log); pods run;
 *   - the serving CSR waits for the admin; until approved the API server (which verifies kubelets
 *     against the cluster CA) cannot reach the node's logs; once approved `kubectl logs` and
 *     `kubectl exec` work through it;
 *   - with certificates signed for ROTATION_SIGNING_DURATION, every node renews its client
 *     certificate at least twice while a watch is open and pods are being created: every pod
 *     reaches Running, each status seen on the watch, and the nodes' Leases keep being renewed.
 * Outside CI the containerd part skips loudly where containerd cannot run here.
 */
import { readFileSync } from 'node:fs';
import { readFile, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUSYBOX_IMAGE, startContainerd } from '../containerd/harness.ts';
import { type AgentProcess, type StateletCommand, checkoutBinCommand, runStatelet } from '../support/agentProcess.ts';
import { type ControlPlane, leases, nodes, pods, startControlPlane, waitFor } from '../support/controlPlane.ts';
import { ROTATION_SIGNING_DURATION } from '../support/kubeadm.ts';
import { type KubeadmNode, kubeadmNode } from '../support/kubeadmNode.ts';

/** The `statelet` command as a user runs it (bin/statelet.js, its shebang's Node flags) over this checkout's sources, whatever dist/ holds. */
const checkout = await checkoutBinCommand();
afterAll(() => checkout.remove());
const STATELET: StateletCommand = checkout.command;
const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
const SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
const longRunning = (line: string) => `echo '${line}'; trap 'exit 0' TERM; while true; do sleep 1; done`;

const containerd = await startContainerd();

/** One agent process joined through kubeadm's files: one node, or several (--nodes). */
interface Joined {
  label: string;
  /** Client certificate rotation on (kubeadm's config.yaml), or turned off in /etc/default/kubelet. */
  rotates: boolean;
  /** Its Nodes' names. */
  names: string[];
  image: string;
  files?: KubeadmNode;
  agent?: AgentProcess;
  /** Where each node keeps its kubeconfig after the bootstrap. */
  kubeletConf(name: string): string;
}

const HOLLOW = ['join-hollow-0', 'join-hollow-1', 'join-hollow-2'];
const joined: Joined[] = [
  // First: without rotation its certificate expires ROTATION_SIGNING_DURATION after its bootstrap.
  { label: 'sim:// --rotate-certificates=false', rotates: false, names: ['join-norotate'], image: 'busybox', kubeletConf: () => '' },
  { label: 'sim://', rotates: true, names: ['join-sim'], image: 'busybox', kubeletConf: () => '' },
  ...(containerd ? [{ label: 'containerd', rotates: true, names: ['join-containerd'], image: BUSYBOX_IMAGE, kubeletConf: () => '' }] : []),
  { label: 'sim:// --nodes=3', rotates: true, names: HOLLOW, image: 'busybox', kubeletConf: () => '' },
];

let cp: ControlPlane | null = null;

beforeAll(async () => {
  cp = await startControlPlane({ nodeNames: [], kubeadm: true, signingDuration: ROTATION_SIGNING_DURATION });
  if (!cp) return;
  for (const join of joined) {
    const several = join.names.length > 1;
    const files = await kubeadmNode(cp, {
      nodeName: several ? 'join-hollow' : join.names[0]!,
      // The nodes of --nodes take the next addresses, away from the other suites' (127.0.1.x).
      nodeIp: several ? '127.0.3.1' : '127.0.0.1',
      containerRuntimeEndpoint: join.label === 'containerd' ? containerd!.endpoint : 'sim://',
      // /etc/default/kubelet: one process for three nodes, each with its own kubeconfig; or no rotation.
      ...(several ? { extraArgs: (dirs) => ['--nodes=3', `--kubeconfig=${dirs.etcDir}/kubelet-{node}.conf`] } : {}),
      ...(join.rotates ? {} : { extraArgs: () => ['--rotate-certificates=false'] }),
    });
    join.files = files;
    join.kubeletConf = (name) => (several ? path.join(files.etcDir, `kubelet-${name}.conf`) : files.kubeletConf);
    join.agent = await runStatelet(files.args, { command: STATELET, nodeAddresses: several });
  }
}, 15 * 60_000);

afterAll(async () => {
  for (const join of joined) {
    await join.agent?.stop();
    await join.files?.remove();
  }
  await containerd?.stop();
  await cp?.close();
}, 180_000);

const ready = (node: k8s.V1Node | null) => node?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
const running = (pod: k8s.V1Pod | null) => pod?.status?.phase === 'Running' && !!pod.status.containerStatuses?.[0]?.state?.running;
const issuedTo = (csr: k8s.V1CertificateSigningRequest) => (csr.status?.certificate ? new X509Certificate(Buffer.from(csr.status.certificate, 'base64')).subject : null);

function failure(join: Joined, err: unknown): Error {
  return new Error(`${String(err)}\n--- statelet (${join.label}):\n${join.agent?.output().slice(-6000)}`);
}

async function podFor(cp: ControlPlane, namespace: string, name: string, nodeName: string, image: string): Promise<void> {
  await cp.core.createNamespacedPod({
    namespace,
    body: { metadata: { name }, spec: { nodeName, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', longRunning(`up on ${nodeName}`)] }] } },
  });
}

describe.each(joined)('statelet joining like kubeadm ($label)', (join) => {
  it('joins with only the bootstrap token: its CSR is auto-approved, its Node is created by system:node:<name>, its kubeconfig points at the issued certificate, pods run', { timeout: 240_000 }, async ({ skip }) => {
    if (!cp || !join.agent) return skip();
    const kubeadm = cp.kubeadm!;
    try {
      for (const name of join.names) await cp.waitFor<k8s.V1Node>(nodes, name, ready, 120_000);
    } catch (err) {
      throw failure(join, err);
    }
    const tokenUser = `system:bootstrap:${kubeadm.token.split('.')[0]}`;
    const csrs = await kubeadm.csrs();
    for (const name of join.names) {
      const bootstrap = csrs.filter((csr) => csr.spec.signerName === CLIENT_SIGNER && csr.spec.username === tokenUser && issuedTo(csr) === `O=system:nodes\nCN=system:node:${name}`);
      // The certificate manager's CSR (generateName csr-, usages of an ECDSA key: DefaultKubeletClientGetUsages),
      // or the synchronous bootstrap's (its digested name, with key encipherment: bootstrap.go requestNodeCertificate).
      expect(bootstrap.map((csr) => csr.metadata?.name), name).toEqual([expect.stringMatching(join.rotates ? /^csr-[a-z0-9]+$/ : /^node-csr-[A-Za-z0-9_-]+$/)]);
      const [csr] = bootstrap;
      expect([...csr!.spec.usages!].sort()).toEqual(join.rotates ? ['client auth', 'digital signature'] : ['client auth', 'digital signature', 'key encipherment']);
      expect(csr!.status?.conditions?.find((c) => c.type === 'Approved')?.reason).toBe('AutoApproved');

      // Registered under the node's own name, by nobody else.
      const creations = (await kubeadm.auditEvents()).filter((e) => e.objectRef?.resource === 'nodes' && e.objectRef.name === name && e.responseStatus?.code === 201);
      expect(creations.map((e) => e.user.username)).toEqual([`system:node:${name}`]);

      // kubelet.conf (0600) names the current certificate: a symlink to kubelet-client-<timestamp>.pem (0600).
      const conf = join.kubeletConf(name);
      expect((await stat(conf)).mode & 0o777).toBe(0o600);
      const kubeconfig = new k8s.KubeConfig();
      kubeconfig.loadFromFile(conf);
      const certFile = kubeconfig.getCurrentUser()?.certFile ?? '';
      expect(path.basename(certFile)).toBe('kubelet-client-current.pem');
      expect(kubeconfig.getCurrentUser()?.keyFile).toBe(certFile);
      expect(path.basename(await readlink(certFile))).toMatch(/^kubelet-client-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$/);
      expect((await stat(certFile)).mode & 0o777).toBe(0o600);
      expect(new X509Certificate(await readFile(certFile)).subject).toBe(`O=system:nodes\nCN=system:node:${name}`);
    }

    const namespace = await cp.namespace('join');
    for (const name of join.names) await podFor(cp, namespace, `on-${name}`, name, join.image);
    try {
      for (const name of join.names) await cp.waitFor<k8s.V1Pod>(pods(namespace), `on-${name}`, running, 120_000);
    } catch (err) {
      throw failure(join, err);
    }
  });

  it('asks for a serving certificate that waits for the admin; once approved the API server verifies the node against the cluster CA: kubectl logs and exec', { timeout: 180_000 }, async ({ skip }) => {
    if (!cp || !join.agent) return skip();
    const kubeadm = cp.kubeadm!;
    const namespace = await cp.namespace('serving');
    for (const name of join.names) await podFor(cp, namespace, `logs-${name}`, name, join.image);
    for (const name of join.names) await cp.waitFor<k8s.V1Pod>(pods(namespace), `logs-${name}`, running, 120_000);
    const logs = (name: string) => cp!.kubectl(['logs', '-n', namespace, `logs-${name}`]);

    for (const name of join.names) {
      let pending: k8s.V1CertificateSigningRequest | undefined;
      await waitFor(async () => {
        pending = (await kubeadm.csrs()).find((csr) => csr.spec.signerName === SERVING_SIGNER && csr.spec.username === `system:node:${name}`);
        return !!pending;
      }, `the serving CSR of ${name}`, 60_000);
      // Never auto-approved: nothing has happened to it, and the API server cannot reach the node's logs.
      expect(pending!.status?.conditions ?? []).toEqual([]);
      await expect(logs(name)).rejects.toThrow();
      await kubeadm.approveCsr(pending!.metadata!.name!);
    }
    for (const name of join.names) {
      let out = '';
      try {
        await waitFor(async () => (out = await logs(name).catch(() => '')) !== '', `kubectl logs of the pod on ${name}`, 60_000);
      } catch (err) {
        throw failure(join, err);
      }
      expect(out).toBe(`up on ${name}\n`);
      expect(await cp.kubectl(['exec', '-n', namespace, `logs-${name}`, '--', 'echo', 'exec ok'])).toBe('exec ok\n');
    }
    // The node's server presents the issued certificate: the cluster CA verifies it for the node's IP.
    const node = await cp.core.readNode({ name: join.names[0]! });
    const address = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? '';
    const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0;
    const peer = await new Promise<tls.PeerCertificate>((resolve, reject) => {
      const socket = tls.connect({ host: address, port, ca: [readFileSync(kubeadm.caFile, 'utf8')] }, () => {
        resolve(socket.getPeerCertificate());
        socket.end();
      });
      socket.on('error', reject);
    });
    expect(peer.subject.CN).toBe(`system:node:${join.names[0]}`);
  });
});

describe('certificate rotation while joined', () => {
  it('renews every node’s client certificate at least twice while a watch is open and pods are being created: no pod lost, no status missing, Leases renewed', { timeout: 12 * 60_000 }, async ({ skip }) => {
    if (!cp || joined.some((j) => !j.agent)) return skip();
    const kubeadm = cp.kubeadm!;
    // The node without rotation has done its part: its certificate is expiring.
    for (const join of joined.filter((j) => !j.rotates)) await join.agent!.stop();
    const rotating = joined.filter((j) => j.rotates);
    const names = rotating.flatMap((j) => j.names);
    const imageOf = new Map(rotating.flatMap((j) => j.names.map((n) => [n, j.image] as const)));
    // Serving certificates rotate as often: an approver keeps them issued, as in such a cluster.
    const stopApprover = kubeadm.approveServingCsrs(names);
    const namespace = await cp.namespace('rotation');
    const logFrom = new Map(rotating.map((j) => [j, j.agent!.output().length]));

    // Every status of the namespace's pods, as a client watching sees it.
    const seen = new Map<string, k8s.V1Pod[]>();
    const controller = await new k8s.Watch(cp.admin).watch(
      `/api/v1/namespaces/${namespace}/pods`,
      {},
      (_type: string, pod: k8s.V1Pod) => {
        const name = pod.metadata!.name!;
        seen.set(name, [...(seen.get(name) ?? []), pod]);
      },
      () => undefined,
    );
    const renewals = async () => {
      const csrs = await kubeadm.csrs();
      return new Map(names.map((name) => [name, csrs.filter((csr) => csr.spec.signerName === CLIENT_SIGNER && csr.spec.username === `system:node:${name}` && csr.status?.certificate).length]));
    };
    const created: { name: string; node: string }[] = [];
    const deadline = Date.now() + 10 * 60_000;
    // Renewals before this test (the nodes have been renewing since they joined) do not count.
    const before = await renewals();
    let counts = before;
    const renewedTwice = () => names.every((name) => counts.get(name)! - before.get(name)! >= 2);
    try {
      // A pod every 2 s, round the nodes, until each node has renewed twice since the watch opened.
      let round = 0;
      while (!renewedTwice()) {
        if (Date.now() > deadline) throw new Error(`fewer than two renewals in 10 minutes: before ${JSON.stringify([...before])}, now ${JSON.stringify([...counts])}`);
        const node = names[round % names.length]!;
        const name = `load-${round++}`;
        await podFor(cp, namespace, name, node, imageOf.get(node)!);
        created.push({ name, node });
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        counts = await renewals();
      }
      for (const { name } of created) await cp.waitFor<k8s.V1Pod>(pods(namespace), name, running, 120_000);
    } catch (err) {
      throw new Error([String(err), ...rotating.map((j) => failure(j, '').message)].join('\n'));
    } finally {
      controller.abort();
      await stopApprover();
    }
    // The watch saw each pod's status written: scheduled to its node, then running.
    for (const { name, node } of created) {
      const statuses = seen.get(name) ?? [];
      expect(statuses.some(running), `${name} on ${node}: ${JSON.stringify(statuses.map((p) => p.status?.phase))}`).toBe(true);
    }
    // Each node holds a renewed certificate (not the bootstrap one) and its Lease is still being renewed.
    const since = Date.now();
    for (const join of rotating) {
      expect(join.agent!.child.exitCode).toBeNull();
      // The new certificate was in use before the old one expired: the API server never refused the node.
      const lines = join.agent!.output().slice(logFrom.get(join)).split('\n');
      expect(lines.filter((line) => /Unauthorized|certificate has expired/.test(line)), join.label).toEqual([]);
      for (const name of join.names) {
        const kubeconfig = new k8s.KubeConfig();
        kubeconfig.loadFromFile(join.kubeletConf(name));
        const current = new X509Certificate(await readFile(kubeconfig.getCurrentUser()!.certFile!));
        const tokenUser = `system:bootstrap:${kubeadm.token.split('.')[0]}`;
        const bootstrap = (await kubeadm.csrs()).find((csr) => csr.spec.username === tokenUser && issuedTo(csr) === current.subject);
        expect(current.serialNumber).not.toBe(new X509Certificate(Buffer.from(bootstrap!.status!.certificate!, 'base64')).serialNumber);
        await cp.waitFor<k8s.V1Lease>(leases, name, (lease) => Date.parse(String(lease?.spec?.renewTime ?? 0)) > since, 60_000);
      }
    }
  });
});
