/**
 * The OOM watcher's registration (kubelet.go starts the OOM watcher with the node): on a node
 * whose kernel log can be followed (the host's through `dmesg --follow-new`, or sim://'s simulated
 * machine's).
 */
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { followKernelLog } from './effects.ts';
import { oomWatcherMachine, oomWatcherMachineWith } from './oomWatcher.ts';

export const oomWatcherLoop = defineNodeLoop({
  name: 'oomWatcher',
  machine: oomWatcherMachine,
  start: ({ config, kernelLog, recorder, log }) => (kernelLog ? { logic: oomWatcherMachineWith({ followKernelLog: followKernelLog({ kernelLog, nodeName: config.nodeName, recorder, log }) }), input: undefined } : null),
  accepts: [],
  /** `2 system OOMs, last dd (pid 4242)`, or why the kernel log is not read. */
  summary: (c) => {
    const ooms = `${c.systemOoms} system OOMs${c.lastVictim ? `, last ${c.lastVictim}` : ''}`;
    return c.lastError ? `${ooms} · not watching: ${c.lastError}` : ooms;
  },
});
