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
import { seededRandom } from '../support/faults.ts';
import { KILL_POINTS, type KillPoint, armAgentKill } from './agentKill.ts';
import { ChaosNode, type Kind } from './chaosNode.ts';
import type { Violation } from './invariants.ts';

const KINDS: Kind[] = ['steady', 'steady', 'steady', 'init', 'crashloop', 'unhealthy', 'completes'];

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
  /** Runtime-side failures of one pod, spread over the rounds (sim:// in this process only): a running container crashes, or a sandbox's own process is lost. */
  podFailures?: number;
  /** How to restart the runtime given by `endpoint` (sim:// in this process restarts itself). */
  restartRuntime?: (downSeconds: number) => Promise<void>;
  image: string;
  /** A CRI endpoint to use instead of sim:// in this process. */
  endpoint?: string;
  /** Longest wait for the node to converge after the last change (ms). */
  convergeTimeoutMs?: number;
}

export type Fault = KillPoint | 'runtimeRestart' | 'containerCrash' | 'sandboxLost';

export interface ChurnReport {
  seed: number;
  changes: number;
  /** Each fault injected, and how long the node took to converge after it (-1: it did not). */
  faults: {
    fault: Fault;
    convergeMs: number;
    /** After a runtime restart: what /healthz said while the runtime was away (null: it never failed). */
    healthz?: string | null;
    notConverged?: string[];
    agentLog?: string[];
  }[];
  observations: number;
  violations: Violation[];
  /** From the last change to converged (ms), or null if it never did. */
  finalConvergeMs: number | null;
  notConverged: string[];
}

export async function runChurn(options: ChurnOptions): Promise<ChurnReport> {
  const random = seededRandom(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const node = await ChaosNode.start({ image: options.image, ...(options.endpoint ? { endpoint: options.endpoint } : {}) }, options.seed);
  const { sim, live } = node;
  const report: ChurnReport = { seed: options.seed, changes: 0, faults: [], observations: 0, violations: node.violations, finalConvergeMs: null, notConverged: [] };
  let serial = 0;
  const converge = async (): Promise<number | null> => {
    const ms = await node.converge(options.convergeTimeoutMs ?? 60_000);
    report.notConverged = node.notConverged;
    return ms;
  };

  /** Kills the agent with SIGKILL, now or inside the next call of `point` the runtime serves, and starts it again. */
  const kill = async (point: KillPoint) => {
    await armAgentKill(node.agent!, sim, point).killed;
    await node.startAgent();
  };

  /**
   * Watches /healthz from now on: `untilHealthy()` waits for a 200 after `over()` was called (60 s
   * at most) and gives the first unhealthy answer seen (null if it never said anything was wrong).
   */
  const watchHealthz = () => {
    let overAt: number | null = null;
    let said: string | null = null;
    const healthy = (async () => {
      for (;;) {
        const health = await node.agent!.healthz().catch(() => null);
        if (health && health.status !== 200) said ??= health.body;
        if (overAt !== null && health?.status === 200) return said;
        if (overAt !== null && performance.now() - overAt > 60_000) return `${said}\nnot healthy again 60 s after`;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    return { over: () => (overAt = performance.now()), untilHealthy: () => healthy };
  };
  /** Crashes a running container, or loses a ready sandbox, of a pod drawn from the seed. */
  const failOnePod = async (): Promise<'containerCrash' | 'sandboxLost'> => {
    const engine = sim!.engine;
    if (random() < 0.5) {
      const running = await node.cri.listContainers({ state: 'CONTAINER_RUNNING' });
      if (running.length > 0) {
        engine.crashContainer(pick(running).id, 137);
        return 'containerCrash';
      }
    }
    const ready = await node.cri.listPodSandbox({ state: 'SANDBOX_READY' });
    if (ready.length > 0) engine.loseSandbox(pick(ready).id);
    return 'sandboxLost';
  };

  try {
    for (let i = 0; i < options.pods; i++) await node.write(`p${serial++}`, pick(KINDS), 0);
    report.changes += options.pods;
    await node.startAgent();
    // Which round gets which fault: distinct rounds, drawn from the seed.
    const faultAt = new Map<number, 'kill' | 'runtimeRestart' | 'podFailure'>();
    const place = (fault: 'kill' | 'runtimeRestart' | 'podFailure', count: number) => {
      for (let placed = 0; placed < count && faultAt.size < options.rounds; ) {
        const round = Math.floor(random() * options.rounds);
        if (faultAt.has(round)) continue;
        faultAt.set(round, fault);
        placed++;
      }
    };
    place('kill', options.kills);
    place('runtimeRestart', options.runtimeRestarts ?? 0);
    if (options.podFailures && !sim) throw new Error('podFailures asked for, but the runtime is not sim:// in this process');
    place('podFailure', options.podFailures ?? 0);
    const restartRuntime = options.restartRuntime ?? (sim ? (down: number) => sim.restart(down * 1000) : null);
    for (let round = 0; round < options.rounds; round++) {
      for (let change = 0; change < 1 + Math.floor(random() * 3); change++) {
        const names = [...live.keys()];
        const op = live.size < options.pods / 2 ? 'add' : live.size > options.pods * 1.5 ? 'delete' : pick(['add', 'update', 'update', 'delete'] as const);
        if (op === 'add' || names.length === 0) await node.write(`p${serial++}`, pick(KINDS), 0);
        else if (op === 'update') {
          const name = pick(names);
          const { kind, generation } = live.get(name)!;
          await node.write(name, kind, generation + 1);
        } else await node.remove(pick(names));
        report.changes++;
      }
      await node.observe();
      const fault = faultAt.get(round);
      if (fault) {
        let injected: Fault;
        let health: ReturnType<typeof watchHealthz> | null = null;
        if (fault === 'kill') {
          // Inside a runtime call only where the runtime is this process's sim://.
          injected = sim ? pick(KILL_POINTS) : 'anytime';
          node.faults.push(injected);
          await kill(injected);
        } else if (fault === 'podFailure') {
          injected = await failOnePod();
          node.faults.push(injected);
        } else {
          if (!restartRuntime) throw new Error('runtimeRestarts asked for, but no way to restart this runtime');
          injected = 'runtimeRestart';
          node.faults.push(injected);
          health = watchHealthz();
          await restartRuntime(1);
          health.over();
        }
        // Timed from the fault's end: the agent's restart, the runtime's return.
        const convergeMs = await converge();
        const healthz = health ? { healthz: await health.untilHealthy() } : {};
        report.faults.push(convergeMs === null ? { fault: injected, convergeMs: -1, ...healthz, notConverged: node.notConverged, agentLog: node.agentWarnings() } : { fault: injected, convergeMs, ...healthz });
      } else {
        await new Promise((resolve) => setTimeout(resolve, 100 + random() * 400));
      }
    }
    report.finalConvergeMs = await converge();
    return report;
  } finally {
    report.observations = node.observations;
    await node.close();
  }
}
