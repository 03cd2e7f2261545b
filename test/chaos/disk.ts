/**
 * The disk episode (issue 13): the filesystem under the agent's --root-dir (and --pod-logs-dir,
 * which shares it, as /var/log/pods shares /var/lib/kubelet's disk on most nodes) is full for a
 * while, then read-only for a while, while pods are added and deleted and the running ones keep
 * logging (their logs over the rotation size at every pass) and writing to their emptyDir
 * volumes. The filesystem is a real one (smallFilesystem.ts, root only): a tmpfs of a few MiB
 * filled until the kernel answers ENOSPC, blocks and inodes both, and remounted read-only and back.
 *
 * Checked throughout: the agent never exits; the pods that ran before a fault keep running with
 * the same containers (nothing restarted); the invariants (chaosNode.ts); /healthz stays 200 (as
 * the kubelet's, it is about the runtime and the PLEG, which the disk does not stop). After each fault, once
 * the filesystem is back: the time until the node converges (the pods added meanwhile run, the
 * deleted ones are gone, one actor per pod) and every running pod's log has a line written since.
 * And what the agent said: its warning and error lines from the fault's start to convergence, by
 * what they say (a line repeated many times is a flood), and those that name neither a pod nor a
 * path (an unclear error). Everything random comes from the seed.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '../../src/api/types.ts';
import { seededRandom } from '../support/faults.ts';
import { mountSmallFilesystem } from '../support/smallFilesystem.ts';
import { ChaosNode, type Kind, NODE } from './chaosNode.ts';
import type { Violation } from './invariants.ts';

export type DiskFault = 'full' | 'readOnly';

export interface DiskOptions {
  seed: number;
  /** Pods running before the first fault. */
  pods: number;
  /** How long each fault lasts (ms). */
  faultMs: number;
  /** Pods added, and as many deleted, while each fault lasts. */
  changesPerFault: number;
  image: string;
  /** Longest wait for the node to converge (ms). */
  convergeTimeoutMs?: number;
}

export interface DiskFaultReport {
  fault: DiskFault;
  /** Pods added and deleted while it lasted. */
  added: number;
  deleted: number;
  /** From the filesystem's return to converged (ms), -1 if it did not within the timeout. */
  convergeMs: number;
  notConverged?: string[];
  /** The agent's warning and error lines from the fault's start to converged. */
  lines: number;
  /** Those lines by what they say (without timestamp and ids), most repeated first. */
  causes: { cause: string; count: number }[];
}

export interface DiskReport {
  seed: number;
  faults: DiskFaultReport[];
  observations: number;
  violations: Violation[];
  /** Containers of pods that ran before a fault, replaced (restarted, recreated) while it lasted or after. */
  restarted: string[];
  /** The agent's exit code or signal, if it exited. */
  agentExited: string | null;
  /** The statuses /healthz answered while the faults lasted (the kubelet's /healthz does not look at the disk either). */
  healthz: number[];
  /** Warning and error lines that name neither a pod nor a path. */
  unclear: string[];
  /** The agent's whole log, for a failure's report. */
  output: string;
}

const KINDS: Kind[] = ['logger', 'logger', 'writer'];
/** The most times one line may come back during a fault of 10 s: a pod's warning event at each retry of its sync (10 s back-off), not a line per pass or per second. */
const MAX_REPEATS = 3;
/**
 * How each fault shows in what the agent says: the kernel's own words, with the pod and the path
 * (after the syscall for a mkdir, before the error for a write: Node's write errors name no path).
 */
