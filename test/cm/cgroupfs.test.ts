/**
 * The cgroupfs driver (cm/cgroupfs.ts) over plain directory trees laid out as cgroup v1 (one
 * hierarchy per controller) and v2 (one unified tree), and, as root on a cgroup v1 host, once
 * against the real cgroup filesystem. File names as pkg/kubelet/cm/cgroup_v1_manager_linux.go and
 * cgroup_v2_manager_linux.go read and write them; the v2 weight as pkg/kubelet/cm/cgroup_manager_linux.go
 * getCPUWeight converts shares, 1 + (shares−2)·9999/262142; what a new cgroup shows as the kernel
 * gives it (Documentation/admin-guide/cgroup-v2.rst: `max`, weight 100; on v1 an unlimited
 * memory.limit_in_bytes is include/linux/page_counter.h PAGE_COUNTER_MAX pages, 9223372036854771712).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cgroupFiles, cgroupV1Refusal, openCgroups, sharesToWeight } from '../../src/cm/cgroupfs.ts';
import type { CgroupConfig } from '../../src/cm/podResources.ts';

const Mi = 2 ** 20;
const POD = '/kubepods/burstable/podX';
const GUARANTEED_2X: CgroupConfig = { cpuShares: 204, cpuQuota: 20_000, cpuPeriod: 100_000, memoryLimitBytes: 134_217_728, pidsLimit: 100 };
const V2_ALL = 'cpuset cpu io memory hugetlb pids';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
const tempDir = async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-cgroupfs-'));
  dirs.push(dir);
  return dir;
};
const read = async (...parts: string[]) => (await readFile(path.join(...parts), 'utf8')).trim();
const isThere = (file: string) => access(file).then(() => true, () => false);

/** A plain tree laid out as cgroup v1: a hierarchy per controller, each with its cgroup.procs. */
async function fakeV1(controllers = ['cpu', 'memory', 'pids', 'cpuset']): Promise<string> {
  const root = await tempDir();
  for (const controller of controllers) {
    await mkdir(path.join(root, controller));
    await writeFile(path.join(root, controller, 'cgroup.procs'), '');
  }
  await writeFile(path.join(root, 'cpuset', 'cpuset.cpus'), '0-1\n');
  await writeFile(path.join(root, 'cpuset', 'cpuset.mems'), '0\n');
  return root;
}

/** A plain tree laid out as cgroup v2: the root offers `controllers`. */
async function fakeV2(controllers = V2_ALL): Promise<string> {
  const root = await tempDir();
  await writeFile(path.join(root, 'cgroup.controllers'), `${controllers}\n`);
  return root;
}

/** cgroupFiles as `controller/file → value`, whatever order it lists them in. */
const filesOf = (version: 1 | 2, config: CgroupConfig) => Object.fromEntries(cgroupFiles(version, config).map(({ controller, file, value }) => [`${controller}/${file}`, value]));

describe('sharesToWeight (getCPUWeight): 2…262144 shares onto 1…10000', () => {
  it.each([
    [2, 1],
    [204, 8],
    [256, 10],
    [1024, 39],
    [262_144, 10_000],
  ])('%d shares: weight %d', (shares, weight) => expect(sharesToWeight(shares)).toBe(weight));
});

