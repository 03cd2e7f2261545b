/**
 * The node's cgroups (cm/containerManager.ts, cm/open.ts) over a plain tree laid out as cgroup v2:
 * kubepods with allocatable, the QoS cgroups, each pod's own cgroup before its sandbox, removal of
 * a terminated pod's and of orphans' cgroups, and how the agent opens it. Weights as
 * pkg/kubelet/cm/cgroup_manager_linux.go getCPUWeight converts shares: 1 + (shares−2)·9999/262142.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../src/api/types.ts';
import { type Cgroups, openCgroups } from '../../src/cm/cgroupfs.ts';
import { ContainerManager, type ContainerManagerDeps, PodCgroupError, createNodeCgroups } from '../../src/cm/containerManager.ts';
import { SIM_CGROUP_DIR, openNodeCgroups } from '../../src/cm/open.ts';
import type { LogFields, LogLevel, Logger } from '../../src/log.ts';
import { container, makePod } from '../support/pods.ts';

const Mi = 2 ** 20;
const Gi = 2 ** 30;
/** The huge page sizes of this project's machines (/sys/kernel/mm/hugepages: 1048576kB and 2048kB). */
const HOST_SIZES = ['1GB', '2MB'];

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
const tempDir = async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-cm-'));
  dirs.push(dir);
  return dir;
};
const read = async (...parts: string[]) => (await readFile(path.join(...parts), 'utf8')).trim();

type Resources = NonNullable<Container['resources']>;
const podWith = (uid: string, ...resources: Resources[]): Pod =>
  makePod(`p-${uid.slice(0, 4)}`, { containers: resources.map((r, i) => container(`c${i}`, { resources: r })) }, uid);
const exact = (cpu: string, memory: string): Resources => ({ requests: { cpu, memory }, limits: { cpu, memory } });

// UIDs as the API server gives them (UUIDs).
const B1 = 'b1b1b1b1-0000-4000-8000-000000000001';
const B2 = 'b2b2b2b2-0000-4000-8000-000000000002';
const G1 = '91919191-0000-4000-8000-000000000003';
const E1 = 'e1e1e1e1-0000-4000-8000-000000000004';

/** Burstable, 250m requested. */
const burstable1 = podWith(B1, { requests: { cpu: '250m', memory: '64Mi' } });
/** Burstable, 500m requested, limits of 1 CPU and 256Mi. */
const burstable2 = podWith(B2, { requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '1', memory: '256Mi' } });
/** Guaranteed 2 × (100m, 64Mi). */
const guaranteed = podWith(G1, exact('100m', '64Mi'), exact('100m', '64Mi'));
const bestEffort = makePod('be', { containers: [container('app')] }, E1);

interface Logged {
  level: LogLevel;
  message: string;
  fields?: LogFields;
}
const recordingLog = () => {
  const lines: Logged[] = [];
  const log: Logger = (level, message, fields) => void lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { lines, log };
};

/** A fake v2 root under a temp dir and a ContainerManager over it. */
async function setUp(overrides: Partial<ContainerManagerDeps> & { active?: Pod[] } = {}) {
  const root = await tempDir();
  await writeFile(path.join(root, 'cgroup.controllers'), 'cpuset cpu io memory hugetlb pids\n');
  const cgroups = overrides.cgroups ?? (await openCgroups(root));
  const active: Pod[] = overrides.active ?? [];
  const { lines, log } = recordingLog();
  const deps: ContainerManagerDeps = {
    cgroups,
    cgroupRoot: '/',
    podPidsLimit: 100,
    hugePageSizes: HOST_SIZES,
    enforcePods: true,
    capacity: { milliCpu: 4000, memoryBytes: 8 * Gi },
    reserved: { cpu: 500, memory: 1 * Gi },
    activePods: () => active,
    log,
    ...overrides,
  };
  const manager = new ContainerManager(deps);
  /** What the agent does before it builds the node (open.ts): kubepods and the QoS cgroups. */
  const start = () => createNodeCgroups(deps);
  return { root, cgroups, active, manager, lines, start };
}

