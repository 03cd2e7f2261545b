/**
 * The API-server faults episode (issue 13, cluster mode): pods created through a real API server
 * and bound to the node — steady ones, ones with a readiness probe, crash-looping ones, ones that
 * complete — added and deleted (gracefully, or forced with grace 0) at random while the API
 * server's side fails: every watch cut, the watches' version compacted away (410 Gone, as an
 * ERROR event the way the API server sends it, or as the request's status), the pod status
 * writes refused for a while (429, 500 or 503), the API server restarted (SIGTERM or SIGKILL).
 * With `faults` and `kinds` the same episode kills the agent instead (issue 40): pods with claims
 * (claims.ts) among the others, the agent killed with SIGKILL (at once, or inside a runtime call:
 * agentKill.ts), pods added and deleted while it is away, and the agent started again over the
 * same root directory, which must find the claims' volumes mounted and tear down the deleted pods'.
 * The agent reaches the API server through a fault-injecting proxy (test/support/apiFaultProxy.ts)
 * that records every status write; the runtime is sim:// served from this process.
 *
 * Checked all along: the agent's `/pods` and the runtime against the invariants (invariants.ts),
 * and every version of the pods the API server held (a watch of our own, past the proxy): restart
 * counts never decrease, a phase never leaves Succeeded or Failed. At the end, the status writes
 * in the order the API server applied them (statusOrder.ts). After each fault and at the end, the
 * time until the node has converged: the API's pods are the ones created and not deleted (a
 * deleted pod is gone once the agent has finished it), the agent lists exactly them with the
 * statuses the API shows, pods with a passing readiness probe are Ready in the API, the runtime
 * holds nothing (running or not) of a pod the agent does not list, and the runtime and the agent's
 * pod actors agree with the agent's list (invariants.ts notConverged); the claims' data is on their
 * volumes and their pods write there again, and deleted pods left neither a directory nor a mount
 * behind (claims.ts).
 * Everything random comes from the seed, which the report carries.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import type { Pod, PodStatus } from '../../src/api/types.ts';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { seededRandom } from '../support/faults.ts';
import { startSimRuntime } from '../../src/runtime/sim/server.ts';
import { type AgentProcess, runStatelet } from '../support/agentProcess.ts';
import { mountPointsUnder } from '../../src/volumes/mounter.ts';
import { type FailureCode, startApiFaultProxy } from '../support/apiFaultProxy.ts';
import type { ControlPlane } from '../support/controlPlane.ts';
import { KILL_POINTS, armAgentKill } from './agentKill.ts';
import { LONG_RUNNING, agentWarnings, podActors } from './chaosNode.ts';
import { CLAIM_COMMAND, CLAIM_MOUNT_PATH, PodClaims, deletedPodsLeftovers } from './claims.ts';
import { PodHistory, type Violation, notConverged, runtimeViolations } from './invariants.ts';
import { statusOrderViolations } from './statusOrder.ts';

export type ApiFault = 'watchCut' | 'gone410' | 'gone410Http' | 'statusWritesFailing' | 'apiserverRestart' | 'agentKill';
/** The API server's faults: the episode's by default. */
export const API_FAULTS: readonly ApiFault[] = ['watchCut', 'gone410', 'gone410Http', 'statusWritesFailing', 'apiserverRestart'];

/** How the long run's table names each fault. */
export const API_FAULT_NAMES: Record<ApiFault, string> = {
  watchCut: 'API: every watch cut',
  gone410: 'API: watches expired (410 in an ERROR event)',
  gone410Http: 'API: watches expired (410 as the status)',
  statusWritesFailing: 'API: status writes refused for 10 s',
  apiserverRestart: 'API: API server restarted',
  agentKill: 'agent SIGKILL with claims, restarted over its root dir',
};

/** `claim`: a pod writing to a claim of its own (claims.ts). */
export type Kind = 'steady' | 'ready' | 'crashloop' | 'completes' | 'claim';
const KINDS: Kind[] = ['steady', 'ready', 'ready', 'crashloop', 'completes'];
/** The kinds of the agent-kill episode: claims, and pods that run beside them. */
export const CLAIM_KINDS: readonly Kind[] = ['claim', 'claim', 'steady', 'ready', 'completes'];
/** Kinds whose containers are all running once the node has converged. */
const RUNS: ReadonlySet<string> = new Set<Kind>(['steady', 'ready', 'claim']);
const POD_UID = 'io.kubernetes.pod.uid';
const STATUS_PATH = /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/status$/;

