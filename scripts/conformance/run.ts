/**
 * `npm run conformance`: the upstream conformance suites (`e2e.test`) against statelet as the only
 * node of a local cluster, offline, by focus group (scripts/conformance/groups.ts): `node`, sig-node's
 * `[Conformance]` specs and the node's volume ones (what CI runs), and `storage`, the in-tree storage
 * suites (local PVs, hostPath, emptydir, PersistentVolumes-local, Subpath):
 *
 *   1. the suite's binaries (e2e.test, ginkgo, kube-scheduler, kube-controller-manager) built from
 *      the test control plane's pinned module graph, and the images its specs run, built here and
 *      imported into a private containerd (no registry access);
 *   2. the control plane with the scheduler and the controller-manager; statelet (the built
 *      binary) as the node, on that containerd, its node IP an address added to `lo` (the API
 *      server reaches the node's server there for logs, exec and port-forward);
 *   3. `ginkgo run` of e2e.test with the groups' focus and skip, `--kubelet-root-dir` the node's
 *      root directory, a JSON and a JUnit report;
 *   4. per group that ran, the summary and every spec that did not pass, with its reason, written
 *      into docs/conformance.md (the other groups' sections kept); the run fails when a spec of
 *      test/conformance/expected-pass.txt of a group that ran did not pass (the list may only grow:
 *      the newly passing ones are printed, to add).
 *
 *   npm run conformance [-- --groups=node,storage] [--procs=4] [--focus=REGEX] [--skip=REGEX] [--keep] [--agent=kubelet]
 *   npm run conformance -- --report=DIR [--agent=kubelet]
 *                         writes docs/conformance.md (or, with --agent=kubelet, the baseline) again
 *                         from a kept run's report (DIR/report.json), running nothing
 *
 * --groups: `node`, `storage`, or both (`node,storage`, the default); --focus/--skip replace the
 * groups' regexes (the specs then counted under the group that selects them).
 *
 * With --agent=kubelet the node is the upstream kubelet built from the same module graph instead
 * (test/support/upstreamKubelet.ts), outside CI: what it passes is written to
 * test/conformance/kubelet-baseline.txt by group (the groups it ran replaced), which the statelet
 * runs' summary sets beside theirs, so a spec statelet fails shows whether the kubelet passes it
 * here.
 *
 * With --keep the work directory stays: report/ holds the ginkgo reports and statelet.log, the
 * agent's log.
 *
 * Root only (containerd, cgroups, an address on lo). Timings are reported, never asserted.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { importConformanceImages } from '../../test/containerd/conformanceImages.ts';
import { startContainerd } from '../../test/containerd/harness.ts';
import { startControlPlane } from '../../test/support/controlPlane.ts';
import { addLoopbackAddress } from '../../test/support/loopbackAddress.ts';
import { startUpstreamKubelet } from '../../test/support/upstreamKubelet.ts';
import { unmountUnder } from '../../test/support/mounts.ts';
import { DEFAULT_GROUPS, type GroupName, groupOf, parseGroups, selection } from './groups.ts';
import {
  type Baseline,
  baselineText,
  behindBaseline,
  compare,
  conformanceDoc,
  groupSection,
  groupsOf,
  OTHER,
  parseBaseline,
  parseExpected,
  runFacts,
  type SpecResult,
  specResults,
  tally,
  withRun,
} from './report.ts';

const run = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const NODE = 'conformance-node';
/** An address of a private range, added to `lo` for the run: the kubelet refuses a loopback node IP, and the suite's specs use the node's address. */
const NODE_IP = '10.89.252.1';

const argv = process.argv.slice(2);
const arg = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const procs = Number(arg('procs') ?? 4);
const groups: GroupName[] = arg('groups') !== undefined ? parseGroups(arg('groups')!) : [...DEFAULT_GROUPS];
const focus = arg('focus') ?? selection(groups).focus;
const skip = arg('skip') ?? selection(groups).skip;
const agentKind = arg('agent') ?? 'statelet';
if (agentKind !== 'statelet' && agentKind !== 'kubelet') throw new Error(`--agent=${agentKind}: the node is statelet (the default) or kubelet`);
const BASELINE = path.join(repoRoot, 'test/conformance/kubelet-baseline.txt');

const DOC = path.join(repoRoot, 'docs/conformance.md');