describe('createNodeCgroups: kubepods and the QoS cgroups', () => {
  it('kubepods gets the allocatable (3500m → 3584 shares, weight 137; 7Gi), burstable the Burstable pods\' requests once one starts, besteffort the minimum', async () => {
    const { root, manager, start } = await setUp({ active: [burstable1, burstable2, guaranteed, bestEffort] });
    await start();
    expect(await read(root, 'kubepods', 'cpu.weight')).toBe('137');
    expect(await read(root, 'kubepods', 'memory.max')).toBe(String(7 * Gi));
    expect(await read(root, 'kubepods', 'cpu.max')).toBe('max 100000');
    // Made before any pod is admitted: no Burstable pod, 2 shares → weight 1.
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('1');
    await manager.ensurePod(burstable1);
    // 250m + 500m = 750m → 768 shares → weight 30; the Guaranteed and BestEffort pods do not count.
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('30');
    expect(await read(root, 'kubepods', 'burstable', 'memory.max')).toBe('max');
    // 2 shares → weight 1.
    expect(await read(root, 'kubepods', 'besteffort', 'cpu.weight')).toBe('1');
    expect(await read(root, 'kubepods', 'besteffort', 'memory.max')).toBe('max');
    for (const level of ['', 'kubepods']) expect(await read(root, level, 'cgroup.subtree_control')).toContain('memory');
  });

  it('not enforcing pods: kubepods gets the capacity (4096 shares, weight 157; 8Gi); no Burstable pods: burstable weight 1', async () => {
    const { root, start } = await setUp({ enforcePods: false });
    await start();
    expect(await read(root, 'kubepods', 'cpu.weight')).toBe('157');
    expect(await read(root, 'kubepods', 'memory.max')).toBe(String(8 * Gi));
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('1');
  });

  it('--cgroup-root /statelet: the hierarchy under it', async () => {
    const { root, manager, start } = await setUp({ cgroupRoot: '/statelet' });
    await start();
    expect(existsSync(path.join(root, 'statelet', 'kubepods', 'burstable'))).toBe(true);
    expect(existsSync(path.join(root, 'statelet', 'kubepods', 'besteffort'))).toBe(true);
    expect(manager.parentOf(burstable1)).toBe(`/statelet/kubepods/burstable/pod${B1}`);
    expect(manager.parentOf(guaranteed)).toBe(`/statelet/kubepods/pod${G1}`);
  });
});

