/**
 * The pods' measured volumes (src/stats/volumeStats.ts, StatsProvider.calculateVolumeStats,
 * src/volumes/csi/stats.ts): which plugin measures what (volume_stat_calculator.go), the CSI
 * driver asked only with GET_VOLUME_STATS (csi_metrics.go), a failing volume left out and said
 * once, the others unaffected.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LogFields, LogLevel } from '../../src/log.ts';
import { StatsProvider } from '../../src/stats/provider.ts';
import { volumeMeasure, volumeStatsEntry } from '../../src/stats/volumeStats.ts';
import type { CsiNode, NodeCapability } from '../../src/volumes/csi/client.ts';
import { type CsiStatsVolume, csiVolumeStatsReader } from '../../src/volumes/csi/stats.ts';
import type { MountedVolume } from '../../src/volumes/world.ts';
import { ManualClock } from '../support/manualClock.ts';
import { TestRuntime } from '../support/testRuntime.ts';

const csiVolume = { driver: 'mock.test', volumeHandle: 'vol-1' };

describe('volumeMeasure', () => {
  it.each([
    ['a local PersistentVolume: statfs', { kind: 'localPV' }, 'statfs'],
    ['a CSI PersistentVolume: its driver', { kind: 'csiPV', csi: csiVolume }, 'csi'],
    ['an inline CSI volume: its driver', { kind: 'csiInline', csi: csiVolume }, 'csi'],
    ['a hostPath PersistentVolume: none (MetricsNil)', { kind: 'hostPathPV' }, null],
    ['a mapped raw block local volume: none', { kind: 'localPV', mapped: true }, null],
    ['a mapped raw block CSI volume: none', { kind: 'csiPV', csi: csiVolume, mapped: true }, null],
    ['an emptyDir: walked apart', { kind: 'emptyDir' }, null],
    ['a projected volume: none', { kind: 'projected' }, null],
  ] as const)('%s', (_, volume, expected) => {
    expect(volumeMeasure(volume as Pick<MountedVolume, 'kind' | 'csi' | 'mapped'>)).toBe(expected);
  });
});

describe('volumeStatsEntry', () => {
  it('names the claim as pvcRef and fills every figure, 0 where none was measured', () => {
    expect(volumeStatsEntry({ outerName: 'data', claim: { namespace: 'shop', name: 'data-web-0' } }, { time: 5, capacityBytes: 100 })).toEqual({
      name: 'data',
      pvcRef: { name: 'data-web-0', namespace: 'shop' },
      time: 5,
      availableBytes: 0,
      capacityBytes: 100,
      usedBytes: 0,
      inodesFree: 0,
      inodes: 0,
      inodesUsed: 0,
    });
    expect(volumeStatsEntry({ outerName: 'scratch' }, { time: 5 })).not.toHaveProperty('pvcRef');
  });
});

/** A CSI node double answering capabilities and stats, recording the stats calls. */
function fakeCsi(capabilities: NodeCapability[], stats: (id: string) => Promise<{ usedBytes: number }>): CsiNode & { asked: [string, string][] } {
  const asked: [string, string][] = [];
  const unused = () => Promise.reject(new Error('not used'));
  return {
    asked,
    nodeGetInfo: unused,
    nodeGetCapabilities: async () => capabilities,
    supports: async (c) => capabilities.includes(c),
    nodeStageVolume: unused,
    nodeUnstageVolume: unused,
    nodePublishVolume: unused,
    nodeUnpublishVolume: unused,
    nodeExpandVolume: unused,
    nodeGetVolumeStats: async (id, target) => {
      asked.push([id, target]);
      const { usedBytes } = await stats(id);
      return { availableBytes: 10, capacityBytes: 20, usedBytes, inodesFree: 1, inodes: 2, inodesUsed: 1 };
    },
  };
}

