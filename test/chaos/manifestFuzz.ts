/**
 * The generated-manifest episode (issue 13, "10,000 generated manifests"): the agent runs over a
 * manifest directory holding a few sentinel pods, and batches of generated files are written
 * beside them (manifestCases.ts: valid pods, the same mutated field by field, edited text, broken
 * YAML and JSON, deep nesting, bytes that are not UTF-8), under all sorts of names (Unicode, no
 * extension), some through symlinks, some replaced while the agent may be reading them, with
 * symlinks to nothing, to a directory and in a loop, a subdirectory, a FIFO, a name that is not
 * UTF-8, two files of one pod name, two of one UID, a file repeating a sentinel's name, and now
 * and then a file of several MB.
 *
 * After each batch: the agent is alive and answers /pods and /healthz; the pod of every accepted
 * file is listed (by the UID `parseManifest` gives in this process, which must also meet the
 * case's expectation) and nothing else; every rejected file has a log line naming it with each
 * of its errors (so its field, where it has one); the sentinels run, with the same container
 * ids and no restart; the invariants (invariants.ts) hold. Then the batch is removed and the
 * node must converge: its pods gone, nothing left in the runtime.
 *
 * fast-check draws every batch from the episode's seed (batch `b` from `batchSeed(seed, b)`), so
 * the seed replays the episode.
 */