describe('ContainerManager.ensurePod', () => {
  it('makes a Burstable pod\'s cgroup under burstable with its settings, the burstable shares counting it', async () => {
    const { root, manager, active, start } = await setUp({ active: [burstable1] });
    await start();
    await manager.ensurePod(burstable1);
    // 250m → 256 shares → weight 10.
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('10');
    await manager.ensurePod(burstable2);
    const dir = path.join(root, 'kubepods', 'burstable', `pod${B2}`);
    expect(manager.parentOf(burstable2)).toBe(`/kubepods/burstable/pod${B2}`);
    // 500m → 512 shares → weight 20; its one container has both limits: quota and memory.
    expect(await read(dir, 'cpu.weight')).toBe('20');
    expect(await read(dir, 'cpu.max')).toBe('100000 100000');
    expect(await read(dir, 'memory.max')).toBe(String(256 * Mi));
    expect(await read(dir, 'pids.max')).toBe('100');
    // Not yet among the active pods, yet counted: 250m + 500m → 768 → weight 30.
    expect(active).toEqual([burstable1]);
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('30');
  });

  it('a burst of pod starts reads the active pods once or twice, not once per pod; the shares count every pod of the burst', async () => {
    let reads = 0;
    const active: Pod[] = [];
    const { root, manager, start } = await setUp({ activePods: () => (reads++, active) });
    await start();
    // The pods are active (admitted, being synced) when their cgroups are made, as in the agent.
    const burst = Array.from({ length: 20 }, (_, i) => podWith(`b3b3b3b3-0000-4000-8000-0000000000${String(i).padStart(2, '0')}`, { requests: { cpu: '100m' } }));
    active.push(...burst);
    reads = 0;
    await Promise.all(burst.map((pod) => manager.ensurePod(pod)));
    expect(reads).toBeGreaterThan(0);
    expect(reads).toBeLessThanOrEqual(2);
    // 20 × 100m = 2000m → 2048 shares → weight 79.
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('79');
    // Two go at once: their removals share the update too (1800m → 1843 shares → weight 71).
    reads = 0;
    await Promise.all(burst.slice(0, 2).map((pod) => (active.splice(active.indexOf(pod), 1), manager.destroyPod(pod))));
    expect(reads).toBeLessThanOrEqual(2);
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('71');
  });

  it('a Guaranteed pod right under kubepods (204 shares → weight 8, cpu.max 20000 100000, 128Mi); a BestEffort pod under besteffort (weight 1, no limits)', async () => {
    const { root, manager, start } = await setUp();
    await start();
    await manager.ensurePod(guaranteed);
    await manager.ensurePod(bestEffort);
    const g = path.join(root, 'kubepods', `pod${G1}`);
    expect(await read(g, 'cpu.weight')).toBe('8');
    expect(await read(g, 'cpu.max')).toBe('20000 100000');
    expect(await read(g, 'memory.max')).toBe('134217728');
    expect(await read(g, 'pids.max')).toBe('100');
    const e = path.join(root, 'kubepods', 'besteffort', `pod${E1}`);
    expect(await read(e, 'cpu.weight')).toBe('1');
    expect(await read(e, 'cpu.max')).toBe('max 100000');
    expect(await read(e, 'memory.max')).toBe('max');
    expect(await read(e, 'pids.max')).toBe('100');
    // Neither is Burstable: the burstable shares stay at the minimum.
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('1');
  });

  it('each pod cgroup limits huge pages: its requests of a size, 0 for the sizes it does not ask for (hugetlb offered)', async () => {
    const { root, manager, start } = await setUp();
    await start();
    const huge = podWith('a1a1a1a1-0000-4000-8000-000000000005', {
      requests: { cpu: '100m', memory: '64Mi', 'hugepages-2Mi': '16Mi' },
      limits: { cpu: '100m', memory: '64Mi', 'hugepages-2Mi': '16Mi' },
    });
    await manager.ensurePod(huge);
    await manager.ensurePod(bestEffort);
    const dir = path.join(root, 'kubepods', `pod${huge.metadata.uid}`);
    expect(await read(dir, 'hugetlb.2MB.max')).toBe(String(16 * Mi));
    expect(await read(dir, 'hugetlb.1GB.max')).toBe('0');
    const e = path.join(root, 'kubepods', 'besteffort', `pod${E1}`);
    expect([await read(e, 'hugetlb.2MB.max'), await read(e, 'hugetlb.1GB.max')]).toEqual(['0', '0']);
  });

  it('an existing pod cgroup is left as it is', async () => {
    const { root, manager, start } = await setUp({ active: [burstable2] });
    await start();
    await manager.ensurePod(burstable2);
    const weight = path.join(root, 'kubepods', 'burstable', `pod${B2}`, 'cpu.weight');
    await writeFile(weight, '77');
    await manager.ensurePod(burstable2);
    expect(await read(weight)).toBe('77');
  });

  it('a cgroup that cannot be made: PodCgroupError with the kubelet\'s message and the filesystem\'s cause', async () => {
    const { root, manager, start } = await setUp();
    await start();
    // The burstable cgroup replaced by a file: nothing can be made or written under it.
    await rm(path.join(root, 'kubepods', 'burstable'), { recursive: true });
    await writeFile(path.join(root, 'kubepods', 'burstable'), 'not a cgroup');
    const err = await manager.ensurePod(burstable1).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(PodCgroupError);
    expect((err as Error).name).toBe('PodCgroupError');
    expect((err as Error).message).toMatch(new RegExp(`^failed to ensure that the pod: ${B1} cgroups exist and are correctly applied: (ENOTDIR|EEXIST): `));
    expect((err as Error).message).toContain(path.join(root, 'kubepods', 'burstable'));
  });

  it('a Cgroups whose create rejects: the cause is given as it is', async () => {
    const calls: string[] = [];
    const failing: Cgroups = {
      version: 2,
      mount: '/nowhere',
      exists: async () => false,
      create: async (cgroup) => {
        calls.push(`create ${cgroup}`);
        throw new Error('EROFS: read-only file system');
      },
      update: async (cgroup) => void calls.push(`update ${cgroup}`),
      destroy: async () => undefined,
      children: async () => [],
      read: async () => '',
    };
    const { manager } = await setUp({ cgroups: failing });
    await expect(manager.ensurePod(guaranteed)).rejects.toThrow(new PodCgroupError(G1, 'EROFS: read-only file system'));
    // No Burstable pod: the burstable shares stay as createNodeCgroups made them, not written again.
    expect(calls).toEqual([`create /kubepods/pod${G1}`]);
  });

  it('createNodeCgroups rejects with the filesystem\'s error', async () => {
    const root = await tempDir();
    await writeFile(path.join(root, 'cgroup.controllers'), 'cpu memory pids\n');
    await writeFile(path.join(root, 'kubepods'), 'in the way');
    const { start } = await setUp({ cgroups: await openCgroups(root) });
    await expect(start()).rejects.toThrow(/EEXIST|ENOTDIR/);
  });
});