describe('cgroupFiles', () => {
  it.each<[string, CgroupConfig, Record<string, string>]>([
    ['Guaranteed 2 × (100m, 64Mi) with pids', GUARANTEED_2X, { 'cpu/cpu.shares': '204', 'cpu/cpu.cfs_quota_us': '20000', 'cpu/cpu.cfs_period_us': '100000', 'memory/memory.limit_in_bytes': '134217728', 'pids/pids.max': '100' }],
    ['shares only', { cpuShares: 2 }, { 'cpu/cpu.shares': '2' }],
    ['quota 0 (no CPU limit): no quota file', { cpuShares: 1024, cpuQuota: 0, cpuPeriod: 100_000 }, { 'cpu/cpu.shares': '1024', 'cpu/cpu.cfs_period_us': '100000' }],
    ['quota -1 (cpuCFSQuota off): written as -1', { cpuQuota: -1, cpuPeriod: 100_000 }, { 'cpu/cpu.cfs_quota_us': '-1', 'cpu/cpu.cfs_period_us': '100000' }],
    ['memory 0: unlimited (-1)', { memoryLimitBytes: 0 }, { 'memory/memory.limit_in_bytes': '-1' }],
    ['pidsLimit 100', { pidsLimit: 100 }, { 'pids/pids.max': '100' }],
    ['huge pages', { hugePageLimits: { '2MB': 8 * Mi, '1GB': 0 } }, { 'hugetlb/hugetlb.2MB.limit_in_bytes': '8388608', 'hugetlb/hugetlb.1GB.limit_in_bytes': '0' }],
    ['nothing', {}, {}],
  ])('v1, %s', (_case, config, files) => expect(filesOf(1, config)).toEqual(files));

  it.each<[string, CgroupConfig, Record<string, string>]>([
    ['Guaranteed 2 × (100m, 64Mi) with pids', GUARANTEED_2X, { 'cpu/cpu.weight': '8', 'cpu/cpu.max': '20000 100000', 'memory/memory.max': '134217728', 'pids/pids.max': '100' }],
    ['1024 shares', { cpuShares: 1024 }, { 'cpu/cpu.weight': '39' }],
    ['2 shares', { cpuShares: 2 }, { 'cpu/cpu.weight': '1' }],
    ['quota 0 with a period: max', { cpuShares: 1024, cpuQuota: 0, cpuPeriod: 100_000 }, { 'cpu/cpu.weight': '39', 'cpu/cpu.max': 'max 100000' }],
    ['quota -1: max', { cpuQuota: -1, cpuPeriod: 100_000 }, { 'cpu/cpu.max': 'max 100000' }],
    ['memory 0: max', { memoryLimitBytes: 0 }, { 'memory/memory.max': 'max' }],
    ['pidsLimit 100', { pidsLimit: 100 }, { 'pids/pids.max': '100' }],
    ['huge pages', { hugePageLimits: { '2MB': 8 * Mi, '1GB': 0 } }, { 'hugetlb/hugetlb.2MB.max': '8388608', 'hugetlb/hugetlb.1GB.max': '0' }],
    ['nothing', {}, {}],
  ])('v2, %s', (_case, config, files) => expect(filesOf(2, config)).toEqual(files));
});

