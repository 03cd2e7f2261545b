/**
 * The churn episode with agent kills (issue 13): static pods added, updated and deleted at random
 * in a manifest directory — steady ones, ones with an init container, crash-looping ones, ones
 * whose liveness probe fails, ones that complete — while the agent is killed with SIGKILL at
 * random points (at a random moment, or in the middle of a runtime call: a sandbox run or
 * removal, a container creation or stop) and started again over the same root directory. The
 * runtime is sim:// served from this process (so that it outlives the agent, as containerd does),
 * or any CRI endpoint given.
 *
 * Every observation is checked against the invariants (invariants.ts); at the end the episode
 * waits for the node to converge and checks it. Everything random comes from the seed, which the
 * report carries so that a failure can be replayed.
 */
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '../../src/api/types.ts';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { seededRandom } from '../../src/runtime/faults.ts';
import type { SimEngine } from '../../src/runtime/sim/engine.ts';
import { startSimRuntime, type SimRuntime } from '../../src/runtime/sim/server.ts';
import { type AgentProcess, runStatelet } from '../support/agentProcess.ts';
import { PodHistory, type Violation, notConverged, runtimeViolations } from './invariants.ts';

export type KillPoint = 'anytime' | 'runPodSandbox' | 'removePodSandbox' | 'createContainer' | 'stopContainer';
const KILL_POINTS: KillPoint[] = ['anytime', 'runPodSandbox', 'removePodSandbox', 'createContainer', 'stopContainer'];

type Kind = 'steady' | 'init' | 'crashloop' | 'unhealthy' | 'completes';
const KINDS: Kind[] = ['steady', 'steady', 'steady', 'init', 'crashloop', 'unhealthy', 'completes'];
/** Kinds whose containers are all running once the node has converged. */
const RUNS: ReadonlySet<string> = new Set<Kind>(['steady', 'init']);

export interface ChurnOptions {
  seed: number;
  /** Pods in the directory at start, and about how many stay there. */
  pods: number;
  /** Rounds of changes; each changes a few pods. */
  rounds: number;
  /** Agent kills, spread over the rounds. */
  kills: number;
  /** Restarts of the runtime's daemon (1 s down), spread over the rounds. */
  runtimeRestarts?: number;
  /** How to restart the runtime given by `endpoint` (sim:// in this process restarts itself). */
  restartRuntime?: (downSeconds: number) => Promise<void>;
  image: string;
  /** A CRI endpoint to use instead of sim:// in this process. */
  endpoint?: string;
  /** Longest wait for the node to converge after the last change (ms). */
  convergeTimeoutMs?: number;
}

export type Fault = KillPoint | 'runtimeRestart';

export interface ChurnReport {
  seed: number;
  changes: number;
  /** Each fault injected, and how long the node took to converge after it (-1: it did not). */
  faults: { fault: Fault; convergeMs: number; notConverged?: string[] }[];
  observations: number;
  violations: Violation[];
  /** From the last change to converged (ms), or null if it never did. */
  finalConvergeMs: number | null;
  notConverged: string[];
}

const NODE = 'chaos-node';
const LONG_RUNNING = "trap 'exit 0' TERM; while true; do sleep 1; done";

function manifest(name: string, kind: Kind, generation: number, image: string): string {
  const container = (cname: string, command: string, extra = '') => `    - { name: ${cname}, image: ${image}, command: ["sh", "-c", "${command}"], env: [{ name: GENERATION, value: "${generation}" }]${extra} }`;
  const lines = ['apiVersion: v1', 'kind: Pod', `metadata: { name: ${name}, labels: { chaos/kind: ${kind} } }`, 'spec:', '  terminationGracePeriodSeconds: 2'];
  switch (kind) {
    case 'steady':
      lines.push('  containers:', container('app', LONG_RUNNING));
      break;
    case 'init':
      lines.push('  initContainers:', container('prepare', 'sleep 0.2'), '  containers:', container('app', LONG_RUNNING), container('side', LONG_RUNNING));
      break;
    case 'crashloop':
      lines.push('  containers:', container('app', 'sleep 0.3; exit 1'));
      break;
    case 'unhealthy':
      lines.push('  containers:', container('app', LONG_RUNNING, ', livenessProbe: { exec: { command: [test, -e, /nope] }, periodSeconds: 1, failureThreshold: 2 }'));
      break;
    case 'completes':
      lines.push('  restartPolicy: Never', '  containers:', container('app', 'sleep 0.5; exit 0'));
      break;
  }
  return `${lines.join('\n')}\n`;
}