describe('ContainerManager.destroyPod', () => {
  it('removes the pod cgroup and recomputes the burstable shares from the pods still active', async () => {
    const { root, manager, active, start } = await setUp({ active: [burstable1, burstable2] });
    await start();
    await manager.ensurePod(burstable1);
    await manager.ensurePod(burstable2);
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('30');
    active.splice(active.indexOf(burstable2), 1);
    await manager.destroyPod(burstable2);
    expect(existsSync(path.join(root, 'kubepods', 'burstable', `pod${B2}`))).toBe(false);
    expect(existsSync(path.join(root, 'kubepods', 'burstable', `pod${B1}`))).toBe(true);
    // 250m left → 256 shares → weight 10.
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('10');
  });

  it('a Guaranteed or BestEffort pod coming or going leaves the burstable shares alone: the active pods are not summed for it', async () => {
    let sums = 0;
    const active = [burstable1, guaranteed, bestEffort];
    const { root, manager, start } = await setUp({ activePods: () => (sums++, active) });
    await start();
    await manager.ensurePod(burstable1);
    expect(sums).toBe(1);
    await manager.ensurePod(guaranteed);
    await manager.ensurePod(bestEffort);
    active.splice(1, 2);
    await manager.destroyPod(guaranteed);
    await manager.destroyPod(bestEffort);
    expect(sums).toBe(1);
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('10');
  });

  it('a pod cgroup already gone is fine', async () => {
    const { root, manager, start } = await setUp();
    await start();
    await expect(manager.destroyPod(guaranteed)).resolves.toBeUndefined();
    expect(await read(root, 'kubepods', 'burstable', 'cpu.weight')).toBe('1');
  });
});