const SAID: Record<DiskFault, RegExp> = {
  full: /^(?=.*pod="[^"]+")(?=.*ENOSPC: no space left on device)(?=.*[\s'"](\/[^\s/'":]+){2,})/,
  readOnly: /^(?=.*pod="[^"]+")(?=.*EROFS: read-only file system)(?=.*[\s'"](\/[^\s/'":]+){2,})/,
};

/** What went wrong in an episode (empty: nothing), for the test and the long run alike. */
export function diskProblems(report: DiskReport): string[] {
  const problems: string[] = [];
  if (report.agentExited !== null) problems.push(`the agent exited (${report.agentExited})`);
  if (report.healthz.some((status) => status !== 200)) problems.push(`/healthz answered ${report.healthz.join(', ')}: the runtime and the PLEG were fine all along`);
  problems.push(...report.violations.map((v) => `${v.invariant}: ${v.detail}`));
  problems.push(...report.restarted.map((r) => `a running pod's container was replaced: ${r}`));
  problems.push(...report.unclear.map((line) => `names neither a pod nor a path: ${line}`));
  for (const f of report.faults) {
    if (f.convergeMs < 0) problems.push(`${f.fault}: did not converge once the disk was back: ${(f.notConverged ?? []).join('; ')}`);
    problems.push(...f.causes.filter((c) => c.count > MAX_REPEATS).map((c) => `${f.fault}: said ${c.count} times: ${c.cause}`));
    if (!f.causes.some((c) => SAID[f.fault].test(c.cause))) problems.push(`${f.fault}: no line names a pod, the kernel's error and the path`);
  }
  return problems;
}

/** The agent's warning and error lines (klog's `W`/`E`). */
const problemLines = (output: string) => output.split('\n').filter((line) => /^[WE]\d{4} /.test(line));
/** A line without its timestamp and ids: the same when the same thing happens to the same pod again. */
const causeOf = (line: string) => `${line[0]} ${line.slice(line.indexOf(' ', 6) + 1)}`.replace(/\b[0-9a-f]{12,}\b/g, '<id>');
/**
 * A line that names the pod it is about, the path that failed, or the node's resource (the
 * eviction manager's, under a full disk: `resourceName="ephemeral-storage"`, its node event).
 */
const isClear = (line: string) => / pod="[^"]+"/.test(line) || /\/[\w.~-]+\//.test(line) || / resourceName="[^"]+"/.test(line) || / node="[^"]+" type=/.test(line);

export async function runDiskEpisode(options: DiskOptions): Promise<DiskReport> {
  const random = seededRandom(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const diskParent = await mkdtemp(path.join(os.tmpdir(), 'statelet-disk-'));
  const disk = await mountSmallFilesystem(path.join(diskParent, 'root'), { sizeMiB: 32, inodes: 4096 });
  const node = await ChaosNode.start(
    {
      image: options.image,
      rootDir: disk.dir,
      // A logger's file is over the size at every pass: each pass during a fault tries its rotation.
      agentArgs: ['--container-log-max-size=4Ki', '--container-log-max-files=3', '--container-log-monitor-interval=2s'],
    },
    options.seed,
  ).catch(async (err) => {
    await disk.remove();
    await rm(diskParent, { recursive: true, force: true });
    throw err;
  });
  const report: DiskReport = { seed: options.seed, faults: [], observations: 0, violations: node.violations, restarted: [], agentExited: null, healthz: [], unclear: [], output: '' };
  let serial = 0;

  const add = () => node.write(`p${serial++}`, pick(KINDS), 0);
  const manifestOf = (pod: Pod) => pod.metadata.name.slice(0, -(NODE.length + 1));
  /** The running container of each pod, by pod UID: what must not change while a fault lasts. */
  const runningContainers = async () => {
    const byPod = new Map<string, string>();
    for (const c of await node.cri.listContainers({ state: 'CONTAINER_RUNNING' })) byPod.set(c.labels['io.kubernetes.pod.uid'] ?? '', c.id);
    return byPod;
  };
  const alive = () => {
    const child = node.agent!.child;
    if (child.exitCode === null && child.signalCode === null) return true;
    report.agentExited = String(child.exitCode ?? child.signalCode);
    return false;
  };
  /** The invariants, and whether each pod of `steady` still in the directory runs the container it ran. */
  const observe = async (steady: ReadonlyMap<string, string>) => {
    if (!alive()) return;
    await node.observe();
    const pods = await node.agent!.pods().catch(() => [] as Pod[]);
    const now = await runningContainers();
    for (const [uid, id] of steady) {
      const pod = pods.find((p) => p.metadata.uid === uid);
      // A pod deleted meanwhile is no longer held to it.
      if (!pod || !node.live.has(manifestOf(pod)) || now.get(uid) === id) continue;
      const was = `${pod.metadata.name}: container ${id.slice(0, 12)}`;
      if (!report.restarted.some((r) => r.startsWith(was))) report.restarted.push(`${was} replaced by ${now.get(uid)?.slice(0, 12) ?? 'none'}`);
    }
  };
  /** The listed pods whose live log has no line written at or after `since` (ms since the epoch). */
  const staleLogs = async (since: number): Promise<string[]> => {
    const stale: string[] = [];
    for (const pod of await node.agent!.pods().catch(() => [] as Pod[])) {
      const status = pod.status?.containerStatuses?.[0];
      if (!node.live.has(manifestOf(pod)) || !status?.state.running) continue;
      const file = path.join(node.rootDir, 'logs', `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`, 'app', `${status.restartCount}.log`);
      const last = (await readFile(file, 'utf8').catch(() => '')).trimEnd().split('\n').at(-1) ?? '';
      if (!(Date.parse(last.split(' ')[0] ?? '') >= since)) stale.push(`pod ${pod.metadata.name}: no log line since the filesystem came back in ${file}`);
    }
    return stale;
  };
  const fault = async (kind: DiskFault, apply: () => Promise<void>, undo: () => Promise<void>) => {
    const steady = await runningContainers();
    const linesBefore = problemLines(node.agent!.output()).length;
    node.faults.push(kind);
    await apply();
    const started = performance.now();
    // The pod changes, spread over the fault in an order drawn from the seed.
    const changes = Array.from({ length: options.changesPerFault * 2 }, (_, i) => (i % 2 === 0 ? 'add' : 'delete')).sort(() => random() - 0.5);
    let added = 0;
    let deleted = 0;
    for (const change of changes) {
      await new Promise((resolve) => setTimeout(resolve, options.faultMs / (changes.length + 1)));
      if (change === 'add') {
        await add();
        added++;
      } else {
        await node.remove(pick([...node.live.keys()]));
        deleted++;
      }
      await observe(steady);
    }
    while (performance.now() - started < options.faultMs && alive()) {
      await observe(steady);
      const { status } = await node.agent!.healthz().catch(() => ({ status: 0 }));
      if (!report.healthz.includes(status)) report.healthz.push(status);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await undo();
    const back = Date.now();
    const convergeMs = await node.converge(options.convergeTimeoutMs ?? 60_000, async () => {
      await observe(steady);
      return alive() ? staleLogs(back) : ['the agent exited'];
    });
    const lines = problemLines(node.agent!.output()).slice(linesBefore);
    report.unclear.push(...lines.filter((line) => !isClear(line)));
    const counts = new Map<string, number>();
    for (const line of lines) counts.set(causeOf(line), (counts.get(causeOf(line)) ?? 0) + 1);
    report.faults.push({
      fault: kind,
      added,
      deleted,
      convergeMs: convergeMs ?? -1,
      ...(convergeMs === null ? { notConverged: node.notConverged } : {}),
      lines: lines.length,
      causes: [...counts].map(([cause, count]) => ({ cause, count })).sort((a, b) => b.count - a.count),
    });
  };

  try {
    for (let i = 0; i < options.pods; i++) await add();
    await node.startAgent();
    if ((await node.converge(options.convergeTimeoutMs ?? 60_000)) === null) throw new Error(`the pods did not start before the first fault: ${node.notConverged.join('; ')}`);
    await fault('full', () => disk.fill(), () => disk.free());
    await fault('readOnly', () => disk.readOnly(), () => disk.writable());
    alive();
    return report;
  } finally {
    report.output = node.agent?.output() ?? '';
    report.observations = node.observations;
    await node.close();
    // The small filesystem comes off, with whatever the agent mounted under it.
    await disk.remove();
    await rm(diskParent, { recursive: true, force: true });
  }
}
