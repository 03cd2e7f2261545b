/**
 * The CRI stats messages (ContainerStats, PodSandboxStats and the usages they carry, api.proto's
 * "stats" section, and ImageFsInfo's filesystems, in the wire shapes of `wire.ts`) converted both
 * ways: the gRPC client reads them (`fromWire`), the simulated runtime's server writes them
 * (`toWire`). Each UInt64Value is a message, so an absent value (null) stays apart from 0.
 */
import { type ContainerStats, type ContainerStatsFilter, type CpuUsage, type FilesystemUsage, type ImageFsInfo, type MemoryUsage, type PodSandboxStats, type PodSandboxStatsFilter, type SwapUsage, definedOnly } from '../types.ts';
import {
  type WireContainerStats,
  type WireContainerStatsFilter,
  type WireCpuUsage,
  type WireFilesystemUsage,
  type WireImageFsInfoResponse,
  type WireMemoryUsage,
  type WirePodSandboxStats,
  type WirePodSandboxStatsFilter,
  type WireSwapUsage,
  type WireUInt64,
  int64ToNumber,
  msToNs,
  nsToMs,
} from './wire.ts';

// ------------------------------------------------------------------------------------------------
// Scalars

function uint64FromWire(wire: WireUInt64): number | undefined {
  return wire === null ? undefined : int64ToNumber(wire.value);
}

function uint64ToWire(value: number | undefined): WireUInt64 {
  return value === undefined ? null : { value: Math.max(0, Math.round(value)) };
}

/** The named UInt64Value fields of a message, read: absent ones stay absent. */
function valuesFromWire<K extends string>(wire: Record<K, WireUInt64>, keys: readonly K[]): Partial<Record<K, number>> {
  const result: Partial<Record<K, number>> = {};
  for (const key of keys) {
    const value = uint64FromWire(wire[key]);
    if (value !== undefined) result[key] = value;
  }
  return result;
}

function valuesToWire<K extends string>(values: Partial<Record<K, number>>, keys: readonly K[]): Record<K, WireUInt64> {
  const result = {} as Record<K, WireUInt64>;
  for (const key of keys) result[key] = uint64ToWire(values[key]);
  return result;
}

const CPU_KEYS = ['usageCoreNanoSeconds', 'usageNanoCores'] as const;
const MEMORY_KEYS = ['workingSetBytes', 'availableBytes', 'usageBytes', 'rssBytes', 'pageFaults', 'majorPageFaults'] as const;
const FS_KEYS = ['usedBytes', 'inodesUsed'] as const;
const SWAP_KEYS = ['swapAvailableBytes', 'swapUsageBytes'] as const;

// ------------------------------------------------------------------------------------------------
// From the wire (the client)

function cpuFromWire(wire: WireCpuUsage | null): CpuUsage | undefined {
  return wire ? { timestamp: nsToMs(wire.timestamp), ...valuesFromWire(wire, CPU_KEYS) } : undefined;
}

function memoryFromWire(wire: WireMemoryUsage | null): MemoryUsage | undefined {
  return wire ? { timestamp: nsToMs(wire.timestamp), ...valuesFromWire(wire, MEMORY_KEYS) } : undefined;
}

function filesystemFromWire(wire: WireFilesystemUsage | null): FilesystemUsage | undefined {
  if (!wire) return undefined;
  return { timestamp: nsToMs(wire.timestamp), ...(wire.fsId ? { mountpoint: wire.fsId.mountpoint } : {}), ...valuesFromWire(wire, FS_KEYS) };
}

/** ImageFsInfo's answer: each filesystem as the stats messages carry it (a filesystem sent as null is left out). */
export function imageFsInfoFromWire(wire: WireImageFsInfoResponse): ImageFsInfo {
  const filesystems = (list: readonly (WireFilesystemUsage | null)[]) => list.map(filesystemFromWire).filter((fs) => fs !== undefined);
  return { imageFilesystems: filesystems(wire.imageFilesystems), containerFilesystems: filesystems(wire.containerFilesystems) };
}

function swapFromWire(wire: WireSwapUsage | null): SwapUsage | undefined {
  return wire ? { timestamp: nsToMs(wire.timestamp), ...valuesFromWire(wire, SWAP_KEYS) } : undefined;
}

export function containerStatsFromWire(wire: WireContainerStats): ContainerStats {
  const attributes = wire.attributes;
  return {
    attributes: {
      id: attributes?.id ?? '',
      metadata: { name: attributes?.metadata?.name ?? '', attempt: attributes?.metadata?.attempt ?? 0 },
      labels: attributes?.labels ?? {},
      annotations: attributes?.annotations ?? {},
    },
    ...definedOnly<Omit<ContainerStats, 'attributes'>>({
      cpu: cpuFromWire(wire.cpu),
      memory: memoryFromWire(wire.memory),
      writableLayer: filesystemFromWire(wire.writableLayer),
      swap: swapFromWire(wire.swap),
    }),
  };
}