async function readBaseline(): Promise<Baseline> {
  return parseBaseline(await readFile(BASELINE, 'utf8').catch(() => ''));
}

/**
 * The groups a run tells of: those it ran (--groups), or, with its own --focus or from a kept
 * report, those its specs fall in (`other` for the rest).
 */
function ranGroups(results: readonly SpecResult[]): string[] {
  return arg('focus') === undefined && arg('report') === undefined ? groups : groupsOf(results);
}

/** docs/conformance.md from a report (JSON text): the sections of the groups it ran, beside the kubelet's baseline; the other sections kept. */
async function writeSummary(reportJson: string, ran: readonly string[]): Promise<Baseline> {
  const baseline = await readBaseline();
  const results = specResults(reportJson);
  const facts = runFacts(reportJson);
  const sections = new Map(
    ran.map((g) => [g, groupSection(g, results.filter((r) => (groupOf(r.name) ?? OTHER) === g), facts, baseline.get(g))]),
  );
  const previous = await readFile(DOC, 'utf8').catch(() => '');
  await writeFile(DOC, conformanceDoc(previous, sections, baseline));
  return baseline;
}

/** The kubelet's run kept in test/conformance/kubelet-baseline.txt: the groups it ran replaced, the others kept. */
async function recordBaseline(kubelet: string, reportJson: string, reportDir: string): Promise<void> {
  const results = specResults(reportJson);
  const { date, minutes, processes } = runFacts(reportJson);
  const version = (await run(kubelet, ['--version'])).stdout.trim().replace(/^Kubernetes /, '');
  const about = (_group: string, mine: SpecResult[]) => {
    const counts = tally(mine);
    return `kubelet ${version}, ${date}: ${counts.passed} passed, ${counts.failed} failed${counts.other ? `, ${counts.other} skipped` : ''} of ${mine.length} specs (a run of ${minutes} min in all, ${processes} processes)`;
  };
  const ran = ranGroups(results);
  const baseline = withRun(await readBaseline(), ran, results, about);
  await writeFile(BASELINE, baselineText(baseline));
  for (const group of ran) console.error(`conformance: the upstream kubelet, group ${group}: ${baseline.get(group)?.about}`);
  console.error(`conformance: ${path.relative(repoRoot, BASELINE)} written; reports in ${reportDir}`);
  for (const r of results.filter((r) => r.outcome !== 'passed' && r.outcome !== 'skipped')) console.error(`  did not pass: ${r.name}: ${r.outcome}: ${r.reason ?? ''}`);
}

/** The kubelet's default root directory, where a few specs look whatever --kubelet-root-dir says. */
const DEFAULT_ROOT_DIR = '/var/lib/kubelet';

/**
 * The volumeMode spec "should not mount / map unused volumes in a pod" lists a pod's volume
 * directories under /var/lib/kubelet/pods/<uid> whatever --kubelet-root-dir says
 * (test/e2e/storage/testsuites/volumemode.go listPodVolumePluginDirectory), and passes without
 * looking when that directory is missing. When this machine has no /var/lib/kubelet it is made,
 * for the run, a symlink to the node's root directory (removed after); when it has one, the spec
 * looks there, which is said.
 */
async function linkDefaultRootDir(rootDir: string): Promise<(() => Promise<void>) | undefined> {
  try {
    await symlink(rootDir, DEFAULT_ROOT_DIR);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    console.error(`conformance: ${DEFAULT_ROOT_DIR} exists on this machine: the volumeMode "unused volumes" specs look for the pod's volumes there, not in ${rootDir}`);
    return undefined;
  }
  return async () => {
    // The link itself, never what it points to.
    if ((await lstat(DEFAULT_ROOT_DIR).catch(() => undefined))?.isSymbolicLink()) await unlink(DEFAULT_ROOT_DIR);
  };
}

