/**
 * One statelet node of a real control plane for a describe block: the control plane with the
 * node's identity, then the `statelet` command joined to it with the node's name, its InternalIP on
 * loopback and the arguments given; both stopped after the block. `prepare` runs first (a small
 * filesystem for --root-dir), `cleanUp` after the agent has stopped and before the control plane.
 */
import { afterAll, beforeAll } from 'vitest';
import { type AgentProcess, runStatelet } from './agentProcess.ts';
import { type ControlPlane, startControlPlane } from './controlPlane.ts';

interface ClusterNodeOptions {
  node: string;
  /** Arguments besides the kubeconfig, the node's name and its IP (the runtime, flags under test). */
  args: () => string[];
  /** Runs before the agent; may give it its --root-dir. */
  prepare?: () => Promise<{ rootDir?: string } | void>;
  cleanUp?: () => Promise<void>;
  /** The upstream scheduler and controller-manager beside the API server (StatefulSets, claims bound, garbage collection). */
  controllers?: boolean;
}

export function clusterNode(options: ClusterNodeOptions): { cp: ControlPlane | null; agent: AgentProcess | undefined } {
  const fixture: { cp: ControlPlane | null; agent: AgentProcess | undefined } = { cp: null, agent: undefined };
  beforeAll(async () => {
    fixture.cp = await startControlPlane({ nodeNames: [options.node], ...(options.controllers ? { controllers: true } : {}) });
    if (!fixture.cp) return;
    const prepared = (await options.prepare?.()) ?? {};
    fixture.agent = await runStatelet(
      [`--kubeconfig=${fixture.cp.nodeKubeconfig(options.node)}`, `--hostname-override=${options.node}`, '--node-ip=127.0.0.1', ...options.args()],
      prepared.rootDir ? { rootDir: prepared.rootDir } : {},
    );
  }, 5 * 60_000);
  afterAll(async () => {
    await fixture.agent?.stop();
    await options.cleanUp?.();
    await fixture.cp?.close();
  }, 180_000);
  return fixture;
}
