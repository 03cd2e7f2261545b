/**
 * An effect of a machine as it is drawn (what the visualizer shows and the model tests walk): it
 * fails, saying how the composition gives the real one. Every machine declares its effects this
 * way, as invoked actors, and is given them with `<id>MachineWith(effects)` (docs/extending.md).
 */
export function notProvided(machine: string, effect: string): () => Promise<never> {
  return () => Promise.reject(new Error(`${effect} is not provided: give the ${machine} machine its effects with ${machine}MachineWith(effects)`));
}