describe('cgroup v1 over a plain tree', () => {
  it('is detected as v1 (no cgroup.controllers at the mount)', async () => {
    const root = await fakeV1();
    const cgroups = await openCgroups(root);
    expect(cgroups.version).toBe(1);
    expect(cgroups.mount).toBe(root);
  });

  it('create makes the cgroup in every hierarchy and writes each setting under its controller', async () => {
    const root = await fakeV1();
    const cgroups = await openCgroups(root);
    await cgroups.create(POD, GUARANTEED_2X);
    for (const controller of ['cpu', 'memory', 'pids', 'cpuset']) expect(await isThere(path.join(root, controller, POD))).toBe(true);
    expect(await read(root, 'cpu', POD, 'cpu.shares')).toBe('204');
    expect(await read(root, 'cpu', POD, 'cpu.cfs_quota_us')).toBe('20000');
    expect(await read(root, 'cpu', POD, 'cpu.cfs_period_us')).toBe('100000');
    expect(await read(root, 'memory', POD, 'memory.limit_in_bytes')).toBe('134217728');
    expect(await read(root, 'pids', POD, 'pids.max')).toBe('100');
    // Nothing of one controller lands in another's hierarchy.
    expect(await isThere(path.join(root, 'memory', POD, 'cpu.shares'))).toBe(false);
    expect(await isThere(path.join(root, 'cpu', POD, 'memory.limit_in_bytes'))).toBe(false);
  });

  it('a new cpuset cgroup gets its parent\'s cpus and mems at each level', async () => {
    const root = await fakeV1();
    const cgroups = await openCgroups(root);
    await cgroups.create(POD, { cpuShares: 2 });
    for (const level of ['/kubepods', '/kubepods/burstable', POD]) {
      expect(await read(root, 'cpuset', level, 'cpuset.cpus')).toBe('0-1');
      expect(await read(root, 'cpuset', level, 'cpuset.mems')).toBe('0');
    }
  });

  it('what the config leaves out stays as the kernel has it (no quota, no memory limit, no pids limit)', async () => {
    const root = await fakeV1();
    const cgroups = await openCgroups(root);
    await cgroups.create('/kubepods/besteffort', { cpuShares: 2 });
    expect(await read(root, 'cpu', 'kubepods/besteffort', 'cpu.shares')).toBe('2');
    expect(await read(root, 'cpu', 'kubepods/besteffort', 'cpu.cfs_quota_us')).toBe('-1');
    expect(await read(root, 'memory', 'kubepods/besteffort', 'memory.limit_in_bytes')).toBe('9223372036854771712');
    expect(await read(root, 'pids', 'kubepods/besteffort', 'pids.max')).toBe('max');
  });

  it('exists, children, read and update', async () => {
    const root = await fakeV1();
    const cgroups = await openCgroups(root);
    expect(await cgroups.exists(POD)).toBe(false);
    await cgroups.create(POD, GUARANTEED_2X);
    await cgroups.create('/kubepods/burstable/podY', { cpuShares: 2 });
    expect(await cgroups.exists(POD)).toBe(true);
    expect(await cgroups.exists('/kubepods/burstable')).toBe(true);
    expect((await cgroups.children('/kubepods/burstable')).sort()).toEqual(['podX', 'podY']);
    expect(await cgroups.children('/kubepods')).toEqual(['burstable']);
    expect(await cgroups.children('/nowhere')).toEqual([]);
    expect(await cgroups.read(POD, 'cpu.shares')).toBe('204');
    expect(await cgroups.read(POD, 'memory.limit_in_bytes')).toBe('134217728');
    expect(await cgroups.read(POD, 'cpuset.cpus')).toBe('0-1');

    await cgroups.update(POD, { cpuShares: 512 });
    expect(await cgroups.read(POD, 'cpu.shares')).toBe('512');
    expect(await cgroups.read(POD, 'cpu.cfs_quota_us')).toBe('20000');
    expect(await cgroups.read(POD, 'memory.limit_in_bytes')).toBe('134217728');
  });

  it('a cgroup missing from one hierarchy does not exist', async () => {
    const root = await fakeV1();
    const cgroups = await openCgroups(root);
    await cgroups.create(POD, { cpuShares: 2 });
    await rm(path.join(root, 'pids', POD), { recursive: true });
    expect(await cgroups.exists(POD)).toBe(false);
  });

  it('destroy removes the cgroup and its children from every hierarchy, files and all; a missing one is fine', async () => {
    const root = await fakeV1();
    const cgroups = await openCgroups(root);
    await cgroups.create(POD, GUARANTEED_2X);
    await cgroups.create(`${POD}/container1`, { cpuShares: 102 });
    await cgroups.create('/kubepods/besteffort', { cpuShares: 2 });
    await cgroups.destroy('/kubepods/burstable');
    expect(await cgroups.exists('/kubepods/burstable')).toBe(false);
    for (const controller of ['cpu', 'memory', 'pids', 'cpuset']) expect(await isThere(path.join(root, controller, 'kubepods', 'burstable'))).toBe(false);
    expect(await cgroups.children('/kubepods')).toEqual(['besteffort']);
    expect(await cgroups.exists('/kubepods/besteffort')).toBe(true);
    await expect(cgroups.destroy('/kubepods/burstable')).resolves.toBeUndefined();
    await expect(cgroups.destroy('/never/made')).resolves.toBeUndefined();
  });
});