describe('ContainerManager.removeOrphans', () => {
  it('removes the pod<uid> cgroups of orphans in all three QoS levels, and nothing else', async () => {
    const { root, cgroups, manager, lines, start } = await setUp();
    await start();
    const keepG = 'aaaa0000-0000-4000-8000-00000000000a';
    const goneG = 'aaaa0000-0000-4000-8000-00000000000b';
    const keepB = 'bbbb0000-0000-4000-8000-00000000000a';
    const goneB = 'bbbb0000-0000-4000-8000-00000000000b';
    const keepE = 'eeee0000-0000-4000-8000-00000000000a';
    const goneE = 'eeee0000-0000-4000-8000-00000000000b';
    for (const cgroup of [`/kubepods/pod${keepG}`, `/kubepods/pod${goneG}`, `/kubepods/burstable/pod${keepB}`, `/kubepods/burstable/pod${goneB}`, `/kubepods/besteffort/pod${keepE}`, `/kubepods/besteffort/pod${goneE}`, '/kubepods/not-a-pod']) {
      await cgroups.create(cgroup, { cpuShares: 2 });
    }
    await cgroups.create(`/kubepods/burstable/pod${goneB}/ctr1`, { cpuShares: 2 });
    const gone = new Set([goneG, goneB, goneE]);
    const asked: string[] = [];
    const removed = await manager.removeOrphans((uid) => {
      asked.push(uid);
      return gone.has(uid);
    });
    expect(removed).toBe(3);
    expect(asked.sort()).toEqual([keepG, goneG, keepB, goneB, keepE, goneE].sort());
    expect((await cgroups.children('/kubepods')).sort()).toEqual(['besteffort', 'burstable', 'not-a-pod', `pod${keepG}`].sort());
    expect(await cgroups.children('/kubepods/burstable')).toEqual([`pod${keepB}`]);
    expect(await cgroups.children('/kubepods/besteffort')).toEqual([`pod${keepE}`]);
    expect(existsSync(path.join(root, 'kubepods', 'burstable', `pod${goneB}`))).toBe(false);
    expect(lines.filter((l) => l.message === 'Removed the cgroup of a pod that is gone').map((l) => l.fields?.['podUID']).sort()).toEqual([...gone].sort());
  });

  it('no orphans: 0, nothing removed', async () => {
    const { cgroups, manager, start } = await setUp();
    await start();
    await manager.ensurePod(burstable1);
    expect(await manager.removeOrphans(() => false)).toBe(0);
    expect(await cgroups.exists(manager.parentOf(burstable1))).toBe(true);
  });

  it('a cgroup that cannot be removed is logged and not counted; the others are still removed', async () => {
    const destroyed: string[] = [];
    const children: Record<string, string[]> = {
      '/kubepods': ['burstable', 'besteffort', `pod${G1}`],
      '/kubepods/burstable': [`pod${B1}`],
      '/kubepods/besteffort': [],
    };
    const cgroups: Cgroups = {
      version: 2,
      mount: '/nowhere',
      exists: async () => true,
      create: async () => undefined,
      update: async () => undefined,
      destroy: async (cgroup) => {
        if (cgroup.endsWith(G1)) throw new Error('EBUSY: resource busy');
        destroyed.push(cgroup);
      },
      children: async (cgroup) => children[cgroup] ?? [],
      read: async () => '',
    };
    const { manager, lines } = await setUp({ cgroups });
    expect(await manager.removeOrphans(() => true)).toBe(1);
    expect(destroyed).toEqual([`/kubepods/burstable/pod${B1}`]);
    expect(lines.filter((l) => l.level === 'error').map((l) => l.fields?.['podUID'])).toEqual([G1]);
  });
});