/** Reads statelet_pod_actors from the agent's /metrics: the sum over states. */
async function podActors(agent: AgentProcess): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${agent.readOnlyPort}/metrics`)).text();
  let total = 0;
  for (const match of text.matchAll(/^statelet_pod_actors\{state="[^"]*"\} (\d+)$/gm)) total += Number(match[1]);
  return total;
}

export async function runChurn(options: ChurnOptions): Promise<ChurnReport> {
  const random = seededRandom(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-chaos-'));
  const manifests = path.join(dir, 'manifests');
  const rootDir = path.join(dir, 'root');
  await writeFile(path.join(dir, 'seed'), String(options.seed));
  await mkdir(manifests);

  let sim: SimRuntime | null = null;
  const endpoint = options.endpoint ?? (sim = await startSimRuntime({ socketPath: path.join(dir, 'sim.sock'), pullDelayMs: 20 })).endpoint;
  const cri = new CriClient(endpoint);
  const history = new PodHistory();
  const violations: Violation[] = [];
  const report: ChurnReport = { seed: options.seed, changes: 0, faults: [], observations: 0, violations, finalConvergeMs: null, notConverged: [] };
  const args = [`--container-runtime-endpoint=${endpoint}`, `--pod-manifest-path=${manifests}`, '--file-check-frequency=1s', `--hostname-override=${NODE}`, '--sync-frequency=5s'];
  const live = new Map<string, { kind: Kind; generation: number }>();
  let agent = null as AgentProcess | null;
  let serial = 0;

  const write = async (name: string, kind: Kind, generation: number) => {
    live.set(name, { kind, generation });
    await writeFile(path.join(manifests, `${name}.yaml`), manifest(name, kind, generation, options.image));
    report.changes++;
  };
  const observe = async () => {
    if (!agent) return;
    const pods = await agent.pods().catch(() => null);
    if (!pods) return;
    report.observations++;
    const runtime = { containers: await cri.listContainers(), sandboxes: await cri.listPodSandbox() };
    for (const violation of history.observe(pods)) {
      // What the runtime held for that pod just then, to tell the agent's mistake from the runtime's.
      const uid = /\(([0-9a-f-]+)\)/.exec(violation.detail)?.[1];
      const held = runtime.containers.filter((c) => c.labels['io.kubernetes.pod.uid'] === uid).map((c) => `${c.metadata.name}#${c.metadata.attempt} ${c.state}`);
      violations.push({ ...violation, detail: `${violation.detail}; runtime: [${held.join(', ')}]; faults so far: ${report.faults.map((f) => f.fault).join(', ')}` });
    }
    violations.push(...runtimeViolations(runtime));
  };
  const shouldRun = (pod: Pod) => RUNS.has(pod.metadata.labels?.['chaos/kind'] ?? '');
  /** Polls until converged; the time it took, or null (and the reasons) after the timeout. */
  const converge = async (timeoutMs: number): Promise<number | null> => {
    const started = performance.now();
    for (;;) {
      await observe();
      const listed = (await agent!.pods().catch(() => [] as Pod[])).filter((p) => live.has(p.metadata.name.slice(0, -(NODE.length + 1))));
      const expected = [...live.keys()].length;
      const runtime = { containers: await cri.listContainers(), sandboxes: await cri.listPodSandbox() };
      const reasons = notConverged(listed, shouldRun, runtime, await podActors(agent!).catch(() => -1));
      if (listed.length !== expected) reasons.push(`${listed.length} of ${expected} pods listed`);
      report.notConverged = reasons;
      if (reasons.length === 0) return performance.now() - started;
      if (performance.now() - started > timeoutMs) return null;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  const startAgent = async () => (agent = await runStatelet(args, { rootDir }));
  /** Kills the agent with SIGKILL, now or inside the next call of `point` the runtime serves. */
  const kill = async (point: KillPoint) => {
    const victim = agent!;
    if (point === 'anytime' || !sim) {
      victim.child.kill('SIGKILL');
    } else {
      const engine = sim.engine as unknown as Record<string, (...a: unknown[]) => unknown>;
      const original = engine[point]!;
      const armed = new Promise<void>((resolve) => {
        engine[point] = function (this: SimEngine, ...a: unknown[]) {
          engine[point] = original;
          victim.child.kill('SIGKILL');
          resolve();
          return original.apply(this, a);
        };
      });
      // The call may not come (nothing to stop just now): then the kill happens anyway.
      const timeout = new Promise<void>((resolve) => setTimeout(resolve, 3_000));
      await Promise.race([armed, timeout]);
      engine[point] = original;
      victim.child.kill('SIGKILL');
    }
    await victim.waitForExit();
    await startAgent();
  };

  try {
    for (let i = 0; i < options.pods; i++) await write(`p${serial++}`, pick(KINDS), 0);
    await startAgent();
    // Which round gets which fault: distinct rounds, drawn from the seed.
    const faultAt = new Map<number, 'kill' | 'runtimeRestart'>();
    const place = (fault: 'kill' | 'runtimeRestart', count: number) => {
      for (let placed = 0; placed < count && faultAt.size < options.rounds; ) {
        const round = Math.floor(random() * options.rounds);
        if (faultAt.has(round)) continue;
        faultAt.set(round, fault);
        placed++;
      }
    };
    place('kill', options.kills);
    place('runtimeRestart', options.runtimeRestarts ?? 0);
    const restartRuntime = options.restartRuntime ?? (sim ? (down: number) => sim!.restart(down * 1000) : null);
    for (let round = 0; round < options.rounds; round++) {
      for (let change = 0; change < 1 + Math.floor(random() * 3); change++) {
        const names = [...live.keys()];
        const op = live.size < options.pods / 2 ? 'add' : live.size > options.pods * 1.5 ? 'delete' : pick(['add', 'update', 'update', 'delete'] as const);
        if (op === 'add' || names.length === 0) await write(`p${serial++}`, pick(KINDS), 0);
        else if (op === 'update') {
          const name = pick(names);
          const { kind, generation } = live.get(name)!;
          await write(name, kind, generation + 1);
        } else {
          const name = pick(names);
          live.delete(name);
          await unlink(path.join(manifests, `${name}.yaml`));
          report.changes++;
        }
      }
      await observe();
      const fault = faultAt.get(round);
      if (fault) {
        let injected: Fault;
        if (fault === 'kill') {
          // Inside a runtime call only where the runtime is this process's sim://.
          injected = sim ? pick(KILL_POINTS) : 'anytime';
          await kill(injected);
        } else {
          if (!restartRuntime) throw new Error('runtimeRestarts asked for, but no way to restart this runtime');
          injected = 'runtimeRestart';
          await restartRuntime(1);
        }
        const convergeMs = await converge(options.convergeTimeoutMs ?? 60_000);
        report.faults.push(convergeMs === null ? { fault: injected, convergeMs: -1, notConverged: report.notConverged } : { fault: injected, convergeMs });
      } else {
        await new Promise((resolve) => setTimeout(resolve, 100 + random() * 400));
      }
    }
    const finalMs = await converge(options.convergeTimeoutMs ?? 60_000);
    report.finalConvergeMs = finalMs;
    return report;
  } finally {
    await agent?.stop().catch(() => {});
    // The pods stay with the runtime when the agent stops: remove what is left.
    for (const sandbox of await cri.listPodSandbox().catch(() => [])) await cri.removePodSandbox(sandbox.id).catch(() => {});
    cri.close();
    await sim?.close();
    await rm(dir, { recursive: true, force: true });
  }
}
