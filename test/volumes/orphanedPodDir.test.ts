/**
 * An orphaned pod's directory removed as the kubelet removes it (orphanedPodDir.ts;
 * kubelet_volumes.go cleanupOrphanedPodDirs, csi_orphan_cleanup.go CleanupUnmountedVolumeArtifacts),
 * over a temporary pods directory; the mount table is the test's.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupUnmountedCsiArtifacts, removeOrphanedPodDir } from '../../src/volumes/orphanedPodDir.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function podsDir(files: Record<string, string | null>): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-orphans-'));
  dirs.push(root);
  for (const [rel, content] of Object.entries(files)) {
    const at = path.join(root, rel);
    if (content === null) await mkdir(at, { recursive: true });
    else if (content === 'link') await symlink(root, at);
    else {
      await mkdir(path.dirname(at), { recursive: true });
      await writeFile(at, content);
    }
  }
  return root;
}

const mounter = (points: string[] = []) => ({ mountedUnder: async (dir: string) => points.filter((p) => p.startsWith(`${dir}/`)) });
const csiDir = 'u1/volumes/kubernetes.io~csi/pv-1';
const volData = '{"driverName":"d","specVolID":"pv-1","volumeHandle":"1"}\n';

describe('removeOrphanedPodDir', () => {
  it("removes the agent's own volumes with their files, empty volume directories, the pod's other files and the pod's directory", async () => {
    const pods = await podsDir({
      'u1/volumes/kubernetes.io~empty-dir/scratch/data': 'x',
      'u1/volumes/kubernetes.io~configmap/settings/..data': 'y',
      'u1/volumes/kubernetes.io~local-volume/pv-2': null,
      'u1/plugins/kubernetes.io~empty-dir/scratch/ready': '',
      'u1/etc-hosts': '127.0.0.1 localhost\n',
      'u1/containers/app/0a1b2c': '',
    });
    await removeOrphanedPodDir({ podsDir: pods, mounter: mounter() }, 'u1');
    expect(await readdir(pods)).toEqual([]);
  });

  it("removes a CSI volume's vol_data.json and empty mount directory left without a mount (a driver that never unpublished), then the pod's directory", async () => {
    const pods = await podsDir({ [`${csiDir}/vol_data.json`]: volData, [`${csiDir}/mount`]: null });
    await removeOrphanedPodDir({ podsDir: pods, mounter: mounter() }, 'u1');
    expect(await readdir(pods)).toEqual([]);
  });

  it('touches nothing while a CSI volume is still mounted', async () => {
    const pods = await podsDir({ [`${csiDir}/vol_data.json`]: volData, [`${csiDir}/mount/data`]: 'the volume' });
    const target = path.join(pods, csiDir, 'mount');
    await expect(removeOrphanedPodDir({ podsDir: pods, mounter: mounter([target]) }, 'u1')).rejects.toThrow(`orphaned pod "u1" found, but volume paths are still present on disk: ${target}`);
    expect(await readFile(path.join(pods, csiDir, 'vol_data.json'), 'utf8')).toBe(volData);
  });

  it("never removes a volume's data: a file left in an unmounted CSI mount directory keeps the volume and the pod's directories, with the kubelet's error", async () => {
    const pods = await podsDir({ [`${csiDir}/vol_data.json`]: volData, [`${csiDir}/mount/data`]: 'written while unmounted', 'u1/etc-hosts': '' });
    const volumeDir = path.join(pods, csiDir);
    await expect(removeOrphanedPodDir({ podsDir: pods, mounter: mounter() }, 'u1')).rejects.toThrow(
      new RegExp(`^orphaned pod "u1" found, but failed to rmdir\\(\\) volume at path ${volumeDir}: failed to remove unmounted CSI mount path "${volumeDir}/mount": ENOTEMPTY`),
    );
    expect(await readFile(path.join(volumeDir, 'mount', 'data'), 'utf8')).toBe('written while unmounted');
    expect(existsSync(path.join(volumeDir, 'vol_data.json'))).toBe(true);
    expect(existsSync(path.join(pods, 'u1', 'etc-hosts'))).toBe(true);
  });

  it("fails on a file in a plugin's directory that is not the agent's own, as RemoveDirsOneFilesystem does", async () => {
    const pods = await podsDir({ 'u1/volumes/kubernetes.io~local-volume/pv-2/data': 'x', 'u1/volumes/stray': 'x' });
    await expect(removeOrphanedPodDir({ podsDir: pods, mounter: mounter() }, 'u1')).rejects.toThrow(/^orphaned pod "u1" found, but failed to rmdir\(\) volume at path .*kubernetes.io~local-volume\/pv-2: ENOTEMPTY/);
    await rm(path.join(pods, 'u1/volumes/kubernetes.io~local-volume/pv-2/data'));
    await expect(removeOrphanedPodDir({ podsDir: pods, mounter: mounter() }, 'u1')).rejects.toThrow(`orphaned pod "u1" found, but error occurred when trying to remove the volumes dir: not a directory: ${path.join(pods, 'u1/volumes/stray')}`);
  });
});

describe('cleanupUnmountedCsiArtifacts', () => {
  it.each([
    ['an empty mount directory and vol_data.json', { 'v/vol_data.json': volData, 'v/mount': null }, [], true, []],
    ['vol_data.json alone', { 'v/vol_data.json': volData }, [], true, []],
    ['a link left by a driver that could not mount', { 'v/vol_data.json': volData, 'v/mount': 'link' }, [], true, []],
    ['nothing to clean', { 'v/other': 'x' }, [], false, ['other']],
    ['a mount point: nothing', { 'v/vol_data.json': volData, 'v/mount': null }, ['v/mount'], false, ['mount', 'vol_data.json']],
  ] as const)('%s', async (_, files, mounted, cleaned, left) => {
    const root = await podsDir(files);
    const dir = path.join(root, 'v');
    expect(await cleanupUnmountedCsiArtifacts(dir, mounted.map((m) => path.join(root, m)))).toBe(cleaned);
    expect((await readdir(dir)).sort()).toEqual(left);
  });
});