async function main(): Promise<number> {
  const kept = arg('report');
  if (kept) {
    const reportJson = await readFile(path.join(kept, 'report.json'), 'utf8');
    if (agentKind === 'kubelet') {
      // @ts-expect-error: a plain ESM script without type declarations
      const { conformanceBinaries } = (await import('../controlplane/build.mjs')) as { conformanceBinaries(options: { only: string[] }): Promise<{ kubelet: string } | { skip: string }> };
      const binaries = await conformanceBinaries({ only: ['kubelet'] });
      if ('skip' in binaries) throw new Error(`the kubelet cannot be built here: ${binaries.skip}`);
      await recordBaseline(binaries.kubelet, reportJson, kept);
      return 0;
    }
    await writeSummary(reportJson, ranGroups(specResults(reportJson)));
    console.error(`conformance: docs/conformance.md written from ${kept}/report.json`);
    return 0;
  }
  if (process.getuid?.() !== 0) throw new Error('npm run conformance needs root (a private containerd, cgroups, an address on lo)');
  const started = performance.now();
  // @ts-expect-error: a plain ESM script without type declarations
  const { conformanceBinaries } = (await import('../controlplane/build.mjs')) as {
    conformanceBinaries(options: { only: string[] }): Promise<{ dir: string; e2eTest: string; ginkgo: string; kubelet: string } | { skip: string }>;
  };
  // The control plane builds its scheduler and controller-manager itself; the kubelet only when it is the node.
  const binaries = await conformanceBinaries({ only: ['e2e.test', 'ginkgo', ...(agentKind === 'kubelet' ? ['kubelet'] : [])] });
  if ('skip' in binaries) throw new Error(`the conformance binaries cannot be built here: ${binaries.skip}`);
  await run(process.execPath, [path.join(repoRoot, 'scripts/build.mjs')]);

  const work = await mkdtemp(path.join(os.tmpdir(), 'statelet-conformance-'));
  const containerd = await startContainerd();
  if (!containerd) throw new Error('a private containerd cannot start here (see the message above)');
  let agent: ChildProcess | undefined;
  let stopAgent: (() => Promise<void>) | undefined;
  let removeAddress: (() => Promise<void>) | undefined;
  let removeDefaultRootLink: (() => Promise<void>) | undefined;
  const cp = await startControlPlane({ nodeNames: [NODE], required: true, controllers: true });
  try {
    if (!cp) throw new Error('the control plane cannot be built here (no Go)');
    await importConformanceImages(containerd.endpoint);
    removeAddress = await addLoopbackAddress(NODE_IP);

    const rootDir = path.join(work, 'root');
    await mkdir(rootDir, { recursive: true });
    removeDefaultRootLink = await linkDefaultRootDir(rootDir);
    let agentLog = '';
    const keepLog = (chunk: string) => (agentLog += chunk);
    if (agentKind === 'kubelet') {
      const kubelet = await startUpstreamKubelet({
        binary: binaries.kubelet,
        runtimeEndpoint: containerd.endpoint,
        kubeconfig: cp.nodeKubeconfig(NODE),
        nodeName: NODE,
        nodeIp: NODE_IP,
        clientCaFile: cp.kubeletClientCaFile,
        rootDir,
        onOutput: keepLog,
      });
      agent = kubelet.child;
      stopAgent = kubelet.stop;
    } else {
      agent = spawn(
        process.execPath,
        [
          path.join(repoRoot, 'bin/statelet.js'),
          `--container-runtime-endpoint=${containerd.endpoint}`,
          `--kubeconfig=${cp.nodeKubeconfig(NODE)}`,
          `--hostname-override=${NODE}`,
          `--node-ip=${NODE_IP}`,
          `--address=${NODE_IP}`,
          `--client-ca-file=${cp.kubeletClientCaFile}`,
          `--root-dir=${rootDir}`,
          `--pod-logs-dir=${path.join(rootDir, 'logs')}`,
          '--cgroup-root=/statelet-conformance',
          '--read-only-port=0',
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      agent.stderr!.on('data', (chunk: Buffer) => keepLog(chunk.toString()));
    }
    // Polled rather than watched, so that an agent that stops first is told at once, with the end of its log.
    const readyBy = performance.now() + 120_000;
    for (;;) {
      if (agent.exitCode !== null || agent.signalCode !== null) {
        throw new Error(`the ${agentKind} exited (${agent.signalCode ?? agent.exitCode}) before its node was Ready; its log's end:\n${agentLog.slice(-4096)}`);
      }
      const node = await cp.core.readNode({ name: NODE }).catch(() => undefined);
      if (node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) break;
      if (performance.now() > readyBy) throw new Error(`node ${NODE} not Ready within 120 s; the ${agentKind}'s log's end:\n${agentLog.slice(-4096)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    console.error(`conformance: node ${NODE} Ready; running e2e.test (${procs} processes)`);

    const reportDir = path.join(work, 'report');
    const suiteStarted = performance.now();
    let agentDied: string | undefined;
    const code = await new Promise<number | null>((resolve) => {
      const ginkgo = spawn(
        binaries.ginkgo,
        [
          'run',
          `--procs=${procs}`,
          `--focus=${focus}`,
          `--skip=${skip}`,
          `--output-dir=${reportDir}`,
          '--json-report=report.json',
          '--junit-report=junit.xml',
          '--timeout=80m',
          binaries.e2eTest,
          '--',
          '--provider=skeleton',
          `--kubeconfig=${cp.adminKubeconfig}`,
          `--report-dir=${reportDir}`,
          // Where the storage specs' host-exec pods look for and prepare the node's paths (the
          // local driver, the subPath specs' pod directories).
          `--kubelet-root-dir=${rootDir}`,
        ],
        { stdio: ['ignore', 'inherit', 'inherit'] },
      );
      // A node agent that stops mid-run would turn every spec after it into a timeout: end the run, saying so.
      const died = (exitCode: number | null, signal: NodeJS.Signals | null) => {
        agentDied = `the ${agentKind} exited (${signal ?? exitCode}) during the suite; its log's end:\n${agentLog.slice(-4096)}`;
        console.error(`conformance: ${agentDied}`);
        // Its specs' cleanup would wait on the node: the suite's processes are stopped outright.
        void run('pkill', ['-KILL', '-P', String(ginkgo.pid)])
          .catch(() => undefined)
          .finally(() => ginkgo.kill('SIGKILL'));
      };
      agent!.once('exit', died);
      ginkgo.once('exit', (exitCode) => {
        agent!.off('exit', died);
        resolve(exitCode);
      });
    });
    if (agentDied) throw new Error(agentDied);
    const suiteMinutes = Math.round((performance.now() - suiteStarted) / 6000) / 10;
    await writeFile(path.join(reportDir, `${agentKind}.log`), agentLog);
    const reportJson = await readFile(path.join(reportDir, 'report.json'), 'utf8');
    const results = specResults(reportJson);
    const counts = tally(results);
    if (agentKind === 'kubelet') {
      console.error(`conformance: ${counts.passed} passed, ${counts.failed} failed, ${counts.other} skipped of ${results.length} specs in ${suiteMinutes} min`);
      await recordBaseline(binaries.kubelet, reportJson, reportDir);
      return 0;
    }
    const ran = ranGroups(results);
    const expected = parseExpected(await readFile(path.join(repoRoot, 'test/conformance/expected-pass.txt'), 'utf8').catch(() => ''));
    const comparison = compare(results, expected, ran);
    const baseline = await writeSummary(reportJson, ran);
    for (const name of behindBaseline(results, baseline, ran)) console.error(`  passed by the kubelet, not by statelet: ${name}`);
    console.error(`conformance: ${counts.passed} passed, ${counts.failed} failed, ${counts.other} skipped of ${results.length} specs in ${suiteMinutes} min (ginkgo exited ${code}); docs/conformance.md written; reports in ${reportDir}`);
    for (const name of comparison.newlyPassing) console.error(`  newly passing (add to test/conformance/expected-pass.txt): ${name}`);
    for (const r of comparison.regressions) console.error(`  REGRESSION: ${r.name}: ${r.outcome}${r.reason ? `: ${r.reason}` : ''}`);
    if (comparison.regressions.length > 0) console.error(`agent log (last 8 KB):\n${agentLog.slice(-8192)}`);
    console.error(`conformance: ${Math.round((performance.now() - started) / 6000) / 10} min in all`);
    return comparison.regressions.length > 0 ? 1 : 0;
  } finally {
    if (stopAgent) await stopAgent();
    else if (agent && agent.exitCode === null) {
      agent.kill('SIGTERM');
      await new Promise((resolve) => agent!.once('exit', resolve));
    }
    await removeAddress?.();
    await removeDefaultRootLink?.();
    await cp?.close();
    await containerd.stop();
    // Both agents leave their pods' volume mounts when they stop (the pods would keep running), and
    // the kubelet its root directory bind-mounted on itself: unmounted with the runtime gone.
    await unmountUnder(work, (line) => console.error(`conformance: ${line}`));
    if (!argv.includes('--keep')) await rm(work, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
