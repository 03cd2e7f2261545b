/**
 * The node status loop's registration: in a cluster only, it registers the Node and keeps its
 * status (kubelet.go starts syncNodeStatus beside the sync loop); the syncLoop tells it when the
 * runtime's health flips, so Ready follows at once.
 */
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { notReadyReasons } from '../node/health.ts';
import { type MachineInfo, nodeSettings } from '../node/nodeObject.ts';
import { kubeletVersion } from '../cli/flags.ts';
import { createNodeStatusEffects } from './effects.ts';
import { nodeStatusMachine, nodeStatusMachineWith } from './nodeStatus.ts';

const clockTime = (ms: number) => new Date(ms).toISOString().slice(11, 19);

export const nodeStatusLoop = defineNodeLoop({
  name: 'nodeStatus',
  machine: nodeStatusMachine,
  start: ({ config, cluster, runtime, images, nodeRecord, health, storageError, clock, log, recorder, volumes }) => {
    if (!cluster) return null;
    const now = () => clock.now();
    let machine: Promise<MachineInfo> | undefined;
    const effects = createNodeStatusEffects({
      api: cluster.api,
      runtime,
      images,
      settings: nodeSettings(config, kubeletVersion()),
      machine: () => (machine ??= cluster.machine()),
      notReady: () => notReadyReasons(health(), now()),
      storageError,
      record: nodeRecord,
      reportFrequencyMs: config.nodeStatusReportFrequencyMs,
      now,
      log,
      recorder,
      podCidr: config.podCidr ?? '',
      volumes: volumes.world,
    });
    return {
      logic: nodeStatusMachineWith(effects),
      input: { registerNode: config.registerNode, updateFrequencyMs: config.nodeStatusUpdateFrequencyMs },
    };
  },
  accepts: ['NODE.HEALTH_CHANGED', 'NODE.PRESSURE'],
  /** `Ready · 3 status writes, last 14:02:11` (`Ready, MemoryPressure · …` under pressure), or what went wrong. */
  summary: (c) => {
    const ready = (c.ready === true ? 'Ready' : c.ready === false ? 'NotReady' : 'not yet reported') + c.pressure.map((p) => `, ${p}`).join('');
    const writes = `${c.writes} status writes${c.lastWrittenAt !== null ? `, last ${clockTime(c.lastWrittenAt)}` : ''}`;
    const trouble = c.lastError ? ` · ${c.registerFailures ? `${c.registerFailures} failed registrations: ` : ''}${c.lastError}` : '';
    return `${ready} · ${writes}${trouble}`;
  },
});