describe('openNodeCgroups (open.ts)', () => {
  const baseConfig = (rootDir: string) => ({
    cgroupsPerQos: true,
    cgroupRoot: '',
    enforceNodeAllocatable: ['pods'],
    podMaxPids: -1,
    systemReserved: {} as Record<string, string>,
    kubeReserved: {} as Record<string, string>,
    rootDir,
  });
  const capacity = { milliCpu: 4000, memoryBytes: 8 * Gi };

  it('--cgroups-per-qos=false: no cgroups, said once', async () => {
    const { lines, log } = recordingLog();
    const rootDir = await tempDir();
    const settings = await openNodeCgroups({ config: { ...baseConfig(rootDir), cgroupsPerQos: false }, simulated: true, capacity, hugePageSizes: HOST_SIZES, log });
    expect(settings).toBeUndefined();
    expect(existsSync(path.join(rootDir, SIM_CGROUP_DIR))).toBe(false);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.message).toMatch(/--cgroups-per-qos=false/);
  });

  it('a runtime making cgroups through systemd: refused, naming SystemdCgroup', async () => {
    const { log } = recordingLog();
    const rootDir = await tempDir();
    await expect(openNodeCgroups({ config: baseConfig(rootDir), simulated: false, runtimeSystemdCgroup: true, capacity, hugePageSizes: HOST_SIZES, log })).rejects.toThrow(/SystemdCgroup/);
  });

  it('simulated: a v2 tree under <root-dir>/sim-cgroup, kubepods and the QoS cgroups made with the reserves of both flags taken off', async () => {
    const { lines, log } = recordingLog();
    const rootDir = await tempDir();
    const settings = await openNodeCgroups({
      config: { ...baseConfig(rootDir), systemReserved: { cpu: '500m', memory: '1Gi' }, kubeReserved: { cpu: '500m', memory: '512Mi' }, podMaxPids: 64 },
      simulated: true,
      capacity,
      hugePageSizes: HOST_SIZES,
      log,
    });
    const mount = path.join(rootDir, SIM_CGROUP_DIR);
    expect(await read(mount, 'cgroup.controllers')).toBe('cpuset cpu io memory hugetlb pids');
    expect(settings!.cgroups.version).toBe(2);
    expect(settings!.cgroupRoot).toBe('/');
    // 4000m − 1000m = 3000m → 3072 shares → weight 118; 8Gi − 1.5Gi.
    expect(await read(mount, 'kubepods', 'cpu.weight')).toBe('118');
    expect(await read(mount, 'kubepods', 'memory.max')).toBe(String(8 * Gi - 1.5 * Gi));
    expect(await read(mount, 'kubepods', 'burstable', 'cpu.weight')).toBe('1');
    expect(await read(mount, 'kubepods', 'besteffort', 'cpu.weight')).toBe('1');
    expect(lines.some((l) => l.level === 'info' && l.fields?.['mount'] === mount && l.fields?.['version'] === 2 && l.fields?.['kubepods'] === '/kubepods')).toBe(true);

    // The node's manager over it: --pod-max-pids and the huge page sizes reach the pod cgroups.
    const manager = new ContainerManager({ ...settings!, activePods: () => [burstable1, guaranteed], log });
    await manager.ensurePod(burstable1);
    await manager.ensurePod(guaranteed);
    expect(await read(mount, 'kubepods', 'burstable', 'cpu.weight')).toBe('10');
    expect(await read(mount, 'kubepods', `pod${G1}`, 'pids.max')).toBe('64');
    // The simulated root offers hugetlb: the host's page sizes, none asked, each denied.
    expect([await read(mount, 'kubepods', `pod${G1}`, 'hugetlb.1GB.max'), await read(mount, 'kubepods', `pod${G1}`, 'hugetlb.2MB.max')]).toEqual(['0', '0']);
  });

  it('simulated, --enforce-node-allocatable without pods: kubepods gets the capacity', async () => {
    const { log } = recordingLog();
    const rootDir = await tempDir();
    const settings = await openNodeCgroups({ config: { ...baseConfig(rootDir), enforceNodeAllocatable: [], systemReserved: { cpu: '500m', memory: '1Gi' } }, simulated: true, capacity, hugePageSizes: HOST_SIZES, log });
    expect(settings!.enforcePods).toBe(false);
    expect(await read(rootDir, SIM_CGROUP_DIR, 'kubepods', 'memory.max')).toBe(String(8 * Gi));
    expect(await read(rootDir, SIM_CGROUP_DIR, 'kubepods', 'cpu.weight')).toBe('157');
  });

  it('simulated with --cgroup-root /statelet: kubepods under it', async () => {
    const { log } = recordingLog();
    const rootDir = await tempDir();
    const settings = await openNodeCgroups({ config: { ...baseConfig(rootDir), cgroupRoot: '/statelet' }, simulated: true, capacity, hugePageSizes: HOST_SIZES, log });
    expect(settings!.cgroupRoot).toBe('/statelet');
    expect(existsSync(path.join(rootDir, SIM_CGROUP_DIR, 'statelet', 'kubepods', 'besteffort'))).toBe(true);
  });

  it('cgroups that cannot be made: a warning, and none kept (it never claims a limit it did not set)', async () => {
    const { lines, log } = recordingLog();
    const rootDir = await tempDir();
    // kubepods taken by a file: the tree cannot be made.
    const mount = path.join(rootDir, SIM_CGROUP_DIR);
    await mkdir(mount, { recursive: true });
    await writeFile(path.join(mount, 'kubepods'), 'in the way');
    const settings = await openNodeCgroups({ config: baseConfig(rootDir), simulated: true, capacity, hugePageSizes: HOST_SIZES, log });
    expect(settings).toBeUndefined();
    const warnings = lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toMatch(/Cannot make the node's cgroups/);
    expect(warnings[0]!.fields?.['mount']).toBe(mount);
  });
});
