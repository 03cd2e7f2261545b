/**
 * Reads what the Node reports about the machine (the kubelet gets it from cAdvisor's MachineInfo):
 * cores, memory, the size of the filesystem under --root-dir, huge pages, the machine and boot
 * ids, the kernel and the OS image. A file that cannot be read leaves its field empty; nothing
 * here stops the agent.
 */
import { readFileSync } from 'node:fs';
import { readFile, readdir, statfs } from 'node:fs/promises';
import os from 'node:os';
import { goArch } from './labels.ts';
import type { MachineInfo } from './nodeObject.ts';

async function readTrimmed(file: string): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    return '';
  }
}

/** PRETTY_NAME of os-release, as the node's osImage. */
function prettyName(osRelease: string): string {
  const line = osRelease.split('\n').find((l) => l.startsWith('PRETTY_NAME='));
  return line ? line.slice('PRETTY_NAME='.length).replace(/^"(.*)"$/, '$1') : '';
}

/** `hugepages-2048kB` (sysfs) → `hugepages-2Mi` (the resource name). */
function hugePageResource(dir: string): string | null {
  const kb = /^hugepages-(\d+)kB$/.exec(dir)?.[1];
  if (!kb) return null;
  const size = Number(kb);
  return size % (1024 * 1024) === 0 ? `hugepages-${size / 1024 / 1024}Gi` : size % 1024 === 0 ? `hugepages-${size / 1024}Mi` : `hugepages-${size}Ki`;
}

async function hugepages(): Promise<Record<string, number>> {
  const root = '/sys/kernel/mm/hugepages';
  const out: Record<string, number> = {};
  let dirs: string[] = [];
  try {
    dirs = await readdir(root);
  } catch {
    return out;
  }
  for (const dir of dirs) {
    const name = hugePageResource(dir);
    if (!name) continue;
    const pages = Number(await readTrimmed(`${root}/${dir}/nr_hugepages`)) || 0;
    out[name] = pages * Number(/(\d+)kB/.exec(dir)![1]) * 1024;
  }
  return out;
}

export async function readMachineInfo(rootDir: string): Promise<MachineInfo> {
  let ephemeralStorageBytes = 0;
  try {
    const fsStats = await statfs(rootDir);
    ephemeralStorageBytes = fsStats.blocks * fsStats.bsize;
  } catch {
    // left at 0: the Ready condition then reports the missing capacity
  }
  const pidMax = Number(await readTrimmed('/proc/sys/kernel/pid_max'));
  return {
    cpuCores: os.availableParallelism(),
    memoryBytes: os.totalmem(),
    ephemeralStorageBytes,
    ...(pidMax > 0 ? { maxPids: pidMax } : {}),
    hugepages: await hugepages(),
    machineID: await readTrimmed('/etc/machine-id'),
    systemUUID: (await readTrimmed('/sys/class/dmi/id/product_uuid')).toLowerCase(),
    bootID: await readTrimmed('/proc/sys/kernel/random/boot_id'),
    kernelVersion: os.release(),
    osImage: prettyName(await readTrimmed('/etc/os-release')),
    operatingSystem: os.platform(),
    architecture: goArch(os.arch()),
  };
}

/** Whether the kernel enforces AppArmor (apparmor.IsEnabled: the module's `enabled` parameter is `Y`). */
export function hostAppArmorEnabled(): boolean {
  try {
    return readFileSync('/sys/module/apparmor/parameters/enabled', 'utf8').trim() === 'Y';
  } catch {
    return false;
  }
}
