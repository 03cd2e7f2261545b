/**
 * The agent killed with SIGKILL, as the episodes with agent kills do it (churn.ts, apiFaults.ts):
 * at once, or in the middle of a runtime call where the runtime is sim:// served from the test's
 * process (the call is let through after the kill, so the runtime does what it was asked while
 * the agent is gone, as containerd would).
 */
import type { SimEngine } from '../../src/runtime/sim/engine.ts';
import type { SimRuntime } from '../../src/runtime/sim/server.ts';
import type { AgentProcess } from '../support/agentProcess.ts';

export type KillPoint = 'anytime' | 'runPodSandbox' | 'removePodSandbox' | 'createContainer' | 'stopContainer';
export const KILL_POINTS: readonly KillPoint[] = ['anytime', 'runPodSandbox', 'removePodSandbox', 'createContainer', 'stopContainer'];

/**
 * Arms the kill of `victim` at `point` and returns at once; the returned promise resolves once the
 * agent has exited. Inside the next call of `point` that `sim` serves; when none comes within
 * `withinMs` (nothing to stop just now) the kill happens anyway. With no `sim` (another runtime),
 * or `anytime`, the agent is killed now.
 */
export function armAgentKill(victim: AgentProcess, sim: SimRuntime | null, point: KillPoint, withinMs = 3_000): { killed: Promise<void> } {
  const killNow = () => victim.child.kill('SIGKILL');
  if (point === 'anytime' || !sim) {
    killNow();
    return { killed: victim.waitForExit().then(() => {}) };
  }
  const engine = sim.engine as unknown as Record<string, (...a: unknown[]) => unknown>;
  const original = engine[point]!;
  const armed = new Promise<void>((resolve) => {
    engine[point] = function (this: SimEngine, ...a: unknown[]) {
      engine[point] = original;
      killNow();
      resolve();
      return original.apply(this, a);
    };
  });
  const timeout = new Promise<void>((resolve) => setTimeout(resolve, withinMs));
  const killed = Promise.race([armed, timeout]).then(async () => {
    engine[point] = original;
    killNow();
    await victim.waitForExit();
  });
  return { killed };
}
