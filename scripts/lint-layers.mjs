#!/usr/bin/env node
// Keeps the layers honest over all of src/ (`npm run lint`; `--src DIR` lints another tree).
//
// Every module belongs to a unit: its folder under src/ (`pod`, `kuberuntime`, …) or, for a file
// at the top of src/, its name (`clock`, `events`, `main`). Units are ranked in LAYERS, lowest
// first. A file may import its own unit and units of a lower layer, never one of its own layer or
// above: imports only point down. The script prints the import graph's upward edges and its
// cycles (between files, type-only imports included); both must be 0.
//
// A node-level loop (src/nodeloop/nodeLoop.ts) is a folder holding a `loop.ts`: such folders are
// found, not listed, and ranked together in the layer marked NODE_LOOPS, so a new loop needs no
// line here. In a loop's folder every file but its machine (the file that calls `setup(`),
// `effects.ts` and `loop.ts` is a decision.
//
// Parts of the node never read another actor's state: they are told what they need as catalogue
// events, or read a part's named capability. So outside the visualizer (whose job is to show every
// actor) no file looks an actor up in the system (`system.get(`, `system.getAll(`) or reads a
// snapshot other than its own actor's (`self.getSnapshot()`).
//
// Two more rules keep the statecharts and the decisions free of I/O:
//   - a machine file (one that calls xstate's `setup(`) imports no gRPC, filesystem, network or
//     Kubernetes client module and no concrete runtime (runtime/cri, runtime/sim);
//   - a decision module (DECISIONS, and a loop's decisions) imports none of those, and neither
//     xstate nor a clock.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** Stands in LAYERS for the node-level loops' folders, whichever there are. */
export const NODE_LOOPS = '<node loops>';

export const LAYERS = [
  ['clock', 'log', 'packageFiles', 'immutable', 'notProvided', 'duration', 'grpcServiceDefinition'],
  ['runtime', 'pluginregistration'],
  ['api'],
  ['events'],
  ['client'],
  ['certificate', 'eventrecorder'],
  ['volumes', 'userns'],
  ['credentialprovider'],
  ['kuberuntime'],
  ['status', 'sources', 'admission', 'cli', 'stats'],
  ['pod', 'pleg', 'node', 'cm', 'allocation'],
  ['prober', 'podworkers'],
  ['housekeeping', 'nodeloop'],
  [NODE_LOOPS],
  ['kubelet'],
  ['server'],
  ['visualizer', 'simcsi'],
  ['agent'],
  ['main'],
];

/** Pure decisions: data in, data out. */
export const DECISIONS = [
  'api/json.ts',
  'userns/rules.ts',
  'immutable.ts',
  'api/downward.ts',
  'client/rateLimit.ts',
  'api/types.ts',
  'api/qos.ts',
  'api/quantity.ts',
  'api/runtimeView.ts',
  'api/validate.ts',
  'credentialprovider/keyring.ts',
  'kuberuntime/backoff.ts',
  'kuberuntime/pullPolicy.ts',
  'kuberuntime/computePodActions.ts',
  'kuberuntime/containerGC.ts',
  'kuberuntime/dns.ts',
  'kuberuntime/hosts.ts',
  'kuberuntime/logs/format.ts',
  'kuberuntime/logs/target.ts',
  'kuberuntime/resources.ts',
  'kuberuntime/securityContext.ts',
  'server/logQuery.ts',
  'server/servingMode.ts',
  'server/servingTlsSettings.ts',
  'stats/summary.ts',
  'admission/admit.ts',
  'admission/nodeAffinity.ts',
  'admission/resources.ts',
  'admission/active.ts',
  'node/nodeObject.ts',
  'node/health.ts',
  'pleg/relist.ts',
  'eventrecorder/correlator.ts',
  'pod/gracePeriod.ts',
  'pod/mirrorPods.ts',
  'pod/network.ts',
  'pod/progress.ts',
  'pod/runtimeSeen.ts',
  'prober/decide.ts',
  'status/apiStatus.ts',
  'status/terminate.ts',
  'volumes/plan.ts',
  'volumes/ownership.ts',
  'volumes/csi/nodeInfo.ts',
  'volumes/csi/drivers.ts',
  'volumes/csi/accessMode.ts',
  'volumes/csi/errors.ts',
  'volumes/csi/paths.ts',
  'volumes/csi/volData.ts',
  'volumes/reconstruction.ts',
  'simcsi/rules.ts',
  'cm/podResources.ts',
  'status/generate.ts',
  'status/resize.ts',
  'kuberuntime/podResize.ts',
  'allocation/allocation.ts',
  'credentialprovider/urlGlob.ts',
  'credentialprovider/pluginConfig.ts',
  'credentialprovider/pluginProtocol.ts',
  'certificate/deadline.ts',
  'certificate/issuance.ts',
];

const io = [
  /^@grpc\//,
  /^@kubernetes\/client-node/,
  /^(node:)?(fs|fs\/promises|net|http|https|http2|child_process|dgram|tls)$/,
  /\/runtime\/cri\//,
  /\/runtime\/sim\//,
];
const notInDecisions = [/^xstate/, /\/clock\.ts$/];

