/**
 * The node-level loops, one line each (the shape of a loop: src/nodeloop/nodeLoop.ts). The
 * syncLoop spawns those that start on the node, in this order; composeNode gives them the node's
 * parts; the visualizer takes their summaries from here.
 */
import type { AnyStateMachine } from 'xstate';
import { certificateManagerLoop, servingCertificateManagerLoop } from '../certificatemanager/loop.ts';
import { evictionManagerLoop } from '../eviction/loop.ts';
import { garbageCollectorLoop } from '../gc/loop.ts';
import { containerLogManagerLoop } from '../logs/loop.ts';
import { nodeLeaseLoop } from '../nodelease/loop.ts';
import type { NodeParts } from '../nodeloop/parts.ts';
import { nodeStatusLoop } from '../nodestatus/loop.ts';
import { oomWatcherLoop } from '../oomwatcher/loop.ts';
import { pluginManagerLoop } from '../pluginmanager/loop.ts';
import { volumeStatsCalculatorLoop } from '../volumestats/loop.ts';
import { statusWriterLoop } from '../statuswriter/loop.ts';
import { volumeManagerLoop } from '../volumemanager/loop.ts';

export const nodeLoops = [certificateManagerLoop, servingCertificateManagerLoop, nodeStatusLoop, nodeLeaseLoop, statusWriterLoop, volumeManagerLoop, volumeStatsCalculatorLoop, containerLogManagerLoop, garbageCollectorLoop, evictionManagerLoop, oomWatcherLoop, pluginManagerLoop] as const;

export type NodeLoopName = (typeof nodeLoops)[number]['name'];

/** The input of each node loop that starts on this node (src/nodeloop/nodeLoop.ts); the others do not run. */
export type LoopInputs = Partial<Record<NodeLoopName, unknown>>;

/** Each loop that runs on the node, with its effects over the node's parts and its settings. */
export function nodeLoopsOn(parts: NodeParts): { logic: Partial<Record<NodeLoopName, AnyStateMachine>>; inputs: LoopInputs } {
  const logic: Partial<Record<NodeLoopName, AnyStateMachine>> = {};
  const inputs: LoopInputs = {};
  for (const loop of nodeLoops) {
    const started = loop.start(parts);
    if (!started) continue;
    logic[loop.name] = started.logic;
    inputs[loop.name] = started.input;
  }
  return { logic, inputs };
}
