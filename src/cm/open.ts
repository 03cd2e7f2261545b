/**
 * The node's cgroups as the agent opens them before it builds the node (container_manager_linux.go
 * NewContainerManager and Start: kubepods and the QoS cgroups made; the node's ContainerManager
 * keeps the pods' cgroups under them): with --cgroups-per-qos, the cgroup filesystem of the host (`/sys/fs/cgroup`), or for
 * sim://, whose pods are no processes, a directory tree laid out as cgroup v2 under --root-dir, so
 * the same hierarchy and values can be read there. Where the agent may not make cgroups (not root,
 * a read-only cgroupfs) it says so once and runs without them: it never claims a limit it did not set.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { amounts } from '../api/quantity.ts';
import type { AgentConfig } from '../cli/config.ts';
import type { Logger } from '../log.ts';
import { openCgroups } from './cgroupfs.ts';
import { kubepodsCgroup } from './podResources.ts';
import { type NodeCgroupSettings, createNodeCgroups } from './containerManager.ts';

interface OpenOptions {
  config: Pick<AgentConfig, 'cgroupsPerQos' | 'cgroupRoot' | 'enforceNodeAllocatable' | 'podMaxPids' | 'systemReserved' | 'kubeReserved' | 'rootDir'>;
  /** sim://: the cgroups are a tree under --root-dir. */
  simulated: boolean;
  capacity: { milliCpu: number; memoryBytes: number; pids?: number };
  /** The huge page sizes the machine has (`2MB` form), which each pod cgroup limits. */
  hugePageSizes: readonly string[];
  /** The runtime makes cgroups through systemd (its verbose status says so). */
  runtimeSystemdCgroup?: boolean;
  log: Logger;
}

/** Where sim:// keeps its simulated cgroups, under --root-dir. */
export const SIM_CGROUP_DIR = 'sim-cgroup';

/** The controllers a simulated v2 root offers. */
const SIM_CONTROLLERS = 'cpuset cpu io memory hugetlb pids';

export async function openNodeCgroups(options: OpenOptions): Promise<NodeCgroupSettings | undefined> {
  const { config, log } = options;
  if (!config.cgroupsPerQos) {
    log('info', 'No pod or QoS cgroups (--cgroups-per-qos=false): pods run in the runtime\'s default cgroups, with their containers\' own limits');
    return undefined;
  }
  if (options.runtimeSystemdCgroup) {
    throw new Error('the container runtime makes cgroups through systemd (containerd: SystemdCgroup = true), statelet through cgroupfs: configure the runtime with SystemdCgroup = false, or start statelet with --cgroups-per-qos=false');
  }
  let mount = '/sys/fs/cgroup';
  if (options.simulated) {
    mount = path.join(config.rootDir, SIM_CGROUP_DIR);
    await mkdir(mount, { recursive: true });
    await writeFile(path.join(mount, 'cgroup.controllers'), `${SIM_CONTROLLERS}\n`);
  }
  const reserved = amounts(config.systemReserved);
  for (const [name, value] of Object.entries(amounts(config.kubeReserved))) reserved[name] = (reserved[name] ?? 0) + value;
  try {
    const settings: NodeCgroupSettings = {
      cgroups: await openCgroups(mount),
      cgroupRoot: config.cgroupRoot || '/',
      podPidsLimit: config.podMaxPids,
      hugePageSizes: options.hugePageSizes,
      enforcePods: config.enforceNodeAllocatable.includes('pods'),
      capacity: options.capacity,
      reserved,
    };
    await createNodeCgroups(settings);
    log('info', 'Keeping the node\'s cgroups', { mount, version: settings.cgroups.version, kubepods: kubepodsCgroup(settings.cgroupRoot) });
    return settings;
  } catch (err) {
    log('warn', 'Cannot make the node\'s cgroups here: pods run in the runtime\'s default cgroups, with their containers\' own limits only (no kubepods, QoS or pod cgroups)', { mount, err });
    return undefined;
  }
}
