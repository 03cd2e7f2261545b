/**
 * The one shape of a node-level loop: the loops that the kubelet starts beside its sync loop, each
 * from a package of its own and wired in a few lines of kubelet.go (pkg/kubelet/nodestatus,
 * eviction, volumemanager, logs; the Lease of component-helpers' lease controller).
 *
 * A loop is one folder `src/<name>/`, always with the same files:
 *   - `<name>.ts`, named after its machine: a module-level `setup()` machine whose id is the loop's name. Its effects are
 *     invoked actors declared as placeholders; its settings are its input; its timers are `after`
 *     delays on the actor system's clock.
 *   - `effects.ts`: the interface of those effects and their implementation over the node's parts
 *     (API calls, files, the runtime), when it has effects of its own.
 *   - `loop.ts`: its registration, `defineNodeLoop({ … })`: whether and how it starts on a node,
 *     the catalogue events it listens to, and its line on the visualizer's System list.
 *   - its pure decisions, named for what they decide, table-tested.
 * and it is listed once, in src/kubelet/nodeLoops.ts. The syncLoop spawns every listed loop that
 * starts on the node (a standalone node has no Lease), with the input its registration gave, and
 * passes it the events it accepts. Loops never import each other: one loop learns of another
 * through the events of src/events.ts, sent to the syncLoop with `sendParent`.
 */
import type { AnyStateMachine, ContextFrom, InputFrom } from 'xstate';
import type { AgentEventType } from '../events.ts';
import type { NodeParts } from './parts.ts';

/** A loop on this node: its machine with its effects provided, and its settings. */
interface StartedLoop<M extends AnyStateMachine> {
  logic: M;
  input: InputFrom<M>;
}

export interface NodeLoop<N extends string = string, M extends AnyStateMachine = AnyStateMachine> {
  /** The loop's child id in the syncLoop, and its machine's id. */
  name: N;
  /** The machine as drawn and tested, effects as placeholders. */
  machine: M;
  /**
   * The loop on this node, from the node's parts: its machine with its effects (`machine.provide`)
   * and its input, read from the node's settings; null where it does not run (the Lease of a
   * standalone node).
   */
  start(node: NodeParts): StartedLoop<M> | null;
  /** Event types of the catalogue the syncLoop passes on to this loop. */
  accepts: readonly AgentEventType[];
  /** Its line on the visualizer's System list, from its context (`Ready · 3 status writes`). */
  summary(context: ContextFrom<M>): string;
}

/** A loop's registration; its name must be its machine's id, so the child, the chart and the summary agree. */
export function defineNodeLoop<const N extends string, M extends AnyStateMachine>(loop: NodeLoop<N, M>): NodeLoop<N, M> {
  if (loop.machine.id !== loop.name) throw new Error(`node loop "${loop.name}": its machine's id is "${loop.machine.id}"; a loop's name and its machine's id must be the same`);
  return loop;
}
