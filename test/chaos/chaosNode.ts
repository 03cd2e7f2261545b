/**
 * The node every episode of the reliability suite runs: the statelet command over a manifest
 * directory of static pods, and a runtime that outlives it — sim:// served from this process (so
 * that faults can be injected where it serves the calls, and the agent can be killed inside one),
 * or any CRI endpoint given (containerd). It keeps what the episodes share: the pods the directory
 * holds, the checks of every observation against the invariants (invariants.ts), and the wait for
 * the node to converge.
 */
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '../../src/api/types.ts';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { type CriProxy, startCriProxy } from '../support/criProxy.ts';
import type { Around } from '../../src/runtime/decorate.ts';
import { startSimRuntime, type SimRuntime } from '../../src/runtime/sim/server.ts';
import { type AgentProcess, type StateletCommand, runStatelet } from '../support/agentProcess.ts';
import { PodHistory, type Violation, notConverged, runtimeViolations } from './invariants.ts';

/** `logger` logs about 2 KiB a second; `writer` writes to its emptyDir volume every second (the disk episode). */
export type Kind = 'steady' | 'init' | 'crashloop' | 'unhealthy' | 'completes' | 'logger' | 'writer';
/** Kinds whose containers are all running once the node has converged. */
const RUNS: ReadonlySet<string> = new Set<Kind>(['steady', 'init', 'logger', 'writer']);

export const NODE = 'chaos-node';
export const LONG_RUNNING = "trap 'exit 0' TERM; while true; do sleep 1; done";
const LOGGING = "trap 'exit 0' TERM; while true; do echo 'the quick brown fox jumps over the lazy dog, again and again, to fill a log file at a steady pace'; sleep 0.05; done";
const WRITING = "trap 'exit 0' TERM; while true; do echo beat >> /data/beats; echo 'wrote a beat to /data/beats'; sleep 1; done";

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
    case 'logger':
      lines.push('  containers:', container('app', LOGGING));
      break;
    case 'writer':
      lines.push('  containers:', container('app', WRITING, ', volumeMounts: [{ name: data, mountPath: /data }]'), '  volumes: [{ name: data, emptyDir: {} }]');
      break;
  }
  return `${lines.join('\n')}\n`;
}

export interface ChaosNodeOptions {
  image: string;
  /** A CRI endpoint to use instead of sim:// in this process. */
  endpoint?: string;
  /**
   * What every runtime call passes through (a FaultInjector's `intercept`): where sim:// in this
   * process serves it, or a CRI proxy in front of `endpoint`.
   */
  intercept?: Around;
  /** More flags for the agent. */
  agentArgs?: string[];
  /** The agent's --root-dir (and --pod-logs-dir under it), when the episode brings its own filesystem; in the node's directory otherwise. */
  rootDir?: string;
  /** How to run the agent (the sources through tsx by default). */
  command?: StateletCommand;
}

export class ChaosNode {
  readonly history = new PodHistory();
  readonly violations: Violation[] = [];
  observations = 0;
  /** The pods the directory holds, by manifest name. */
  readonly live = new Map<string, { kind: Kind; generation: number }>();
  agent: AgentProcess | null = null;
  /** Why the node was not converged at the last check. */
  notConverged: string[] = [];
  /** Faults so far, named in violations to tell what came before them. */
  readonly faults: string[] = [];
  /**
   * UIDs of pods gone from the directory that may keep their runtime objects and their actor
   * without keeping the node from converging (a pod whose termination waits on a hanging call).
   */
  readonly lagging = new Set<string>();

  private constructor(
    private readonly options: ChaosNodeOptions,
    readonly dir: string,
    readonly sim: SimRuntime | null,
    readonly cri: CriClient,
    private readonly args: string[],
    private readonly proxy: CriProxy | null,
  ) {}