describe('cgroup v2 over a plain tree', () => {
  it('is detected as v2 (cgroup.controllers at the mount)', async () => {
    const root = await fakeV2();
    expect((await openCgroups(root)).version).toBe(2);
  });

  it('create writes cpu.weight, cpu.max, memory.max and pids.max in the one directory', async () => {
    const root = await fakeV2();
    const cgroups = await openCgroups(root);
    await cgroups.create(POD, GUARANTEED_2X);
    expect(await read(root, POD, 'cpu.weight')).toBe('8');
    expect(await read(root, POD, 'cpu.max')).toBe('20000 100000');
    expect(await read(root, POD, 'memory.max')).toBe('134217728');
    expect(await read(root, POD, 'pids.max')).toBe('100');
  });

  it.each<[string, CgroupConfig, Record<string, string>]>([
    ['1024 shares, a period without a quota', { cpuShares: 1024, cpuPeriod: 100_000 }, { 'cpu.weight': '39', 'cpu.max': 'max 100000', 'memory.max': 'max', 'pids.max': 'max' }],
    ['2 shares only', { cpuShares: 2 }, { 'cpu.weight': '1', 'cpu.max': 'max 100000', 'memory.max': 'max', 'pids.max': 'max' }],
    ['a 50 ms quota and 128Mi', { cpuShares: 512, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimitBytes: 128 * Mi }, { 'cpu.weight': '20', 'cpu.max': '50000 100000', 'memory.max': '134217728', 'pids.max': 'max' }],
  ])('%s: the files read back as the kernel would show them', async (_case, config, files) => {
    const root = await fakeV2();
    const cgroups = await openCgroups(root);
    await cgroups.create(POD, config);
    for (const [file, value] of Object.entries(files)) expect(await cgroups.read(POD, file)).toBe(value);
  });

  it('each parent enables the controllers the root offers in its cgroup.subtree_control; the new cgroup itself enables none', async () => {
    const root = await fakeV2();
    const cgroups = await openCgroups(root);
    await cgroups.create(POD, { cpuShares: 2 });
    for (const level of ['', 'kubepods', 'kubepods/burstable']) expect((await read(root, level, 'cgroup.subtree_control')).split(/\s+/).sort()).toEqual(V2_ALL.split(' ').sort());
    expect(await isThere(path.join(root, POD, 'cgroup.subtree_control'))).toBe(false);
  });

  it('only the controllers the root offers are enabled', async () => {
    const root = await fakeV2('cpu memory pids rdma');
    const cgroups = await openCgroups(root);
    await cgroups.create('/kubepods/besteffort', { cpuShares: 2 });
    for (const level of ['', 'kubepods']) expect((await read(root, level, 'cgroup.subtree_control')).split(/\s+/).sort()).toEqual(['cpu', 'memory', 'pids']);
  });

  it('exists, children, read, update and destroy (removing the children and files too)', async () => {
    const root = await fakeV2();
    const cgroups = await openCgroups(root);
    expect(await cgroups.exists(POD)).toBe(false);
    await cgroups.create(POD, GUARANTEED_2X);
    await cgroups.create(`${POD}/container1`, { cpuShares: 102 });
    await cgroups.create('/kubepods/besteffort', { cpuShares: 2 });
    expect(await cgroups.exists(POD)).toBe(true);
    expect((await cgroups.children('/kubepods')).sort()).toEqual(['besteffort', 'burstable']);
    expect(await cgroups.children(POD)).toEqual(['container1']);
    expect(await cgroups.children('/nowhere')).toEqual([]);

    await cgroups.update(POD, { cpuShares: 1024 });
    expect(await cgroups.read(POD, 'cpu.weight')).toBe('39');
    expect(await cgroups.read(POD, 'cpu.max')).toBe('20000 100000');

    await cgroups.destroy('/kubepods/burstable');
    expect(await cgroups.exists('/kubepods/burstable')).toBe(false);
    expect(existsSync(path.join(root, 'kubepods', 'burstable'))).toBe(false);
    expect(await cgroups.children('/kubepods')).toEqual(['besteffort']);
    await expect(cgroups.destroy(POD)).resolves.toBeUndefined();
  });
});

/**
 * The real cgroup filesystem of a cgroup v1 host, as root: the test makes one cgroup of its own
 * under each hierarchy's root and removes it. Without root it is skipped loudly, and under CI=true
 * it fails instead (CI runs as root).
 */
function realV1OrSkip(): boolean {
  const what = 'the cgroupfs test against the host\'s real cgroup v1 filesystem';
  if (process.getuid?.() !== 0) {
    const message = `${what} needs root to make cgroups; it is SKIPPED here — run it as root, as CI does`;
    if (process.env.CI === 'true') throw new Error(message.replace('it is SKIPPED here', 'CI must not skip it'));
    console.warn(`\n*** ${message} ***\n`);
    return false;
  }
  if (!existsSync('/sys/fs/cgroup/memory/cgroup.procs')) {
    console.warn(`\n*** ${what} needs a host with cgroup v1 controller mounts (/sys/fs/cgroup/memory); it is SKIPPED here ***\n`);
    return false;
  }
  return true;
}

