/**
 * The raw block volumes a container gets as devices (pkg/kubelet/kubelet_pods.go makeBlockVolumes,
 * kuberuntime_container.go makeDevices): for each of its `volumeDevices`, the pod's link to the
 * mapped volume's device (the runtime resolves it) at the entry's `devicePath`, with the cgroup
 * permissions `mrw`, or `r` for a read-only claim. A link not there (yet) gives no device, as the
 * kubelet's IsSymlinkExist check does.
 */
import { lstat } from 'node:fs/promises';
import type { Container } from '../api/types.ts';
import type { Device } from '../runtime/types.ts';
import type { MountedVolume } from '../volumes/world.ts';

interface VolumeDevice {
  name: string;
  devicePath: string;
}

/** The container's `volumeDevices`, as the API gives them. */
function volumeDevicesOf(container: Container): VolumeDevice[] {
  return ((container as { volumeDevices?: VolumeDevice[] }).volumeDevices ?? []).map((d) => ({ name: d.name ?? '', devicePath: d.devicePath ?? '' }));
}

/** What each entry asks for, pure: the device to give, or the kubelet's error for the container. */
export function blockVolumeDevices(container: Container, mounted: ReadonlyMap<string, MountedVolume>): { devices: Device[] } | { error: string } {
  const devices: Device[] = [];
  for (const device of volumeDevicesOf(container)) {
    if (!device.devicePath.startsWith('/')) return { error: `error DevicePath \`${device.devicePath}\` must be an absolute path` };
    const volume = mounted.get(device.name);
    if (!volume?.mapped) return { error: `cannot find volume "${device.name}" to pass into container "${container.name}"` };
    devices.push({ containerPath: device.devicePath, hostPath: volume.path, permissions: volume.readOnly ? 'r' : 'mrw' });
  }
  return { devices };
}

/** makeBlockVolumes: the devices whose links are there. */
export async function makeBlockVolumes(container: Container, mounted: ReadonlyMap<string, MountedVolume>): Promise<{ devices: Device[] } | { error: string }> {
  const wanted = blockVolumeDevices(container, mounted);
  if ('error' in wanted) return wanted;
  const present = await Promise.all(wanted.devices.map(async (d) => (await lstat(d.hostPath).catch(() => null))?.isSymbolicLink() === true));
  return { devices: wanted.devices.filter((_, i) => present[i]) };
}