export function podSandboxStatsFromWire(wire: WirePodSandboxStats): PodSandboxStats {
  const attributes = wire.attributes;
  const metadata = attributes?.metadata;
  const stats: PodSandboxStats = {
    attributes: {
      id: attributes?.id ?? '',
      metadata: { name: metadata?.name ?? '', uid: metadata?.uid ?? '', namespace: metadata?.namespace ?? '', attempt: metadata?.attempt ?? 0 },
      labels: attributes?.labels ?? {},
      annotations: attributes?.annotations ?? {},
    },
  };
  const linux = wire.linux;
  if (linux) {
    const process = linux.process;
    stats.linux = {
      ...definedOnly<Omit<NonNullable<PodSandboxStats['linux']>, 'containers'>>({
        cpu: cpuFromWire(linux.cpu),
        memory: memoryFromWire(linux.memory),
        process: process ? { timestamp: nsToMs(process.timestamp), ...valuesFromWire(process, ['processCount'] as const) } : undefined,
      }),
      containers: linux.containers.map(containerStatsFromWire),
    };
  }
  return stats;
}

export function containerStatsFilterToWire(filter: ContainerStatsFilter = {}): WireContainerStatsFilter {
  return { id: filter.id ?? '', podSandboxId: filter.podSandboxId ?? '', labelSelector: filter.labelSelector ?? {} };
}

export function podSandboxStatsFilterToWire(filter: PodSandboxStatsFilter = {}): WirePodSandboxStatsFilter {
  return { id: filter.id ?? '', labelSelector: filter.labelSelector ?? {} };
}

// ------------------------------------------------------------------------------------------------
// To the wire (the simulated runtime)

function cpuToWire(cpu: CpuUsage | undefined): WireCpuUsage | null {
  return cpu ? { timestamp: msToNs(cpu.timestamp), ...valuesToWire(cpu, CPU_KEYS) } : null;
}

function memoryToWire(memory: MemoryUsage | undefined): WireMemoryUsage | null {
  return memory ? { timestamp: msToNs(memory.timestamp), ...valuesToWire(memory, MEMORY_KEYS) } : null;
}

function filesystemToWire(fs: FilesystemUsage): WireFilesystemUsage {
  return { timestamp: msToNs(fs.timestamp), fsId: fs.mountpoint === undefined ? null : { mountpoint: fs.mountpoint }, ...valuesToWire(fs, FS_KEYS) };
}

export function imageFsInfoToWire(info: ImageFsInfo): WireImageFsInfoResponse {
  return { imageFilesystems: info.imageFilesystems.map(filesystemToWire), containerFilesystems: info.containerFilesystems.map(filesystemToWire) };
}

export function containerStatsToWire(stats: ContainerStats): WireContainerStats {
  const { writableLayer, swap } = stats;
  return {
    attributes: stats.attributes,
    cpu: cpuToWire(stats.cpu),
    memory: memoryToWire(stats.memory),
    writableLayer: writableLayer ? filesystemToWire(writableLayer) : null,
    swap: swap ? { timestamp: msToNs(swap.timestamp), ...valuesToWire(swap, SWAP_KEYS) } : null,
  };
}

export function podSandboxStatsToWire(stats: PodSandboxStats): WirePodSandboxStats {
  const linux = stats.linux;
  return {
    attributes: stats.attributes,
    linux: linux
      ? {
          cpu: cpuToWire(linux.cpu),
          memory: memoryToWire(linux.memory),
          process: linux.process ? { timestamp: msToNs(linux.process.timestamp), processCount: uint64ToWire(linux.process.processCount) } : null,
          containers: linux.containers.map(containerStatsToWire),
        }
      : null,
  };
}

/** A request's filter as the engine takes it: empty strings and maps are "not set". */
export function containerStatsFilterFromWire(wire: WireContainerStatsFilter | null): ContainerStatsFilter {
  if (!wire) return {};
  return definedOnly<ContainerStatsFilter>({
    id: wire.id || undefined,
    podSandboxId: wire.podSandboxId || undefined,
    labelSelector: Object.keys(wire.labelSelector).length > 0 ? wire.labelSelector : undefined,
  });
}

export function podSandboxStatsFilterFromWire(wire: WirePodSandboxStatsFilter | null): PodSandboxStatsFilter {
  if (!wire) return {};
  return definedOnly<PodSandboxStatsFilter>({
    id: wire.id || undefined,
    labelSelector: Object.keys(wire.labelSelector).length > 0 ? wire.labelSelector : undefined,
  });
}
