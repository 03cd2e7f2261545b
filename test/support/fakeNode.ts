/**
 * The node's actors as `startAgent` composes them (`composeNode`, the one composition), on the
 * TestRuntime and one SimulatedClock that drives everything: the actor system's delays, the probe
 * scheduler and the runtime's own time. Tests send CONFIG.* and SOURCE.SEEN to the syncLoop
 * themselves and drive time with the clock.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { fromCallback } from 'xstate';
import type { SourceName } from '../../src/api/types.ts';
import { agentDefaults } from '../../src/cli/config.ts';
import { type NodeMetrics, composeNode } from '../../src/kubelet/composeNode.ts';
import type { NodeConfig } from '../../src/nodeloop/parts.ts';
import type { MachineInfo } from '../../src/node/nodeObject.ts';
import type { RuntimeStatusInfo } from '../../src/runtime/types.ts';
import { type Logger, silentLogger } from '../../src/log.ts';
import { TestRuntime } from './testRuntime.ts';
import { IMAGE, NO_MEMORY_FEATURES, testClock } from './pods.ts';
import { diskOnly } from '../../src/volumes/mounter.ts';
import { type PodActor, actorId } from '../../src/podworkers/podWorkers.ts';

export interface FakeNodeOptions {
  /** Node settings that differ from the agent's defaults. */
  config?: Partial<NodeConfig>;
  /** Sources the syncLoop waits for before housekeeping; none by default (housekeeping at once). */
  expectedSources?: SourceName[];
  log?: Logger;
  /** The node's jitter (resync times, first probe ticks); 0 by default: no jitter. */
  random?: () => number;
  /** Told of what the kubelet's metrics count (the parts a test listens to), as the agent's /metrics is. */
  metrics?: Partial<NodeMetrics>;
  /** The machine, as the agent reads it at start; absent: not known (admission checks the pod count only). */
  machine?: MachineInfo;
  /** The runtime's conditions as the agent's Status at start read them; absent: not read (the network taken as ready until the first poll). */
  runtimeConditions?: RuntimeStatusInfo['conditions'];
}

let nodesDir: string | undefined;
/** One directory per test file for every fake node's files, removed after the file's tests. */
function fakeNodesDir(): string {
  nodesDir ??= mkdtempSync(path.join(os.tmpdir(), 'statelet-fake-nodes-'));
  return nodesDir;
}
afterAll(() => {
  if (nodesDir) rmSync(nodesDir, { recursive: true, force: true });
  nodesDir = undefined;
});

/** The node built and started, as the agent has it once it runs. */
export function startFakeNode(options: FakeNodeOptions = {}) {
  const node = buildFakeNode(options);
  node.start();
  return node;
}

/** The node built and not started (composeNode builds; `start()` starts). */
export function buildFakeNode(options: FakeNodeOptions = {}) {
  const clock = testClock();
  const now = () => clock.now();
  const runtime = new TestRuntime({ clock });
  runtime.addImage(IMAGE);
  // The pods' own files (their /etc/hosts) go under a directory of this node's, removed at stop
  // or, for a node a test never stops, with the rest when the test process exits.
  const rootDir = mkdtempSync(path.join(fakeNodesDir(), 'node-'));
  const config: NodeConfig = {
    ...agentDefaults(),
    nodeName: 'node-a',
    podLogsDir: '/tmp/statelet-test-logs',
    rootDir,
    // Relisting only: tests step the PLEG one period at a time.
    eventedPleg: false,
    ...options.config,
  };
  const node = composeNode({
    config,
    runtime,
    images: runtime,
    runtimeName: 'fake',
    clock,
    log: options.log ?? silentLogger,
    random: options.random ?? (() => 0),
    // A unit-test node mounts nothing on the host (a node a test never stops would leave its
    // tmpfs behind); tmpfs itself is tested in test/volumes and by the agents of the cluster suite.
    mounter: diskOnly,
    memoryFeatures: NO_MEMORY_FEATURES,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.machine ? { machine: options.machine } : {}),
    ...(options.runtimeConditions ? { runtimeConditions: options.runtimeConditions } : {}),
    ...(options.expectedSources ? { sources: { logic: fromCallback(() => {}), expected: options.expectedSources } } : {}),
  });
  const stop = () => {
    node.stop();
    rmSync(rootDir, { recursive: true, force: true });
  };
  /** The actor of a pod UID, while it has one (tests look at it; the node's parts never do). */
  const podActor = (uid: string) => node.syncLoop.system.get(actorId(uid)) as PodActor | undefined;
  return { ...node, stop, podActor, clock, now, runtime, rootDir };
}