  static async start(options: ChaosNodeOptions, seed: number): Promise<ChaosNode> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-chaos-'));
    await writeFile(path.join(dir, 'seed'), String(seed));
    await mkdir(path.join(dir, 'manifests'));
    const sim = options.endpoint ? null : await startSimRuntime({ socketPath: path.join(dir, 'sim.sock'), pullDelayMs: 20, ...(options.intercept ? { intercept: options.intercept } : {}) });
    const proxy = options.endpoint && options.intercept ? await startCriProxy({ socketPath: path.join(dir, 'proxy.sock'), target: options.endpoint, intercept: options.intercept }) : null;
    const endpoint = options.endpoint ?? sim!.endpoint;
    const args = [`--container-runtime-endpoint=${proxy?.endpoint ?? endpoint}`, `--pod-manifest-path=${path.join(dir, 'manifests')}`, '--file-check-frequency=1s', `--hostname-override=${NODE}`, '--sync-frequency=5s', ...(options.agentArgs ?? [])];
    return new ChaosNode(options, dir, sim, new CriClient(endpoint), args, proxy);
  }

  async startAgent(): Promise<AgentProcess> {
    return (this.agent = await runStatelet(this.args, { rootDir: this.rootDir, ...(this.options.command ? { command: this.options.command } : {}) }));
  }

  async write(name: string, kind: Kind, generation: number): Promise<void> {
    this.live.set(name, { kind, generation });
    await writeFile(path.join(this.dir, 'manifests', `${name}.yaml`), manifest(name, kind, generation, this.options.image));
  }

  async remove(name: string): Promise<void> {
    this.live.delete(name);
    await unlink(path.join(this.dir, 'manifests', `${name}.yaml`));
  }

  /** The agent's --root-dir; its --pod-logs-dir is `logs` under it. */
  get rootDir(): string {
    return this.options.rootDir ?? path.join(this.dir, 'root');
  }

  /** The agent's pod of a manifest, as `/pods` lists it now. */
  async pod(name: string): Promise<Pod | undefined> {
    return (await this.agent!.pods()).find((pod) => pod.metadata.name === `${name}-${NODE}`);
  }

  /** Checks the agent's `/pods` and the runtime against the invariants. */
  async observe(): Promise<void> {
    if (!this.agent) return;
    const pods = await this.agent.pods().catch(() => null);
    if (!pods) return;
    this.observations++;
    const runtime = { containers: await this.cri.listContainers(), sandboxes: await this.cri.listPodSandbox() };
    for (const violation of this.history.observe(pods)) {
      // What the runtime held for that pod just then, to tell the agent's mistake from the runtime's.
      const uid = /\(([0-9a-f-]+)\)/.exec(violation.detail)?.[1];
      const held = runtime.containers.filter((c) => c.labels['io.kubernetes.pod.uid'] === uid).map((c) => `${c.metadata.name}#${c.metadata.attempt} ${c.state}`);
      this.violations.push({ ...violation, detail: `${violation.detail}; runtime: [${held.join(', ')}]; faults so far: ${this.faults.join(', ')}` });
    }
    this.violations.push(...runtimeViolations(runtime));
  }

  /**
   * Polls until the node has converged — every pod of the directory listed, each one meant to run
   * running, nothing in the runtime for anything else, one pod actor per pod — and `ready` (more
   * checks of the episode's own) holds. The time it took, or null after the timeout (the reasons
   * in `notConverged`).
   */
  async converge(timeoutMs: number, ready: () => Promise<string[]> = async () => []): Promise<number | null> {
    const started = performance.now();
    for (;;) {
      await this.observe();
      const agent = this.agent!;
      const manifestOf = (pod: Pod) => pod.metadata.name.slice(0, -(NODE.length + 1));
      const listed = (await agent.pods().catch(() => [] as Pod[])).filter((p) => this.live.has(manifestOf(p)));
      const runtime = { containers: await this.cri.listContainers(), sandboxes: await this.cri.listPodSandbox() };
      const shouldRun = (pod: Pod) => RUNS.has(pod.metadata.labels?.['chaos/kind'] ?? '');
      const reasons = notConverged(listed, shouldRun, runtime, await podActors(agent).catch(() => -1), this.lagging);
      if (listed.length !== this.live.size) reasons.push(`${listed.length} of ${this.live.size} pods listed`);
      reasons.push(...(await ready()));
      this.notConverged = reasons;
      if (reasons.length === 0) return performance.now() - started;
      if (performance.now() - started > timeoutMs) return null;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** The agent's last warnings and errors: what it was stuck on, when the node does not converge. */
  agentWarnings(): string[] {
    return agentWarnings(this.agent?.output() ?? '');
  }

  /** Stops the agent and removes what the runtime still holds (pods stay with it when the agent stops). */
  async close(): Promise<void> {
    await this.agent?.stop().catch(() => {});
    for (const sandbox of await this.cri.listPodSandbox().catch(() => [])) await this.cri.removePodSandbox(sandbox.id).catch(() => {});
    this.cri.close();
    await this.proxy?.close();
    await this.sim?.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** The last warnings and errors of an agent's output. */
export function agentWarnings(output: string): string[] {
  return output.split('\n').filter((line) => /^[WE]\d{4} |"level":"(warn|error)"/.test(line)).slice(-30);
}

/** Reads statelet_pod_actors from the agent's /metrics: the sum over states. */
export async function podActors(agent: AgentProcess): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${agent.readOnlyPort}/metrics`)).text();
  let total = 0;
  for (const match of text.matchAll(/^statelet_pod_actors\{state="[^"]*"\} (\d+)$/gm)) total += Number(match[1]);
  return total;
}