/** Units whose job is to read every actor: the visualizer. */
const SNAPSHOT_READERS = ['visualizer'];
const snapshotReads = [/\bsystem\.get(?:All)?\(/g, /\b(?!self\b)[\w$.\]?)!]+\.getSnapshot\(\)/g];

const importPattern = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function* files(dir) {
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* files(full);
    else if (full.endsWith('.ts')) yield full;
  }
}

/** The unit of a path relative to src/. */
const unitOf = (rel) => (rel.includes('/') ? rel.slice(0, rel.indexOf('/')) : rel.replace(/\.ts$/, ''));
/** The folders of src/ that hold a node-level loop (a `loop.ts`). */
export function nodeLoopUnits(srcDir) {
  return readdirSync(srcDir)
    .filter((name) => statSync(path.join(srcDir, name)).isDirectory() && existsSync(path.join(srcDir, name, 'loop.ts')))
    .sort();
}

const loopShapeFiles = new Set(['effects.ts', 'loop.ts']);

export function lint(srcDir) {
  const problems = { unranked: [], upward: [], io: [], cycles: [], snapshots: [] };
  const loops = nodeLoopUnits(srcDir);
  const rankOf = new Map(LAYERS.flatMap((units, rank) => (units[0] === NODE_LOOPS ? loops : units).map((unit) => [unit, rank])));
  for (const unit of loops) if (LAYERS.some((units) => units.includes(unit))) problems.unranked.push(`${unit}/loop.ts: "${unit}" holds a node loop and is listed in a layer too`);
  const graph = new Map();
  for (const file of files(srcDir)) {
    const rel = path.relative(srcDir, file);
    const text = readFileSync(file, 'utf8');
    const unit = unitOf(rel);
    if (!rankOf.has(unit)) problems.unranked.push(`${rel}: unit "${unit}" is in no layer`);
    if (!SNAPSHOT_READERS.includes(unit)) {
      for (const pattern of snapshotReads) for (const match of text.matchAll(pattern)) problems.snapshots.push(`${rel} reads an actor's state: ${match[0]}`);
    }
    const isMachine = /\bsetup\(\s*\{/.test(text);
    const isDecision = DECISIONS.includes(rel) || (loops.includes(unit) && !isMachine && !loopShapeFiles.has(path.basename(rel)));
    const edges = [];
    for (const match of text.matchAll(importPattern)) {
      const spec = match[1] ?? match[2];
      if ((isMachine || isDecision) && io.some((rule) => rule.test(spec))) problems.io.push(`${rel} imports ${spec}`);
      if (isDecision && notInDecisions.some((rule) => rule.test(spec))) problems.io.push(`${rel} (a decision) imports ${spec}`);
      if (!spec.startsWith('.')) continue;
      const target = path.relative(srcDir, path.resolve(path.dirname(file), spec));
      edges.push(target);
      const targetUnit = unitOf(target);
      if (targetUnit === unit) continue;
      const from = rankOf.get(unit);
      const to = rankOf.get(targetUnit);
      if (from !== undefined && to !== undefined && to >= from) problems.upward.push(`${rel} → ${target}`);
    }
    graph.set(rel, edges);
  }
  problems.cycles = cyclesOf(graph);
  return problems;
}

/** Strongly connected components of more than one file (or a file importing itself), by Tarjan. */
function cyclesOf(graph) {
  let index = 0;
  const stack = [];
  const onStack = new Set();
  const indices = new Map();
  const low = new Map();
  const cycles = [];
  const visit = (node) => {
    indices.set(node, index);
    low.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!indices.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node), low.get(next)));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node), indices.get(next)));
    }
    if (low.get(node) !== indices.get(node)) return;
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) cycles.push(component.sort().join(' ↔ '));
  };
  for (const node of graph.keys()) if (!indices.has(node)) visit(node);
  return cycles;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const srcArg = process.argv.indexOf('--src');
  const srcDir = path.resolve(srcArg > 0 ? process.argv[srcArg + 1] : path.join(import.meta.dirname, '..', 'src'));
  const problems = lint(srcDir);
  const report = (title, list) => {
    console.log(`${title}: ${list.length}`);
    for (const line of list) console.log(`  ${line}`);
  };
  report('upward imports', problems.upward);
  report('cycles', problems.cycles);
  report('I/O in machines or decisions', problems.io);
  report("reads of another actor's state", problems.snapshots);
  if (problems.unranked.length) report('units in no layer', problems.unranked);
  const total = problems.upward.length + problems.cycles.length + problems.io.length + problems.snapshots.length + problems.unranked.length;
  const loops = nodeLoopUnits(srcDir).join(' ');
  console.log(total ? 'lint-layers: FAILED' : `lint-layers: ${LAYERS.map((l) => (l[0] === NODE_LOOPS ? `{${loops}}` : l.join(' '))).join(' < ')}`);
  process.exit(total ? 1 : 0);
}
