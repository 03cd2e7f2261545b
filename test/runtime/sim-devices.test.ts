/**
 * sim:// containers' devices (CRI `devices`, a raw block volume's link as the kubelet gives it),
 * over the gRPC wire: the link resolved as containerd resolves it, the device reached at its
 * container path (reads and writes go to the host device, as a mount's files do), read-only
 * without `w` in its permissions; a host path that is not a device fails the create as in
 * containerd. The block device needs root (a loop device; CI runs as root, elsewhere skipped
 * loudly); the rest runs anywhere.
 */
import { execFileSync } from 'node:child_process';
import { openSync, readSync, closeSync } from 'node:fs';
import { symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Device } from '../../src/runtime/types.ts';
import { rootOrSkip } from '../support/smallFilesystem.ts';
import { type SimOverGrpc, containerConfig, podSandboxConfig, rejection, simOverGrpc } from './support.ts';

let rig: SimOverGrpc;
beforeEach(async () => {
  rig = await simOverGrpc('statelet-sim-devices-');
});
afterEach(async () => {
  await rig.close();
});

let pods = 0;
async function containerWith(devices: Device[]): Promise<string> {
  const pod = podSandboxConfig(`db-${++pods}`);
  const sandbox = await rig.client.runPodSandbox(pod);
  return rig.client.createContainer(sandbox, containerConfig('app', { command: ['sleep', '3600'], devices }), pod);
}

const sh = async (id: string, script: string) => {
  const result = await rig.client.execSync(id, ['sh', '-c', script], 5);
  return { exitCode: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
};

describe('sim:// container devices', () => {
  it('gives a device through a link at its container path, writable with mrw, read-only with r (a character device here)', async () => {
    const link = join(rig.dir, 'link');
    await symlink('/dev/null', link);
    const id = await containerWith([
      { containerPath: '/dev/xvda', hostPath: link, permissions: 'mrw' },
      { containerPath: '/dev/ro', hostPath: link, permissions: 'r' },
    ]);
    await rig.client.startContainer(id);
    expect(await sh(id, 'echo lost > /dev/xvda')).toEqual({ exitCode: 0, stdout: '', stderr: '' });
    expect((await sh(id, 'echo lost > /dev/ro')).exitCode).not.toBe(0);
  });

  it('refuses a host path that is not a device, as containerd does', async () => {
    const file = join(rig.dir, 'plain');
    await writeFile(file, 'not a device');
    const error = await rejection(containerWith([{ containerPath: '/dev/xvda', hostPath: file, permissions: 'mrw' }]));
    expect(error.detail).toMatch(`${file}: not a device node`);
    const missing = await rejection(containerWith([{ containerPath: '/dev/xvda', hostPath: join(rig.dir, 'missing'), permissions: 'mrw' }]));
    expect(missing.detail).toMatch(/no such file or directory/i);
  });

  describe.skipIf(!rootOrSkip('a sim:// container with a block device'))('a block device (root)', () => {
    it('writes through to the host device and reads back; a device given read-only refuses writes', async () => {
      const image = join(rig.dir, 'disk.img');
      execFileSync('truncate', ['-s', '1M', image]);
      const device = execFileSync('losetup', ['-f', '--show', image], { encoding: 'utf8' }).trim();
      try {
        const link = join(rig.dir, 'pv-block');
        await symlink(device, link);
        const id = await containerWith([
          { containerPath: '/dev/xvda', hostPath: link, permissions: 'mrw' },
          { containerPath: '/dev/ro', hostPath: link, permissions: 'r' },
        ]);
        await rig.client.startContainer(id);
        expect(await sh(id, 'echo block-data > /dev/xvda')).toMatchObject({ exitCode: 0 });
        const fd = openSync(device, 'r');
        const head = Buffer.alloc(11);
        readSync(fd, head, 0, 11, 0);
        closeSync(fd);
        expect(head.toString()).toBe('block-data\n');
        // Read back through the read-only entry: the device's bytes, the rest of it zeros.
        const back = await sh(id, 'cat /dev/ro');
        expect(back.stdout.startsWith('block-data\n')).toBe(true);
        expect(back.stdout.length).toBe(1024 * 1024);
        // dd reads the device by its size (sysfs: stat gives none), as many bytes as asked.
        expect(await sh(id, 'dd if=/dev/ro of=/tmp/back bs=11 count=1 status=none && cat /tmp/back')).toEqual({ exitCode: 0, stdout: 'block-data\n', stderr: '' });
        expect((await sh(id, 'echo x > /dev/ro')).exitCode).not.toBe(0);
      } finally {
        execFileSync('losetup', ['-d', device]);
      }
    });
  });
});