describe('csiVolumeStatsReader', () => {
  const volume: CsiStatsVolume = { ...csiVolume, path: '/r/pods/u1/volumes/kubernetes.io~csi/pv-1/mount' };

  it('asks a registered driver with GET_VOLUME_STATS for the volume at its target path', async () => {
    const csi = fakeCsi(['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS'], async () => ({ usedBytes: 7 }));
    const read = csiVolumeStatsReader({ endpoint: (name) => (name === 'mock.test' ? '/csi.sock' : null) }, () => csi);
    expect(await read(volume)).toMatchObject({ usedBytes: 7, capacityBytes: 20 });
    expect(csi.asked).toEqual([['vol-1', volume.path]]);
  });

  it('reports nothing, and asks nothing, of a driver without GET_VOLUME_STATS', async () => {
    const csi = fakeCsi(['STAGE_UNSTAGE_VOLUME'], async () => ({ usedBytes: 7 }));
    const read = csiVolumeStatsReader({ endpoint: () => '/csi.sock' }, () => csi);
    expect(await read(volume)).toBeNull();
    expect(csi.asked).toEqual([]);
  });

  it('fails for a driver that is not registered', async () => {
    const read = csiVolumeStatsReader({ endpoint: () => null }, () => fakeCsi([], async () => ({ usedBytes: 0 })));
    await expect(read(volume)).rejects.toThrow('kubernetes.io/csi: driver name mock.test not found in the list of registered CSI drivers');
  });
});

describe('StatsProvider.calculateVolumeStats', () => {
  let dir: string;
  let runtime: TestRuntime;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'statelet-volstats-'));
    runtime = new TestRuntime({ clock: new ManualClock() });
  });
  afterEach(async () => {
    await runtime.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps what the last round measured: a local volume by statfs, a CSI volume by its driver; a failing driver leaves its volume out, said once', async () => {
    const mounted = new Map<string, Map<string, MountedVolume>>([
      [
        'u1',
        new Map<string, MountedVolume>([
          ['local', { outerName: 'local', kind: 'localPV', uniqueName: 'kubernetes.io/local-volume/pv-l', path: dir, readOnly: false, claim: { namespace: 'shop', name: 'local-claim' } }],
          ['csi', { outerName: 'csi', kind: 'csiPV', uniqueName: 'kubernetes.io/csi/mock.test^vol-1', path: '/t/mount', readOnly: false, claim: { namespace: 'shop', name: 'csi-claim' }, csi: csiVolume }],
          ['config', { outerName: 'config', kind: 'configMap', uniqueName: 'kubernetes.io/configmap/u1-config', path: '/t/config', readOnly: true }],
        ]),
      ],
    ]);
    let driverDown = false;
    const lines: [LogLevel, string, LogFields | undefined][] = [];
    const provider = new StatsProvider({
      nodeName: 'node-a',
      runtime,
      podLogsDir: dir,
      now: () => 1_000,
      log: (level, message, fields) => lines.push([level, message, fields]),
      volumes: { mountedVolumes: (uid) => mounted.get(uid) ?? new Map() },
      csiVolumeStats: async () => {
        if (driverDown) throw new Error('rpc error: code = Unavailable desc = connection refused');
        return { availableBytes: 10, capacityBytes: 20, usedBytes: 10, inodesFree: 0, inodes: 0, inodesUsed: 0 };
      },
    });
    const pod = { uid: 'u1', namespace: 'shop', name: 'web' };
    expect(provider.podVolumeStats('u1')).toEqual([]);

    expect(await provider.calculateVolumeStats([pod])).toEqual({ measured: 2, failed: 0 });
    const first = provider.podVolumeStats('u1');
    expect(first.map((v) => [v.name, v.pvcRef?.name])).toEqual([
      ['local', 'local-claim'],
      ['csi', 'csi-claim'],
    ]);
    expect(first[0]!.capacityBytes).toBeGreaterThan(0);
    expect(first[1]).toMatchObject({ capacityBytes: 20, usedBytes: 10, time: 1_000 });

    driverDown = true;
    expect(await provider.calculateVolumeStats([pod])).toEqual({ measured: 1, failed: 1 });
    expect(await provider.calculateVolumeStats([pod])).toEqual({ measured: 1, failed: 1 });
    expect(provider.podVolumeStats('u1').map((v) => v.name)).toEqual(['local']);
    const told = lines.filter(([, message]) => message === 'Failed to calculate volume metrics');
    expect(told).toEqual([['warn', 'Failed to calculate volume metrics', { pod: 'shop/web', podUID: 'u1', volumeName: 'csi', err: 'rpc error: code = Unavailable desc = connection refused' }]]);

    // Back: measured again; a later failure is said again.
    driverDown = false;
    await provider.calculateVolumeStats([pod]);
    expect(provider.allPodVolumeStats().map((v) => v.name)).toEqual(['local', 'csi']);
    driverDown = true;
    await provider.calculateVolumeStats([pod]);
    expect(lines.filter(([, message]) => message === 'Failed to calculate volume metrics')).toHaveLength(2);

    // A pod the node no longer runs is forgotten.
    await provider.calculateVolumeStats([]);
    expect(provider.allPodVolumeStats()).toEqual([]);
  });
});