export interface ApiFaultsOptions {
  seed: number;
  controlPlane: ControlPlane;
  /** A node the control plane has an identity for. */
  node: string;
  /** Pods at start, and about how many stay. */
  pods: number;
  /** Rounds of changes; at least as many as the faults. */
  rounds: number;
  /** The faults injected (default API_FAULTS). */
  faults?: readonly ApiFault[];
  /** The kinds of pods, drawn from the seed (the same kind may come more than once; default steady, ready, crashloop and completing pods). */
  kinds?: readonly Kind[];
  /** How many times each kind of fault is injected (default 1). */
  faultsEach?: number;
  /** How long status writes are refused (default 10 s). */
  statusFailureMs?: number;
  /** Longest wait for the node to converge after a fault or the last change (default 60 s). */
  convergeTimeoutMs?: number;
  /** Told each fault as it is injected and when the node has converged after it. */
  log?(line: string): void;
}

export interface ApiFaultsReport {
  seed: number;
  changes: number;
  /** The kinds of fault asked for. */
  asked: ApiFault[];
  /** Each fault, how it was injected, and how long the node took to converge after it (-1: it did not). */
  faults: { fault: ApiFault; detail: string; convergeMs: number; notConverged?: string[]; agentLog?: string[] }[];
  /** Observations of the agent's `/pods` and the runtime checked against the invariants. */
  observations: number;
  /** Versions of the pods the API server held (our watch's events) checked. */
  apiVersions: number;
  /** Pods with claims created, and deleted (each one's directory and mounts then checked gone). */
  claimPods: { created: number; deleted: number };
  /** Dead containers and sandboxes of pods deleted before a kill, found left to the container GC at a convergence. */
  leftToGc: number;
  /** Status writes that reached the API server, checked for their order. */
  statusWrites: number;
  /** What the proxy did: watches cut, watches answered 410, requests refused. */
  injected: { watchesCut: number; watchesExpired: number; requestsFailed: number };
  violations: Violation[];
  /** From the last change to converged (ms), or null if it never did. */
  finalConvergeMs: number | null;
  notConverged: string[];
}

/** The pod of `kind`; a claim pod mounts `claim` (made for it). */
function podBody(name: string, kind: Kind, node: string, claim?: k8s.V1Volume): k8s.V1Pod {
  const command = kind === 'crashloop' ? 'sleep 0.3; exit 1' : kind === 'completes' ? 'sleep 0.5; exit 0' : kind === 'claim' ? CLAIM_COMMAND : LONG_RUNNING;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { 'chaos/kind': kind } },
    spec: {
      nodeName: node,
      restartPolicy: kind === 'completes' ? 'Never' : 'Always',
      terminationGracePeriodSeconds: 2,
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'app',
          image: 'busybox',
          command: ['sh', '-c', command],
          ...(kind === 'ready' ? { readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 } } : {}),
          ...(claim ? { volumeMounts: [{ name: claim.name, mountPath: CLAIM_MOUNT_PATH }] } : {}),
        },
      ],
      ...(claim ? { volumes: [claim] } : {}),
    },
  };
}

/** What must agree between the API and the agent: the phase and each container's identity, restarts, state and readiness. */
function digest(status: PodStatus | undefined): string {
  const containers = [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])]
    .map((c) => `${c.name} ${c.containerID ?? '-'} ${c.restartCount} ${Object.keys(c.state)[0] ?? '-'} ${c.ready ? 'ready' : 'unready'}`)
    .sort();
  return [status?.phase ?? 'no phase', ...containers].join('; ');
}

/**
 * Follows the namespace's pods as the API server holds them, past the proxy: every version is
 * handed to `onPod`. A watch that ends is opened again from the last version (a list first when
 * that version is gone), so the API server's restart is ridden out.
 */
function followApiPods(cp: ControlPlane, namespace: string, onPod: (pod: Pod) => void): { stop(): void } {
  const path = `/api/v1/namespaces/${namespace}/pods`;
  let stopped = false;
  let resourceVersion = '';
  let controller: AbortController | undefined;
  const again = () => {
    if (!stopped) setTimeout(() => void open(), 200);
  };
  const open = async () => {
    try {
      if (!resourceVersion) {
        const list = await cp.core.listNamespacedPod({ namespace });
        for (const pod of list.items) onPod(JSON.parse(JSON.stringify(pod)) as Pod);
        resourceVersion = list.metadata?.resourceVersion ?? '';
      }
      controller = await new k8s.Watch(cp.admin).watch(
        path,
        { resourceVersion, allowWatchBookmarks: true },
        (type: string, object: { code?: number; metadata?: { resourceVersion?: string } }) => {
          if (type === 'ERROR') {
            if (object.code === 410) resourceVersion = '';
            return;
          }
          resourceVersion = object.metadata?.resourceVersion ?? resourceVersion;
          if (type !== 'BOOKMARK') onPod(object as unknown as Pod);
        },
        again,
      );
      if (stopped) controller.abort();
    } catch {
      again();
    }
  };
  void open();
  return {
    stop: () => {
      stopped = true;
      controller?.abort();
    },
  };
}

