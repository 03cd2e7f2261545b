/**
 * The container log manager's registration (kubelet.go starts the container log manager beside
 * the sync loop): every node rotates its running containers' logs by size.
 */
import { RepeatedFailures } from '../log.ts';
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { logRotationFailures, rotateContainerLogs } from './effects.ts';
import { containerLogManagerMachine, containerLogManagerMachineWith } from './containerLogManager.ts';

export const containerLogManagerLoop = defineNodeLoop({
  name: 'containerLogManager',
  machine: containerLogManagerMachine,
  start: ({ config, runtime, clock, log }) => {
    const failures = new RepeatedFailures();
    const policy = { maxSizeBytes: config.containerLogMaxSize, maxFiles: config.containerLogMaxFiles };
    return {
      logic: containerLogManagerMachineWith({
        rotate: async () => {
        const pass = await rotateContainerLogs(runtime, config.podLogsDir, policy, () => new Date(clock.now()));
        logRotationFailures(pass, failures, log);
        return pass;
        },
      }),
      input: { monitorIntervalMs: config.containerLogMonitorIntervalMs },
    };
  },
  accepts: [],
  /** `12 passes · 3 logs rotated`, and the last failure. */
  summary: (c) => {
    const failures = c.lastFailures.length ? ` · ${c.lastFailures.length} failed: ${c.lastFailures[0]}` : '';
    return `${c.passes} passes · ${c.rotated} logs rotated${failures}`;
  },
});
