/**
 * Worker: what a client certificate rotation costs a loaded node. statelet (the built binary, its
 * own process, as users run it) joins a kubeadm-like control plane (test/support/controlPlane.ts
 * `kubeadm: true`) through TLS bootstrap from kubeadm's files, on sim://, with certificates signed
 * for ROTATION_SIGNING_DURATION (a renewal about every 1.5 min). With 100 pods running and a watch
 * open, one pod is replaced every second (deleted, and a new one created) so that status writes
 * flow all the time, until the node has renewed its client certificate `--renewals` times.
 *   node --import tsx bench/rotation.ts [--pods=100] [--renewals=2] [--out=FILE]
 *
 * Figures (reported, never asserted):
 *   - gaps between consecutive pod status writes seen on the watch: the largest over the run, the
 *     largest across each renewal (the write before the new certificate was issued to the first
 *     one after), beside the status writer's retry period (its 10 s resync: status_manager.go
 *     syncBatch), which a gap beyond would mean a write lost and retried;
 *   - create→Running of the replacement pods (POST to the watch event showing it Running), for
 *     pods created within 15 s after a renewal and for the others;
 *   - the Lease: the longest interval between renewals seen, beside its nominal 10 s;
 *   - the agent's log lines naming 401/Unauthorized or a TLS failure.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../test/support/controlPlane.ts';
import { ROTATION_SIGNING_DURATION } from '../test/support/kubeadm.ts';
import { type KubeadmNode, kubeadmNode } from '../test/support/kubeadmNode.ts';
import { removeAgentDir } from '../test/support/removeAgentDir.ts';
import { binaryLaunch, STATELET_BIN } from './launch.ts';
import { argValue, emit, freeLoopbackPort, progress, round, runWorker, sleep, summarize } from './lib.ts';

const PODS = Number(argValue('pods') ?? 100);
const RENEWALS = Number(argValue('renewals') ?? 2);
const NODE = 'rotation-node';
const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
/** The status writer's resync (src/statuswriter): a status not written is written again within it. */
const RETRY_PERIOD_MS = 10_000;
const AFTER_RENEWAL_MS = 15_000;

const pod = (name: string): k8s.V1Pod => ({
  metadata: { name },
  spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"] }] },
});
const running = (p: k8s.V1Pod) => p.status?.phase === 'Running' && !!p.status.containerStatuses?.[0]?.state?.running;