/** What went wrong in an episode (empty: nothing), for the test and the long run alike. */
export function apiFaultsProblems(report: ApiFaultsReport): string[] {
  const problems = report.violations.map((v) => `${v.invariant}: ${v.detail}`);
  for (const fault of report.asked) if (!report.faults.some((f) => f.fault === fault)) problems.push(`${fault} was not injected`);
  for (const f of report.faults.filter((f) => f.convergeMs < 0)) {
    problems.push(`${f.fault} (${f.detail}): did not converge: ${(f.notConverged ?? []).join('; ')}; the agent said: ${(f.agentLog ?? []).join(' | ')}`);
  }
  if (report.finalConvergeMs === null) problems.push(`did not converge at the end: ${report.notConverged.join('; ')}`);
  // The faults asked for really happened, and the order check had writes to check.
  const asked = (...faults: ApiFault[]) => faults.some((f) => report.asked.includes(f));
  if (asked('watchCut', 'gone410', 'gone410Http') && report.injected.watchesCut === 0) problems.push('no watch was cut');
  if (asked('gone410', 'gone410Http') && report.injected.watchesExpired === 0) problems.push('no watch was answered 410');
  if (asked('statusWritesFailing') && report.injected.requestsFailed === 0) problems.push('no status write was refused');
  if (report.statusWrites === 0) problems.push('no status write reached the API server');
  return problems;
}

