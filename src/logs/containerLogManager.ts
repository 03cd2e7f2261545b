/**
 * The container log manager (pkg/kubelet/logs/container_log_manager.go): a node-level actor that
 * looks at the running containers' logs every `monitorIntervalMs` (containerLogMonitorInterval,
 * 10 s) and rotates those that reached `--container-log-max-size`, keeping
 * `--container-log-max-files` per container (effects.ts does the work):
 *
 *   `waiting`   one interval → `rotating`.
 *   `rotating`  one pass (`rotate`) → `waiting`; a failed pass is kept in the context and the
 *               next one runs as usual.
 *
 * Context: passes, files rotated, the last failures (for the visualizer).
 */
import { assign, fromPromise, setup } from 'xstate';
import { notProvided } from '../notProvided.ts';
import type { LogPassResult } from './effects.ts';

interface ContainerLogContext {
  monitorIntervalMs: number;
  passes: number;
  rotated: number;
  lastFailures: string[];
}


export const containerLogManagerMachine = setup({
  types: {
    context: {} as ContainerLogContext,
    input: {} as { monitorIntervalMs: number },
  },
  actors: {
    rotate: fromPromise<LogPassResult>(notProvided('containerLogManager', 'rotate')),
  },
  delays: {
    monitorInterval: ({ context }) => context.monitorIntervalMs,
  },
}).createMachine({
  id: 'containerLogManager',
  context: ({ input }) => ({ monitorIntervalMs: input.monitorIntervalMs, passes: 0, rotated: 0, lastFailures: [] }),
  initial: 'waiting',
  states: {
    waiting: { after: { monitorInterval: 'rotating' } },
    rotating: {
      invoke: {
        src: 'rotate',
        onDone: {
          target: 'waiting',
          actions: assign(({ context, event }) => ({
            passes: context.passes + 1,
            rotated: context.rotated + event.output.rotated,
            lastFailures: event.output.failures.slice(0, 5).map((f) => `${f.path}: ${f.error}`),
          })),
        },
        onError: {
          target: 'waiting',
          actions: assign(({ context, event }) => ({ passes: context.passes + 1, lastFailures: [event.error instanceof Error ? event.error.message : String(event.error)] })),
        },
      },
    },
  },
});

/** What the container log manager does: one rotation pass over the running containers' logs. */
export interface ContainerLogManagerEffects {
  rotate(): Promise<LogPassResult>;
}

export function containerLogManagerMachineWith(effects: ContainerLogManagerEffects) {
  return containerLogManagerMachine.provide({ actors: { rotate: fromPromise(() => effects.rotate()) } });
}
