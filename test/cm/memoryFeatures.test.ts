/**
 * The machine's memory cgroup features as the agent finds them at start (cm/memoryFeatures.ts),
 * over plain trees laid out as the host's: the cgroup version, the swap controller
 * (kuberuntime_container_linux.go swapControllerAvailable), the huge page sizes (libcontainer
 * HugePageSizes), and the kubelet's refusal to run with swap on (validateSwapConfiguration).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type HostMemoryPaths,
  hostHugePageSizes,
  hostMemoryFeatures,
  hugePageSizeOfSysfsDir,
  readProcSwaps,
  simMemoryFeatures,
  swapOnRefusal,
  unifiedCgroupOf,
} from '../../src/cm/memoryFeatures.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
const tempDir = async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-memfeatures-'));
  dirs.push(dir);
  return dir;
};

/** A host tree: its cgroup mount (v1 hierarchies or a v2 root), /sys/kernel/mm/hugepages, /proc/self/cgroup. */
async function host(layout: { version: 1 | 2; memsw?: boolean; swapMax?: boolean; hugepages?: string[]; selfCgroup?: string }): Promise<HostMemoryPaths> {
  const root = await tempDir();
  const paths: HostMemoryPaths = { cgroupMount: path.join(root, 'cgroup'), hugepagesDir: path.join(root, 'hugepages'), selfCgroup: path.join(root, 'self-cgroup') };
  await mkdir(paths.cgroupMount);
  if (layout.version === 1) {
    for (const controller of ['cpu', 'memory', 'pids']) await mkdir(path.join(paths.cgroupMount, controller));
    if (layout.memsw) await writeFile(path.join(paths.cgroupMount, 'memory', 'memory.memsw.limit_in_bytes'), '9223372036854771712\n');
  } else {
    await writeFile(path.join(paths.cgroupMount, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
    const own = path.join(paths.cgroupMount, 'system.slice', 'statelet.service');
    await mkdir(own, { recursive: true });
    if (layout.swapMax) await writeFile(path.join(own, 'memory.swap.max'), 'max\n');
  }
  if (layout.selfCgroup !== undefined) await writeFile(paths.selfCgroup, layout.selfCgroup);
  if (layout.hugepages) for (const dir of layout.hugepages) await mkdir(path.join(paths.hugepagesDir, dir), { recursive: true });
  return paths;
}

const V1_SELF = '9:name=systemd:/\n4:memory:/process_api/x\n1:cpu:/\n0::/\n';
const V2_SELF = '0::/system.slice/statelet.service\n';
const HUGEPAGES = ['hugepages-2048kB', 'hugepages-1048576kB'];

describe('hostMemoryFeatures', () => {
  it.each<[string, Parameters<typeof host>[0], { cgroupVersion: 1 | 2; swapController: boolean; hugePageSizes: string[] }]>([
    ['v1 with swap accounting (memory.memsw.limit_in_bytes at the root), 2 MiB and 1 GiB pages: this project\'s machines', { version: 1, memsw: true, hugepages: HUGEPAGES, selfCgroup: V1_SELF }, { cgroupVersion: 1, swapController: true, hugePageSizes: ['1GB', '2MB'] }],
    ['v1 without swap accounting (swapaccount=0)', { version: 1, hugepages: HUGEPAGES, selfCgroup: V1_SELF }, { cgroupVersion: 1, swapController: false, hugePageSizes: ['1GB', '2MB'] }],
    ['v2, memory.swap.max in the agent\'s own cgroup', { version: 2, swapMax: true, selfCgroup: V2_SELF }, { cgroupVersion: 2, swapController: true, hugePageSizes: [] }],
    ['v2 without it (the root never has it)', { version: 2, selfCgroup: V2_SELF }, { cgroupVersion: 2, swapController: false, hugePageSizes: [] }],
    ['v2, /proc/self/cgroup unreadable: no swap controller assumed', { version: 2, swapMax: true }, { cgroupVersion: 2, swapController: false, hugePageSizes: [] }],
  ])('%s', async (_case, layout, features) => expect(await hostMemoryFeatures(await host(layout))).toEqual(features));
});

describe('huge page sizes from /sys/kernel/mm/hugepages', () => {
  it.each<[string, string | null]>([
    ['hugepages-2048kB', '2MB'],
    ['hugepages-1048576kB', '1GB'],
    ['hugepages-64kB', '64KB'],
    ['hugepages-32768kB', '32MB'],
    ['hugepages-1536kB', null],
    ['nr_hugepages', null],
  ])('%s: %s', (dir, size) => expect(hugePageSizeOfSysfsDir(dir)).toBe(size));

  it('by directory name, other entries skipped; a missing directory: none', async () => {
    const paths = await host({ version: 1, hugepages: [...HUGEPAGES, 'hugepages-64kB', 'nothing'] });
    expect(await hostHugePageSizes(paths.hugepagesDir)).toEqual(['1GB', '2MB', '64KB']);
    expect(await hostHugePageSizes(path.join(paths.hugepagesDir, 'absent'))).toEqual([]);
  });
});

describe('unifiedCgroupOf (/proc/self/cgroup)', () => {
  it.each<[string, string, string | null]>([
    ['v2', V2_SELF, '/system.slice/statelet.service'],
    ['hybrid v1: the empty unified line is the root', V1_SELF, '/'],
    ['no unified line', '4:memory:/x\n', null],
  ])('%s', (_case, text, cgroup) => expect(unifiedCgroupOf(text)).toBe(cgroup));
});

describe('sim:// machine', () => {
  it('cgroup v2 with the swap controller, the page sizes it is given', () => {
    expect(simMemoryFeatures(['2MB'])).toEqual({ cgroupVersion: 2, swapController: true, hugePageSizes: ['2MB'] });
  });
});

describe('swapOnRefusal (--fail-swap-on, validateSwapConfiguration)', () => {
  const HEADER = 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n';
  const DEVICE = '/dev/dm-1                               partition\t16760828\t0\t\t-2\n';
  it.each<[string, boolean, string | null, string | null]>([
    ['no /proc/swaps, fail-swap-on', true, null, null],
    ['only the header, fail-swap-on', true, HEADER, null],
    ['only the header, no fail-swap-on', false, HEADER, null],
    ['a device, no fail-swap-on: runs', false, HEADER + DEVICE, null],
    [
      'a device, fail-swap-on: the kubelet\'s message, with the lines as Go prints them',
      true,
      HEADER + DEVICE,
      `running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false. /proc/swaps contained: [${HEADER.trim()} ${DEVICE.trim()}]`,
    ],
  ])('%s', (_case, failSwapOn, text, refusal) => expect(swapOnRefusal(failSwapOn, text)).toBe(refusal));

  it('readProcSwaps: the text, or null for a file that does not exist', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'swaps'), HEADER);
    expect(await readProcSwaps(path.join(dir, 'swaps'))).toBe(HEADER);
    expect(await readProcSwaps(path.join(dir, 'absent'))).toBeNull();
  });
});
