/**
 * The node-level loops, one line each (the shape of a loop: src/nodeloop/nodeLoop.ts). The
 * syncLoop spawns those that start on the node, in this order; composeNode gives them the node's
 * parts; the visualizer takes their summaries from here.
 */
import { evictionLoop } from '../eviction/loop.ts';
import { containerLogLoop } from '../logs/loop.ts';
import { nodeLeaseLoop } from '../nodelease/loop.ts';
import { nodeStatusLoop } from '../nodestatus/loop.ts';
import { oomWatcherLoop } from '../oomwatcher/loop.ts';
import { volumeManagerLoop } from '../volumemanager/loop.ts';

export const nodeLoops = [nodeStatusLoop, nodeLeaseLoop, volumeManagerLoop, containerLogLoop, evictionLoop, oomWatcherLoop] as const;

export type NodeLoopName = (typeof nodeLoops)[number]['name'];