async function main(): Promise<void> {
  const cp: ControlPlane | null = await startControlPlane({ nodeNames: [], kubeadm: true, signingDuration: ROTATION_SIGNING_DURATION, required: true });
  if (!cp) return emit({ skipped: 'the control plane cannot be built here (Go missing)' });
  let files: KubeadmNode | undefined;
  let agent: ChildProcess | undefined;
  let stopApprover: (() => Promise<void>) | undefined;
  const rootDir = await mkdtemp(path.join(os.tmpdir(), 'statelet-bench-rotation-'));
  let log = '';
  try {
    files = await kubeadmNode(cp, { nodeName: NODE, nodeIp: '127.0.0.1', containerRuntimeEndpoint: 'sim://' });
    const launch = binaryLaunch(STATELET_BIN);
    agent = spawn(
      process.execPath,
      [...launch.nodeFlags, STATELET_BIN, ...files.args, `--root-dir=${rootDir}`, `--pod-logs-dir=${path.join(rootDir, 'logs')}`, '--address=127.0.0.1', `--port=${await freeLoopbackPort()}`, `--read-only-port=${await freeLoopbackPort()}`, `--healthz-port=${await freeLoopbackPort()}`],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...launch.env } },
    );
    const keep = (chunk: Buffer) => {
      log += chunk.toString();
      if (log.length > 2_000_000) log = log.slice(-1_000_000);
    };
    agent.stdout!.on('data', keep);
    agent.stderr!.on('data', keep);
    stopApprover = cp.kubeadm!.approveServingCsrs([NODE]);
    progress('waiting for the node to join…');
    await cp.waitFor<k8s.V1Node>({ path: '/api/v1/nodes' }, NODE, (n) => n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false, 180_000);

    const namespace = await cp.namespace('rotation');
    const writes: number[] = [];
    const runningAt = new Map<string, number>();
    const watch = await new k8s.Watch(cp.admin).watch(`/api/v1/namespaces/${namespace}/pods`, {}, (type: string, p: k8s.V1Pod) => {
      const now = Date.now();
      if (type === 'MODIFIED') writes.push(now);
      if (running(p) && !runningAt.has(p.metadata!.name!)) runningAt.set(p.metadata!.name!, now);
    }, () => undefined);
    const leaseRenewals: number[] = [];
    const leaseWatch = await new k8s.Watch(cp.admin).watch('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', { fieldSelector: `metadata.name=${NODE}` }, (_t: string, lease: k8s.V1Lease) => {
      const renewed = Date.parse(String(lease.spec?.renewTime ?? ''));
      if (Number.isFinite(renewed) && leaseRenewals.at(-1) !== renewed) leaseRenewals.push(renewed);
    }, () => undefined);
    const issuedAt = new Map<string, number>();
    const csrWatch = await new k8s.Watch(cp.admin).watch('/apis/certificates.k8s.io/v1/certificatesigningrequests', {}, (_t: string, csr: k8s.V1CertificateSigningRequest) => {
      if (csr.spec.signerName === CLIENT_SIGNER && csr.spec.username === `system:node:${NODE}` && csr.status?.certificate && !issuedAt.has(csr.metadata!.name!)) issuedAt.set(csr.metadata!.name!, Date.now());
    }, () => undefined);

    progress(`creating ${PODS} pods…`);
    const createdAt = new Map<string, number>();
    const create = async (name: string) => {
      createdAt.set(name, Date.now());
      await cp.core.createNamespacedPod({ namespace, body: pod(name) });
    };
    await Promise.all(Array.from({ length: PODS }, (_, i) => create(`load-${i}`)));
    while ([...createdAt.keys()].some((name) => !runningAt.has(name))) await sleep(200);
    const loadStart = Date.now();
    const renewalsBefore = issuedAt.size;
    progress(`${PODS} pods running; replacing one a second until ${RENEWALS} renewals…`);
    let next = PODS;
    const live = Array.from({ length: PODS }, (_, i) => `load-${i}`);
    const deadline = Date.now() + 15 * 60_000;
    // Until the last renewal, and AFTER_RENEWAL_MS beyond it so that the writes after it are seen.
    let lastRenewalSeen: number | undefined;
    while (lastRenewalSeen === undefined || Date.now() - lastRenewalSeen < AFTER_RENEWAL_MS) {
      if (Date.now() > deadline) throw new Error(`fewer than ${RENEWALS} renewals in 15 minutes`);
      const gone = live.shift()!;
      await cp.core.deleteNamespacedPod({ namespace, name: gone });
      const name = `load-${next++}`;
      live.push(name);
      await create(name);
      await sleep(1_000);
      if (lastRenewalSeen === undefined && issuedAt.size - renewalsBefore >= RENEWALS) lastRenewalSeen = Date.now();
    }
    // Let the last pods come up.
    await sleep(5_000);
    const loadEnd = Date.now();
    watch.abort();
    leaseWatch.abort();
    csrWatch.abort();

    const renewals = [...issuedAt.values()].filter((t) => t >= loadStart).sort((a, b) => a - b);
    const inWindow = writes.filter((t) => t >= loadStart && t <= loadEnd).sort((a, b) => a - b);
    const gaps = inWindow.slice(1).map((t, i) => t - inWindow[i]!);
    const acrossRenewal = renewals.map((r) => {
      const before = inWindow.filter((t) => t <= r).at(-1);
      const after = inWindow.find((t) => t > r);
      return before !== undefined && after !== undefined ? after - before : null;
    });
    const replacements = [...createdAt.entries()].filter(([, t]) => t >= loadStart);
    const latency = (near: boolean) =>
      replacements
        .filter(([, t]) => renewals.some((r) => t >= r && t - r <= AFTER_RENEWAL_MS) === near)
        .map(([name, t]) => (runningAt.get(name) ?? Number.NaN) - t);
    const leaseInLoad = leaseRenewals.filter((t) => t >= loadStart);
    const leaseIntervals = leaseInLoad.slice(1).map((t, i) => t - leaseInLoad[i]!);
    const notRunning = replacements.filter(([name]) => !runningAt.has(name)).map(([name]) => name);
    const troubleLines = log.split('\n').filter((line) => /Unauthorized|certificate has expired|ECONNRESET|handshake/.test(line));
    await emit({
      pods: PODS,
      signingDuration: ROTATION_SIGNING_DURATION,
      loadSeconds: round((loadEnd - loadStart) / 1000),
      renewals: renewals.length,
      replacementPods: replacements.length,
      replacementPodsNeverRunning: notRunning,
      statusWrites: inWindow.length,
      retryPeriodMs: RETRY_PERIOD_MS,
      largestGapMs: Math.max(0, ...gaps),
      gapMs: summarize(gaps),
      gapAcrossEachRenewalMs: acrossRenewal,
      createToRunningAfterRenewalMs: summarize(latency(true)),
      createToRunningOtherwiseMs: summarize(latency(false)),
      leaseLongestIntervalMs: Math.max(0, ...leaseIntervals),
      agentTroubleLines: troubleLines.length,
      agentTroubleSample: troubleLines.slice(0, 5),
    });
  } finally {
    await stopApprover?.();
    if (agent && agent.exitCode === null) {
      agent.kill('SIGTERM');
      await new Promise((resolve) => agent!.once('exit', resolve));
    }
    await removeAgentDir(rootDir);
    await files?.remove();
    await cp.close();
    await rm(rootDir, { recursive: true, force: true });
  }
}

runWorker(main);