describe.skipIf(!realV1OrSkip())('cgroup v1, the real cgroup filesystem (root)', () => {
  const MOUNT = '/sys/fs/cgroup';
  const name = `statelet-cmtest-${randomBytes(6).toString('hex')}`;
  const cgroup = `/${name}/pod${randomBytes(4).toString('hex')}`;

  /** Removes what the test made in every hierarchy, deepest first, whatever the code under test did. */
  afterEach(async () => {
    for (const entry of await readdir(MOUNT)) {
      const top = path.join(MOUNT, entry, name);
      if (!existsSync(top)) continue;
      await rmdir(path.join(MOUNT, entry, cgroup)).catch(() => undefined);
      await rmdir(top).catch(() => undefined);
    }
  });

  it('create makes it with its shares, memory limit and cpuset; read shows them; destroy removes it', async () => {
    const cgroups = await openCgroups(MOUNT);
    expect(cgroups.version).toBe(1);
    await cgroups.create(cgroup, { cpuShares: 512, memoryLimitBytes: 64 * Mi, pidsLimit: 50 });
    expect(await cgroups.exists(cgroup)).toBe(true);
    expect(existsSync(path.join(MOUNT, 'memory', cgroup))).toBe(true);
    expect(await cgroups.read(cgroup, 'cpu.shares')).toBe('512');
    expect(await cgroups.read(cgroup, 'memory.limit_in_bytes')).toBe(String(64 * Mi));
    expect(await read(MOUNT, 'pids', cgroup, 'pids.max')).toBe('50');
    // Without inherited cpus and mems no process could join a new cpuset cgroup.
    expect(await cgroups.read(cgroup, 'cpuset.cpus')).toBe(await read(MOUNT, 'cpuset', 'cpuset.cpus'));
    expect(await cgroups.read(cgroup, 'cpuset.mems')).toBe(await read(MOUNT, 'cpuset', 'cpuset.mems'));
    expect(await cgroups.children(`/${name}`)).toEqual([path.basename(cgroup)]);

    await cgroups.destroy(`/${name}`);
    expect(await cgroups.exists(cgroup)).toBe(false);
    expect(await cgroups.exists(`/${name}`)).toBe(false);
    for (const entry of await readdir(MOUNT)) expect(existsSync(path.join(MOUNT, entry, name))).toBe(false);
  });
});

describe('HugeTLB limits, written only where the hugetlb controller exists (maybeSetHugetlb)', () => {
  const HUGE: CgroupConfig = { cpuShares: 2, hugePageLimits: { '1GB': 0, '2MB': 8 * Mi } };

  it('v1 with a hugetlb hierarchy: hugetlb.<size>.limit_in_bytes in it', async () => {
    const root = await fakeV1(['cpu', 'memory', 'pids', 'cpuset', 'hugetlb']);
    const cgroups = await openCgroups(root);
    await cgroups.create(POD, HUGE);
    expect(await read(root, 'hugetlb', POD, 'hugetlb.2MB.limit_in_bytes')).toBe('8388608');
    expect(await cgroups.read(POD, 'hugetlb.1GB.limit_in_bytes')).toBe('0');
  });

  it('v1 without one (this project\'s machines: cpu,cpuacct,cpuset,memory,pids,… but no hugetlb): nothing written, no error', async () => {
    const root = await fakeV1();
    const cgroups = await openCgroups(root);
    await cgroups.create(POD, HUGE);
    expect(await read(root, 'cpu', POD, 'cpu.shares')).toBe('2');
    for (const controller of ['cpu', 'memory', 'pids', 'cpuset']) expect((await readdir(path.join(root, controller, POD))).filter((f) => f.startsWith('hugetlb'))).toEqual([]);
    expect(await isThere(path.join(root, 'hugetlb'))).toBe(false);
  });

  it('v2 with hugetlb in the root\'s cgroup.controllers: hugetlb.<size>.max', async () => {
    const root = await fakeV2();
    const cgroups = await openCgroups(root);
    await cgroups.create(POD, HUGE);
    expect(await read(root, POD, 'hugetlb.2MB.max')).toBe('8388608');
    expect(await read(root, POD, 'hugetlb.1GB.max')).toBe('0');
  });

  it('v2 without it: nothing written, the rest is', async () => {
    const root = await fakeV2('cpuset cpu io memory pids');
    const cgroups = await openCgroups(root);
    await cgroups.create(POD, HUGE);
    expect(await read(root, POD, 'cpu.weight')).toBe('1');
    expect((await readdir(path.join(root, POD))).filter((f) => f.startsWith('hugetlb'))).toEqual([]);
  });
});

describe('cgroupV1Refusal (failCgroupV1, validateKubeletOSConfiguration)', () => {
  it.each([
    [true, 1 as const, 'kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release'],
    [true, 2 as const, null],
    [false, 1 as const, null],
    [false, 2 as const, null],
  ])('failCgroupV1 %s on cgroup v%s', (fail, version, expected) => expect(cgroupV1Refusal(fail, version)).toBe(expected));
});
