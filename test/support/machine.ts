/** A machine as the node reads it (node/machineInfo.ts), for tests: 4 cores, 8 GiB, 100 GiB of disk unless told otherwise. */
import type { MachineInfo } from '../../src/node/nodeObject.ts';

export function testMachine(overrides: Partial<MachineInfo> = {}): MachineInfo {
  return {
    cpuCores: 4,
    memoryBytes: 8 * 2 ** 30,
    ephemeralStorageBytes: 100 * 2 ** 30,
    hugepages: {},
    machineID: 'm',
    systemUUID: 'u',
    bootID: 'b',
    kernelVersion: '6.1.0',
    osImage: 'Debian GNU/Linux 12 (bookworm)',
    operatingSystem: 'linux',
    architecture: 'amd64',
    ...overrides,
  };
}