export async function runApiFaults(options: ApiFaultsOptions): Promise<ApiFaultsReport> {
  const { controlPlane: cp, node } = options;
  const random = seededRandom(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-apifaults-'));
  const namespace = await cp.namespace('apifaults');
  const sim = await startSimRuntime({ socketPath: path.join(dir, 'sim.sock'), pullDelayMs: 20 });
  const cri = new CriClient(sim.endpoint);
  const proxy = await startApiFaultProxy({ upstream: cp.server, certDir: path.join(cp.dir, 'pki') });
  const kubeconfig = await proxy.kubeconfig(cp.nodeKubeconfig(node), path.join(dir, 'node.kubeconfig'));

  const violations: Violation[] = [];
  const asked = [...new Set(options.faults ?? API_FAULTS)];
  const kinds = options.kinds ?? KINDS;
  const rootDir = path.join(dir, 'root');
  const claims = new PodClaims(cp, namespace, node, path.join(dir, 'volumes'));
  const report: ApiFaultsReport = { seed: options.seed, changes: 0, asked, faults: [], observations: 0, apiVersions: 0, claimPods: { created: 0, deleted: 0 }, leftToGc: 0, statusWrites: 0, injected: proxy.injected, violations, finalConvergeMs: null, notConverged: [] };
  const agentHistory = new PodHistory();
  const apiHistory = new PodHistory();
  const following = followApiPods(cp, namespace, (pod) => {
    report.apiVersions++;
    for (const violation of apiHistory.observe([pod])) violations.push({ ...violation, detail: `in the API: ${violation.detail}` });
  });
  /** The pods created and not deleted, by name. */
  const live = new Map<string, Kind>();
  /** The UIDs of the pods created, by name; the names of the pods deleted, by UID. */
  const uids = new Map<string, string>();
  const gone = new Map<string, string>();
  /** The UIDs of pods deleted before an agent kill (whose termination it may have cut short), and the dead runtime objects of theirs found left to the container GC. */
  const cutShort = new Set<string>();
  const leftToGc = new Set<string>();
  let serial = 0;
  // Started again after each kill (by startAgent, which closures call: not narrowed here).
  let agent = null as AgentProcess | null;
  const startAgent = async () => (agent = await runStatelet([`--container-runtime-endpoint=${sim.endpoint}`, `--kubeconfig=${kubeconfig}`, `--hostname-override=${node}`], { rootDir }));
  const create = async (name: string, kind: Kind) => {
    live.set(name, kind);
    const claim = kind === 'claim' ? await claims.make(name) : undefined;
    if (claim) report.claimPods.created++;
    const created = await cp.core.createNamespacedPod({ namespace, body: podBody(name, kind, node, claim) });
    uids.set(name, created.metadata!.uid!);
  };

  const change = async () => {
    const names = [...live.keys()];
    const op = live.size < options.pods / 2 || names.length === 0 ? 'add' : live.size > options.pods * 1.5 ? 'delete' : pick(['add', 'delete', 'forceDelete'] as const);
    if (op === 'add') {
      await create(`p${serial++}`, pick(kinds));
    } else {
      const name = pick(names);
      if (live.get(name) === 'claim') report.claimPods.deleted++;
      live.delete(name);
      gone.set(uids.get(name)!, name);
      await cp.core.deleteNamespacedPod({ namespace, name, ...(op === 'forceDelete' ? { gracePeriodSeconds: 0 } : {}) });
    }
    report.changes++;
  };
  const changes = async () => {
    for (let i = 0, n = 1 + Math.floor(random() * 3); i < n; i++) await change();
  };
  const runtime = async () => ({ containers: await cri.listContainers(), sandboxes: await cri.listPodSandbox() });
  const observe = async () => {
    const pods = await agent?.pods().catch(() => null);
    if (!pods) return;
    report.observations++;
    violations.push(...agentHistory.observe(pods), ...runtimeViolations(await runtime()));
  };
  const shouldRun = (pod: Pod) => RUNS.has(pod.metadata.labels?.['chaos/kind'] ?? '');
  /** Why the node has not converged yet: the API against what was created, the agent against the API, the runtime against the agent. */
  const reasons = async (): Promise<string[]> => {
    const inApi = (await cp.core.listNamespacedPod({ namespace })).items as unknown as Pod[];
    const listed = await agent!.pods();
    const found: string[] = [];
    for (const name of live.keys()) if (!inApi.some((p) => p.metadata.name === name)) found.push(`pod ${name} is missing from the API`);
    for (const pod of inApi) {
      const { name, uid } = pod.metadata;
      if (!live.has(name)) found.push(`pod ${name} is still in the API after its deletion`);
      const local = listed.find((p) => p.metadata.uid === uid);
      if (!local) found.push(`the agent does not list pod ${name} (${uid})`);
      else if (digest(local.status) !== digest(pod.status)) found.push(`pod ${name}: the API has [${digest(pod.status)}], the agent [${digest(local.status)}]`);
      if (live.get(name) === 'ready' && !pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) found.push(`pod ${name} is not Ready in the API`);
    }
    for (const pod of listed) if (!inApi.some((p) => p.metadata.uid === pod.metadata.uid)) found.push(`the agent lists pod ${pod.metadata.name} (${pod.metadata.uid}), which the API does not have`);
    // Once a deleted pod has terminated, its containers and sandboxes go too, running or not; but
    // a pod whose termination a kill may have cut short, once stopped, is the container GC's: its
    // dead containers and sandboxes go at the restarted agent's second pass, a minute after its start
    // (kuberuntime_gc.go evictContainers: deleted pods' only once all sources are ready).
    const held = await runtime();
    const owned = new Set(listed.map((p) => p.metadata.uid));
    const objects = [...held.containers.map((c) => ({ object: c, dead: c.state !== 'CONTAINER_RUNNING' })), ...held.sandboxes.map((s) => ({ object: s, dead: s.state !== 'SANDBOX_READY' }))];
    for (const { object, dead } of objects) {
      const uid = object.labels[POD_UID] ?? '';
      if (owned.has(uid)) continue;
      if (dead && cutShort.has(uid)) leftToGc.add(object.id);
      else found.push(`the runtime still holds ${object.metadata.name} (${object.id.slice(0, 12)}) of pod ${uid}, which the agent does not list`);
    }
    return [...found, ...notConverged(listed, shouldRun, held, await podActors(agent!)), ...(await claims.notConverged(new Set(live.keys()))), ...(await deletedPodsLeftovers(rootDir, gone))];
  };
  /** Polls until converged: the time it took, or null (the reasons kept) after the timeout. */
  const converge = async (): Promise<number | null> => {
    const started = performance.now();
    await claims.mark();
    for (;;) {
      await observe();
      report.notConverged = await reasons().catch((err: unknown) => [`not observable: ${err instanceof Error ? err.message : String(err)}`]);
      if (report.notConverged.length === 0) return performance.now() - started;
      if (performance.now() - started > (options.convergeTimeoutMs ?? 60_000)) return null;
      await sleep(250);
    }
  };
  /** A write the agent does not watch: its version is past any the agent's watches have seen. */
  const newestVersion = async () => {
    const marker = await cp.core.createNamespacedConfigMap({ namespace, body: { metadata: { generateName: 'marker-' } } });
    return marker.metadata!.resourceVersion!;
  };
  /** Injects `fault`; resolves once it is over (the API server back, the writes accepted again) with how it was done. */
  const inject = async (fault: ApiFault): Promise<string> => {
    switch (fault) {
      case 'watchCut': {
        const cut = proxy.cutWatches();
        await changes();
        return `${cut} watches cut`;
      }
      case 'gone410':
      case 'gone410Http': {
        proxy.compact(await newestVersion(), fault === 'gone410' ? 'event' : 'http');
        const cut = proxy.cutWatches();
        // Seen by the agent only through its list after the 410.
        await changes();
        return `${cut} watches cut, then answered 410 ${fault === 'gone410' ? 'in an ERROR event' : 'as their status'}`;
      }
      case 'statusWritesFailing': {
        const code = pick<FailureCode>([429, 500, 503]);
        const restore = proxy.fail({ methods: ['PATCH', 'PUT'], path: STATUS_PATH, code });
        const until = performance.now() + (options.statusFailureMs ?? 10_000);
        while (performance.now() < until) {
          await changes();
          await observe();
          await sleep(1000);
        }
        restore();
        return `status writes answered ${code} for ${(options.statusFailureMs ?? 10_000) / 1000} s`;
      }
      case 'apiserverRestart': {
        const crash = random() < 0.5;
        await cp.stop({ crash });
        await cp.restart();
        // Converged only once the agent has seen what changed after the API server's return.
        await changes();
        return crash ? 'SIGKILL, started again' : 'SIGTERM, started again';
      }
      case 'agentKill': {
        const point = pick(KILL_POINTS);
        const { killed } = armAgentKill(agent!, sim, point);
        // The calls the kill waits for; what the agent had not finished when it died.
        await changes();
        await killed;
        // Seen by the agent only once started again: pods deleted (their volumes to tear down) and added while it was away.
        const away = report.changes;
        await changes();
        for (const uid of gone.keys()) cutShort.add(uid);
        await startAgent();
        return `${point === 'anytime' ? 'at once' : `inside ${point}`}, ${report.changes - away} changes while away`;
      }
    }
  };

  try {
    for (let i = 0; i < options.pods; i++) await create(`p${serial++}`, kinds[i % kinds.length]!);
    await startAgent();
    // Every kind of fault `faultsEach` times, in an order and at rounds drawn from the seed.
    const planned = asked.flatMap((fault) => Array<ApiFault>(options.faultsEach ?? 1).fill(fault));
    if (planned.length > options.rounds) throw new Error(`${planned.length} faults need at least as many rounds (${options.rounds} given)`);
    const faultAt = new Map<number, ApiFault>();
    while (planned.length > 0) {
      const round = Math.floor(random() * options.rounds);
      if (!faultAt.has(round)) faultAt.set(round, planned.splice(Math.floor(random() * planned.length), 1)[0]!);
    }
    for (let round = 0; round < options.rounds; round++) {
      await changes();
      await observe();
      const fault = faultAt.get(round);
      if (!fault) {
        await sleep(200 + random() * 800);
        continue;
      }
      options.log?.(`round ${round}: ${fault}`);
      const logFrom = agent!.output().length;
      const detail = await inject(fault);
      const convergeMs = await converge();
      options.log?.(`round ${round}: ${fault} (${detail}): ${convergeMs === null ? `did not converge: ${report.notConverged.join('; ')}` : `converged in ${Math.round(convergeMs)} ms`}`);
      // What the agent said meanwhile, to tell why: about the API server (its watches, its writes), or, started again after a kill, its warnings.
      const agentLog = () => (fault === 'agentKill' ? agentWarnings(agent!.output()) : agent!.output().slice(logFrom).split('\n').filter((line) => /watch|API/.test(line)));
      report.faults.push(convergeMs === null ? { fault, detail, convergeMs: -1, notConverged: report.notConverged, agentLog: agentLog() } : { fault, detail, convergeMs });
    }
    report.finalConvergeMs = await converge();
    report.leftToGc = leftToGc.size;
    report.statusWrites = proxy.statusWrites.length;
    violations.push(...statusOrderViolations(proxy.statusWrites));
    return report;
  } finally {
    following.stop();
    await agent?.stop().catch(() => {});
    // Nothing runs the pods any more: remove them from the API, and from the runtime.
    await cp.core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 }).catch(() => {});
    for (const sandbox of await cri.listPodSandbox().catch(() => [])) await cri.removePodSandbox(sandbox.id).catch(() => {});
    await claims.deleteVolumes();
    // The claims' bind mounts the agent left (an agent stops without unmounting, as the kubelet does), before their directories go.
    for (const point of mountPointsUnder(await readFile('/proc/self/mountinfo', 'utf8'), dir)) await promisify(execFile)('umount', [point]).catch(() => {});
    cri.close();
    await proxy.close();
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  }
}