import { execFile } from 'node:child_process';
import { mkdir, open, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { podFullName, type Pod } from '../../src/api/types.ts';
import { seededRandom } from '../support/faults.ts';
import { MAX_MANIFEST_BYTES, MAX_MANIFEST_DEPTH, parseManifest } from '../../src/sources/file.ts';
import { ChaosNode, NODE } from './chaosNode.ts';
import type { Violation } from './invariants.ts';
import { type ManifestCase, huge, judge, manifestCase, validPod } from './manifestCases.ts';

export interface ManifestFuzzOptions {
  seed: number;
  /** Generated manifests to write, in batches. */
  manifests: number;
  /** Generated manifests per batch (100 by default). */
  batch?: number;
  /** Sentinel pods that must keep running untouched (3 by default). */
  sentinels?: number;
  /** A CRI endpoint instead of sim:// in this process, and its image for the sentinels. */
  endpoint?: string;
  image?: string;
  /** Longest wait for a batch to be taken in, or for the node to converge once it is removed (ms). */
  settleTimeoutMs?: number;
}

export interface ManifestFuzzReport {
  seed: number;
  /** Generated manifests written. */
  manifests: number;
  /** Directory entries written in all: the manifests, and the symlinks, directories, FIFOs, duplicates and huge files beside them. */
  entries: number;
  /** Generated manifests by kind (valid, wrong type, …). */
  byKind: Record<string, number>;
  /** Entries whose pod the agent listed, as expected. */
  accepted: number;
  /** Entries the agent rejected with a log line naming them (and each error's field), as expected. */
  rejected: number;
  batches: number;
  /** 1 if the agent process died (the episode stops there). */
  agentCrashes: number;
  /** Restarts and container replacements of the sentinel pods. */
  sentinelRestarts: number;
  /** Every expectation broken, with the entry and the case. */
  failures: string[];
  observations: number;
  violations: Violation[];
  durationMs: number;
}

/** The seed of batch `b`'s draw from the episode's seed. */
export const batchSeed = (seed: number, b: number): number => (seed + Math.imul(b, 0x9e3779b1)) | 0;

const REJECTED = 'Skipping bad static pod manifest';
const TOO_DEEP = new RegExp(`: nested deeper than ${MAX_MANIFEST_DEPTH} levels$`);
/** Error lines that mean a part of the agent itself broke, whatever a manifest said. */
const BROKEN = ['syncLoop failed', 'File source failed to start', 'Pod worker failed; it will be recreated', 'Housekeeping failed', 'Probe worker failed'];
const PREFIXES = ['', '', '', 'ünï-', '日本-', '😀-', 'with space-', 'z-'];
const EXTENSIONS = ['.yaml', '.yaml', '.json', '.yml', '', '.manifest'];

/** What the agent must do with one directory entry. */
interface Expected {
  file: string;
  /** The case, for failure messages. */
  what: string;
  /** Accepted: the pod it must list. */
  pod?: Pod;
  /** Rejected: every one must be logged for the file (a string exactly, a field by `field`). */
  errors?: ({ message: string } | { pattern: RegExp } | { field: string })[];
}

interface LoggedRejection {
  field?: string;
  err: string;
}

export async function runManifestFuzz(options: ManifestFuzzOptions): Promise<ManifestFuzzReport> {
  const started = performance.now();
  const batchSize = options.batch ?? 100;
  const settleTimeoutMs = options.settleTimeoutMs ?? 60_000;
  const image = options.image ?? 'statelet.local/busybox:1';
  const node = await ChaosNode.start({ image, ...(options.endpoint ? { endpoint: options.endpoint } : {}), agentArgs: ['--logging-format=json'] }, options.seed);
  const manifests = path.join(node.dir, 'manifests');
  const outside = path.join(node.dir, 'outside');
  await mkdir(outside);
  const report: ManifestFuzzReport = {
    seed: options.seed,
    manifests: 0,
    entries: 0,
    byKind: {},
    accepted: 0,
    rejected: 0,
    batches: 0,
    agentCrashes: 0,
    sentinelRestarts: 0,
    failures: [],
    observations: 0,
    violations: node.violations,
    durationMs: 0,
  };
  const fail = (text: string) => report.failures.push(text);

  // The agent's log, read as it grows: rejections by file, and lines that mean it broke.
  const rejections = new Map<string, LoggedRejection[]>();
  let logOffset = 0;
  const readLog = () => {
    const output = node.agent?.output() ?? '';
    const end = output.lastIndexOf('\n') + 1;
    for (const line of output.slice(logOffset, end).split('\n')) {
      if (!line.startsWith('{')) continue;
      const record = JSON.parse(line) as { level?: string; msg?: string; file?: string; field?: string; err?: string };
      if (record.msg === REJECTED && record.file !== undefined) {
        rejections.set(record.file, [...(rejections.get(record.file) ?? []), { ...(record.field !== undefined ? { field: record.field } : {}), err: record.err ?? '' }]);
      } else if (record.level === 'error' && BROKEN.includes(record.msg ?? '')) {
        fail(`the agent logged: ${line}`);
      }
    }
    logOffset = end;
  };

  const alive = () => node.agent !== null && node.agent.child.exitCode === null && node.agent.child.signalCode === null;
  const sentinelNames = Array.from({ length: options.sentinels ?? 3 }, (_, i) => `sentinel-${i}`);
  const sentinelIds = new Map<string, string>();
  let sentinels: Pod[] = [];

  /** Differences of the sentinels from when they first ran: restarts, replaced containers, not running. */
  const sentinelsDisturbed = (pods: Pod[]): string[] => {
    const problems: string[] = [];
    for (const name of sentinelNames) {
      const pod = pods.find((p) => p.metadata.name === `${name}-${NODE}`);
      if (!pod) {
        problems.push(`sentinel ${name} is not listed`);
        continue;
      }
      for (const status of pod.status?.containerStatuses ?? []) {
        const key = `${name}/${status.name}`;
        if (status.restartCount !== 0 || (sentinelIds.has(key) && status.containerID !== sentinelIds.get(key))) {
          problems.push(`sentinel ${key}: restart count ${status.restartCount}, container ${status.containerID} (was ${sentinelIds.get(key)})`);
        }
        if (!status.state.running) problems.push(`sentinel ${key} is not running: ${JSON.stringify(status.state)}`);
      }
    }
    return problems;
  };

  /** Polls until `reasons` gives none, or the timeout; the last reasons. */
  const settle = async (reasons: () => Promise<string[]>): Promise<string[]> => {
    const deadline = performance.now() + settleTimeoutMs;
    for (;;) {
      if (!alive()) return ['the agent is not running'];
      const left = await reasons().catch((err: unknown) => [`the agent did not answer: ${String(err)}`]);
      if (left.length === 0 || performance.now() > deadline) return left;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };

  try {
    for (const name of sentinelNames) await node.write(name, 'steady', 0);
    await node.startAgent();
    console.log(`manifest fuzz seed ${options.seed}: ${options.manifests} manifests in batches of ${batchSize} (fast-check seed of batch b: batchSeed(${options.seed}, b))`);
    const running = await settle(async () => {
      sentinels = (await node.agent!.pods()).filter((p) => sentinelNames.some((n) => p.metadata.name === `${n}-${NODE}`));
      return sentinels.length === sentinelNames.length && sentinels.every((p) => p.status?.containerStatuses?.every((s) => s.state.running)) ? [] : ['sentinels not running yet'];
    });
    if (running.length > 0) throw new Error(`seed ${options.seed}: the sentinels did not start: ${running.join('; ')}`);
    for (const pod of sentinels) {
      for (const status of pod.status?.containerStatuses ?? []) sentinelIds.set(`${pod.metadata.name.slice(0, -(NODE.length + 1))}/${status.name}`, status.containerID ?? '');
    }

    for (let b = 0; report.manifests < options.manifests && alive(); b++) {
      const count = Math.min(batchSize, options.manifests - report.manifests);
      const random = seededRandom(batchSeed(options.seed, b));
      const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
      const names = Array.from({ length: count }, (_, i) => `f${report.manifests + i}`);
      const draw = fc.tuple(
        fc.tuple(...names.map((name) => manifestCase(name))),
        // Pods written first where a file is then replaced, and the pairs of duplicates.
        fc.tuple(...names.map((name) => validPod(name))),
        fc.tuple(validPod(`dup${b}`), validPod(`dup${b}`), validPod(`uid${b}-a`), validPod(`uid${b}-b`), validPod(sentinelNames[0]!)),
        fc.tuple(huge(`huge${b}-a`, fc.constant(5 * MAX_MANIFEST_BYTES + 7)), huge(`huge${b}-b`, fc.constant(MAX_MANIFEST_BYTES - 100))),
      );
      const [cases, earlier, [dupA, dupB, uidA, uidB, sentinelTwin], [hugeOver, hugeUnder]] = fc.sample(draw, { seed: batchSeed(options.seed, b), numRuns: 1 })[0]!;
      const expected: Expected[] = [];
      /** What the batch put in the directory (a name that is not UTF-8 as its bytes), to remove afterwards. */
      const entries: (string | Buffer)[] = [];
      const replaced: { file: string; bytes: Buffer; how: 'chunks' | 'rename' }[] = [];

      /** Writes a manifest and predicts, in this process, what the agent makes of it. */
      const writeCase = async (file: string, c: ManifestCase, name: string, how: 'plain' | 'symlink' | 'atomic' | 'replaced', before?: object) => {
        entries.push(file);
        // The bytes as written: an edit may split a surrogate pair, which UTF-8 writes as U+FFFD.
        const bytes = Buffer.from(c.content);
        const parsed = parseManifest(bytes, file, NODE);
        for (const problem of judge(c, parsed, file, name)) fail(`${file} (${c.kind}: ${c.detail}): in-process: ${problem}`);
        // Where the YAML parser gives up on deep nesting depends on its caller's stack: a line here may be a field there.
        const wanted = (message: string) => (TOO_DEEP.test(message) ? { pattern: TOO_DEEP } : { message });
        expected.push({ file, what: `${c.kind}: ${c.detail}, written ${how}`, ...(parsed.pod ? { pod: parsed.pod } : { errors: parsed.errors.map((e) => wanted(e.message)) }) });
        if (how === 'symlink') {
          const target = path.join(outside, `${b}-${path.basename(file)}`);
          await writeFile(target, bytes);
          await symlink(target, file);
        } else if (how === 'atomic') {
          const temp = path.join(manifests, `.${path.basename(file)}.tmp`);
          await writeFile(temp, bytes);
          await rename(temp, file);
        } else if (how === 'replaced') {
          await writeFile(file, JSON.stringify(before));
          replaced.push({ file, bytes, how: random() < 0.5 ? 'chunks' : 'rename' });
        } else {
          await writeFile(file, bytes);
        }
      };

      for (const [i, c] of cases.entries()) {
        report.byKind[c.kind] = (report.byKind[c.kind] ?? 0) + 1;
        const file = path.join(manifests, `${pick(PREFIXES)}${names[i]}${pick(EXTENSIONS)}`);
        const how = pick(['plain', 'plain', 'plain', 'plain', 'plain', 'plain', 'symlink', 'atomic', 'replaced', 'replaced'] as const);
        await writeCase(file, c, names[i]!, how, earlier[i]);
      }
      report.manifests += count;

      // Entries that are not manifests, and pods that repeat another's name or UID.
      const special = async (file: string, make: () => Promise<unknown>, errors: Expected['errors'], what: string, entry: string | Buffer = file) => {
        entries.push(entry);
        await make();
        expected.push({ file, what, errors });
      };
      const at = (name: string) => path.join(manifests, name);
      await special(at(`dangling-${b}.yaml`), () => symlink(path.join(outside, 'nothing'), at(`dangling-${b}.yaml`)), [{ message: `${at(`dangling-${b}.yaml`)}: symlink to ${path.join(outside, 'nothing')}, which does not exist` }], 'a symlink to nothing');
      await special(at(`to-dir-${b}.yaml`), () => symlink(outside, at(`to-dir-${b}.yaml`)), [{ message: `${at(`to-dir-${b}.yaml`)}: is a directory; manifest directories are not read recursively` }], 'a symlink to a directory');
      await special(at(`loop-${b}-a.yaml`), () => symlink(at(`loop-${b}-b.yaml`), at(`loop-${b}-a.yaml`)), [{ pattern: /ELOOP/ }], 'a symlink loop');
      await special(at(`loop-${b}-b.yaml`), () => symlink(at(`loop-${b}-a.yaml`), at(`loop-${b}-b.yaml`)), [{ pattern: /ELOOP/ }], 'a symlink loop');
      await special(at(`subdir-${b}`), () => mkdir(at(`subdir-${b}`)), [{ message: `${at(`subdir-${b}`)}: is a directory; manifest directories are not read recursively` }], 'a directory');
      await special(at(`fifo-${b}.yaml`), () => promisify(execFile)('mkfifo', [at(`fifo-${b}.yaml`)]), [{ message: `${at(`fifo-${b}.yaml`)}: not a regular file` }], 'a FIFO');
      const notUtf8 = Buffer.concat([Buffer.from(at(`latin1-${b}-`)), Buffer.from([0xe9]), Buffer.from('.yaml')]);
      await special(notUtf8.toString(), () => writeFile(notUtf8, JSON.stringify(dupA)), [{ message: `${notUtf8.toString()}: file name is not UTF-8; rename the file` }], 'a file name that is not UTF-8', notUtf8);
      const asCase = (pod: object, kind: string): ManifestCase => ({ kind, detail: 'written beside another', content: JSON.stringify(pod), expect: { outcome: 'accepted' } });
      await writeCase(at(`dup${b}-1.yaml`), asCase(dupA, 'duplicate name, first'), `dup${b}`, 'plain');
      await writeCase(at(`dup${b}-2.yaml`), asCase(dupB, 'duplicate name, second'), `dup${b}`, 'plain');
      const uid = `fuzz-uid-${b}`;
      const withUid = (pod: Record<string, unknown>) => ({ ...pod, metadata: { ...(pod['metadata'] as object), uid } });
      await writeCase(at(`uid${b}-1.yaml`), asCase(withUid(uidA), 'duplicate UID, first'), `uid${b}-a`, 'plain');
      await writeCase(at(`uid${b}-2.yaml`), asCase(withUid(uidB), 'duplicate UID, second'), `uid${b}-b`, 'plain');
      // Sorted after the sentinel's own file: the running sentinel keeps its name.
      await writeCase(at(`${sentinelNames[0]}-twin-${b}.yaml`), asCase(sentinelTwin, 'a sentinel name again'), sentinelNames[0]!, 'plain');
      if (b % 10 === 0) {
        await writeCase(at(`huge-${b}-over.json`), hugeOver, `huge${b}-a`, 'plain');
        await writeCase(at(`huge-${b}-under.json`), hugeUnder, `huge${b}-b`, 'plain');
      }
      // Later files whose pod repeats an earlier file's name or UID are rejected (files in name order, sentinels too).
      const byName = new Map(sentinels.map((p) => [podFullName(p), 'sentinel']));
      const byUid = new Map(sentinels.map((p) => [p.metadata.uid, 'sentinel']));
      for (const e of [...expected].sort((x, y) => (x.file < y.file ? -1 : x.file > y.file ? 1 : 0))) {
        if (!e.pod) continue;
        if (byName.has(podFullName(e.pod))) e.errors = [{ field: 'metadata.name' }];
        else if (byUid.has(e.pod.metadata.uid)) e.errors = [{ field: 'metadata.uid' }];
        else {
          byName.set(podFullName(e.pod), e.file);
          byUid.set(e.pod.metadata.uid, e.file);
          continue;
        }
        delete e.pod;
      }

      // Replace files while the agent may be reading them: in chunks through the same file, or renamed over.
      for (const { file, bytes, how } of replaced) {
        if (how === 'rename') {
          const temp = path.join(manifests, `.${path.basename(file)}.new`);
          await writeFile(temp, bytes);
          await rename(temp, file);
          continue;
        }
        const handle = await open(file, 'w');
        const cuts = [0, Math.floor(bytes.length / 3), Math.floor((2 * bytes.length) / 3), bytes.length];
        for (let i = 0; i < 3; i++) {
          await handle.write(bytes.subarray(cuts[i]!, cuts[i + 1]!));
          await new Promise((resolve) => setTimeout(resolve, random() * 30));
        }
        await handle.close();
      }
      report.entries += entries.length;

      // The batch taken in: accepted pods listed and nothing else, every rejection logged.
      const accepted = new Map(expected.filter((e) => e.pod).map((e) => [e.pod!.metadata.uid, e]));
      const missing = () => {
        readLog();
        const reasons: string[] = [];
        for (const e of expected) {
          if (!e.errors) continue;
          const logged = rejections.get(e.file) ?? [];
          for (const want of e.errors) {
            const found = 'message' in want ? logged.some((l) => l.err === want.message) : 'pattern' in want ? logged.some((l) => want.pattern.test(l.err)) : logged.some((l) => l.field === want.field);
            if (!found) reasons.push(`${e.file} (${e.what}): no log line ${JSON.stringify('message' in want ? want.message : 'pattern' in want ? String(want.pattern) : `field ${want.field}`)}; logged: ${JSON.stringify(logged)}`);
          }
        }
        return reasons;
      };
      const left = await settle(async () => {
        const pods = await node.agent!.pods();
        const listed = new Set(pods.map((p) => p.metadata.uid));
        const reasons = [...accepted.values()].filter((e) => !listed.has(e.pod!.metadata.uid)).map((e) => `${e.file} (${e.what}): pod ${e.pod!.metadata.name} not listed`);
        for (const pod of pods) {
          if (!accepted.has(pod.metadata.uid) && !sentinels.some((s) => s.metadata.uid === pod.metadata.uid)) reasons.push(`pod ${pod.metadata.name} (${pod.metadata.uid}) listed, from no accepted file`);
        }
        return [...reasons, ...missing()];
      });
      for (const reason of left) fail(`batch ${b}: ${reason}`);
      if (!alive()) {
        report.agentCrashes = 1;
        fail(`batch ${b}: the agent exited (${node.agent?.child.exitCode ?? node.agent?.child.signalCode}); its last lines: ${node.agentWarnings().join('\n')}`);
        break;
      }
      const health = await node.agent!.healthz().catch((err: unknown) => ({ status: 0, body: String(err) }));
      if (health.status !== 200) fail(`batch ${b}: /healthz answered ${health.status}: ${health.body}`);
      const pods = await node.agent!.pods();
      for (const problem of sentinelsDisturbed(pods)) fail(`batch ${b}: ${problem}`);
      await node.observe();
      report.accepted += [...accepted.values()].filter((e) => pods.some((p) => p.metadata.uid === e.pod!.metadata.uid)).length;
      report.rejected += expected.filter((e) => e.errors && (rejections.get(e.file) ?? []).length > 0).length;

      // The batch removed: its pods go, nothing is left in the runtime, the sentinels run on.
      for (const file of entries) await rm(file, { recursive: true, force: true });
      const converged = await node.converge(settleTimeoutMs, async () => {
        const listed = (await node.agent!.pods()).filter((p) => !sentinels.some((s) => s.metadata.uid === p.metadata.uid));
        return listed.map((p) => `pod ${p.metadata.name} still listed after its file went`);
      });
      if (converged === null) fail(`batch ${b}: did not converge after its files went: ${node.notConverged.join('; ')}`);
      for (const problem of sentinelsDisturbed(await node.agent!.pods())) fail(`batch ${b}, removed: ${problem}`);
      rejections.clear();
      report.batches++;
    }
    if (!alive() && report.agentCrashes === 0) {
      report.agentCrashes = 1;
      fail(`the agent exited; its last lines: ${node.agentWarnings().join('\n')}`);
    }
    const last = alive() ? await node.agent!.pods().catch(() => []) : [];
    report.sentinelRestarts = last.flatMap((p) => (sentinelNames.some((n) => p.metadata.name === `${n}-${NODE}`) ? (p.status?.containerStatuses ?? []) : [])).reduce((n, s) => n + s.restartCount, 0);
    report.observations = node.observations;
    return report;
  } finally {
    report.durationMs = performance.now() - started;
    await node.close();
  }
}
