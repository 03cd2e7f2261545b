/**
 * The hanging-call episode (issue 13): one runtime call of one pod does not answer — not an error,
 * silence — for longer than its deadline, while the rest of the node churns. The pod is deleted,
 * and the call of its termination drawn from the seed (a status read, the container's stop, the
 * sandbox's stop or removal) hangs where sim:// serves it, or in a CRI proxy in front of the
 * runtime given (containerd). Meanwhile:
 *
 * - only that pod waits: pods added, updated and deleted around it converge as usual;
 * - the node stays healthy (`/healthz` 200: the kubelet would have gone "PLEG is not healthy" if
 *   the call were one of its relist's status reads), and `/healthz?verbose` names the call and
 *   the pod once it has waited past its threshold;
 * - the call ends at its deadline (`--runtime-request-timeout`), the pod's next attempt hangs
 *   again, and once the runtime answers the pod finishes terminating, nothing left behind.
 */
import type { CriMethod } from '../../src/runtime/criCalls.ts';
import { FaultInjector, seededRandom } from '../support/faults.ts';
import { ChaosNode, NODE, type Kind } from './chaosNode.ts';
import type { Violation } from './invariants.ts';

/** Calls of a terminating pod that may hang: its status reads, its container's stop, its sandbox's stop and removal. */
const HANGING_CALLS: CriMethod[] = ['podSandboxStatus', 'containerStatus', 'stopContainer', 'stopPodSandbox', 'removePodSandbox'];

export interface HangOptions {
  seed: number;
  image: string;
  /** A CRI endpoint to use instead of sim:// in this process (its calls pass through a proxy). */
  endpoint?: string;
  /** Pods besides the one whose call hangs. */
  pods: number;
  /** How long the call hangs (ms): longer than the deadline, so that it meets it at least once. */
  hangMs: number;
  /** The agent's --runtime-request-timeout (ms). */
  requestTimeoutMs: number;
  convergeTimeoutMs?: number;
}

export interface HangReport {
  seed: number;
  call: CriMethod;
  /** Pod changes made around the hanging pod, and how long each round took to converge (ms). */
  changes: number;
  convergeMs: number[];
  /** What `/healthz?verbose` said of the call (its line), and when after the hang began (ms). */
  named: { line: string; afterMs: number } | null;
  /** `/healthz` answers while the call hung: all 200 when the node stays healthy. */
  healthzStatuses: number[];
  /** Calls held by the hang, counted when each started (a retry after the deadline is another). */
  heldCalls: number;
  /** From the runtime's answer to the pod gone, nothing left behind (ms); null if it never was. */
  releasedConvergeMs: number | null;
  observations: number;
  violations: Violation[];
  notConverged: string[];
}

const KINDS: Kind[] = ['steady', 'steady', 'init', 'crashloop', 'completes'];

export async function runHang(options: HangOptions): Promise<HangReport> {
  const random = seededRandom(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const faults = new FaultInjector({ seed: options.seed });
  const node = await ChaosNode.start({ image: options.image, ...(options.endpoint ? { endpoint: options.endpoint } : {}), intercept: faults.intercept, agentArgs: [`--runtime-request-timeout=${options.requestTimeoutMs}ms`] }, options.seed);
  const call = pick(HANGING_CALLS);
  const report: HangReport = { seed: options.seed, call, changes: 0, convergeMs: [], named: null, healthzStatuses: [], heldCalls: 0, releasedConvergeMs: null, observations: 0, violations: node.violations, notConverged: [] };
  const timeout = options.convergeTimeoutMs ?? 60_000;
  let serial = 0;
  try {
    await node.write('stuck', 'steady', 0);
    for (let i = 0; i < options.pods; i++) await node.write(`p${serial++}`, pick(KINDS), 0);
    const agent = await node.startAgent();
    if ((await node.converge(timeout)) === null) throw new Error(`seed ${options.seed}: the node did not start: ${node.notConverged.join('; ')}`);

    const stuck = (await node.pod('stuck'))!;
    const hang = faults.holdCalls({ methods: [call], podUid: stuck.metadata.uid });
    node.faults.push(`hang ${call}`);
    node.lagging.add(stuck.metadata.uid);
    await node.remove('stuck');
    const began = performance.now();
    const stuckLine = new RegExp(`^ {2}(\\w+) .*for pod default/stuck-${NODE}: no answer for \\d+s$`, 'm');

    // The rest of the node churns around it: each round converges while the pod waits.
    while (performance.now() - began < options.hangMs) {
      const names = [...node.live.keys()];
      const op = node.live.size < options.pods / 2 ? 'add' : pick(['add', 'update', 'delete'] as const);
      if (op === 'add' || names.length === 0) await node.write(`p${serial++}`, pick(KINDS), 0);
      else if (op === 'update') {
        const name = pick(names);
        await node.write(name, node.live.get(name)!.kind, serial++);
      }
      else await node.remove(pick(names));
      report.changes++;
      const ms = await node.converge(timeout, async () => {
        const health = await agent.healthz();
        report.healthzStatuses.push(health.status);
        const verbose = await fetch(`http://127.0.0.1:${agent.readOnlyPort}/healthz?verbose`).then((res) => res.text());
        const named = stuckLine.exec(verbose);
        if (named && !report.named) report.named = { line: named[0].trim(), afterMs: Math.round(performance.now() - began) };
        return [];
      });
      if (ms === null) {
        report.notConverged = node.notConverged;
        return report;
      }
      report.convergeMs.push(ms);
    }
    report.heldCalls = hang.hits;
    hang.releaseAll();
    node.faults.push('released');
    node.lagging.delete(stuck.metadata.uid);
    report.releasedConvergeMs = await node.converge(timeout);
    report.notConverged = node.notConverged;
    return report;
  } finally {
    report.observations = node.observations;
    faults.clear();
    await node.close();
  }
}
