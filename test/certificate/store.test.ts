import { lstat, mkdtemp, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { clientTemplate, generateNodeKey, makeCsr } from '../../src/certificate/csr.ts';
import { readLeaf } from '../../src/certificate/pair.ts';
import { CertificateFileStore, pairFileTimestamp } from '../../src/certificate/store.ts';
import { testCa } from '../support/csrSigner.ts';

const ca = testCa();
function issued(node: string, lifetimeMs = 3_600_000) {
  const key = generateNodeKey();
  return { cert: ca.sign(makeCsr(key, clientTemplate(node)), { lifetimeMs }), key };
}
const tempDir = () => mkdtemp(path.join(os.tmpdir(), 'cert-store-'));

describe('pairFileTimestamp', () => {
  it("formats Go's 2006-01-02-15-04-05 in local time", () => {
    expect(pairFileTimestamp(new Date(2026, 0, 2, 3, 4, 5))).toBe('2026-01-02-03-04-05');
  });
});

describe('CertificateFileStore', () => {
  it('starts empty, makes the cert dir 0755', async () => {
    const dir = path.join(await tempDir(), 'pki');
    const store = await CertificateFileStore.open(dir, 'kubelet-client', () => Date.now());
    expect(store.current()).toBeNull();
    expect((await stat(dir)).mode & 0o777).toBe(0o755);
    expect(store.currentPath).toBe(path.join(dir, 'kubelet-client-current.pem'));
  });

  it('writes <prefix>-<ts>.pem 0600 (chain then key), points -current at it and tells its listeners', async () => {
    const dir = await tempDir();
    const at = new Date(2026, 11, 7, 21, 30, 15);
    const store = await CertificateFileStore.open(dir, 'kubelet-client', () => at.getTime());
    let told = 0;
    store.onChange(() => told++);
    const pair = issued('n1');
    await store.update(pair.cert, pair.key);
    const file = path.join(dir, 'kubelet-client-2026-12-07-21-30-15.pem');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const text = await readFile(file, 'utf8');
    expect(text.indexOf('BEGIN CERTIFICATE')).toBeLessThan(text.indexOf('PRIVATE KEY'));
    expect((await lstat(store.currentPath)).isSymbolicLink()).toBe(true);
    expect(await readlink(store.currentPath)).toBe(file);
    expect(told).toBe(1);
    expect(store.current()?.notAfter).toEqual(readLeaf(pair.cert).notAfter);
    expect((await readdir(dir)).sort()).toEqual(['kubelet-client-2026-12-07-21-30-15.pem', 'kubelet-client-current.pem']);
  });

  it('swaps to a new pair and a new store reads the current one back', async () => {
    const dir = await tempDir();
    let now = new Date(2026, 0, 1, 0, 0, 0).getTime();
    const store = await CertificateFileStore.open(dir, 'kubelet-client', () => now);
    const first = issued('n1');
    await store.update(first.cert, first.key);
    now += 60_000;
    const second = issued('n1');
    await store.update(second.cert, second.key);
    expect(await readlink(store.currentPath)).toBe(path.join(dir, 'kubelet-client-2026-01-01-00-01-00.pem'));
    const reopened = await CertificateFileStore.open(dir, 'kubelet-client', () => now);
    expect(reopened.current()?.key).toBe(second.key);
  });

  it('refuses a key that is not the certificate\'s, and leaves the current pair as it was', async () => {
    const dir = await tempDir();
    const store = await CertificateFileStore.open(dir, 'kubelet-client', () => Date.now());
    await expect(store.update(issued('n1').cert, generateNodeKey())).rejects.toThrow(/does not match/);
    expect(store.current()).toBeNull();
    expect(await readdir(dir)).toEqual([]);
  });

  it('finishes a swap cut short: a lone -updated becomes -current (recover)', async () => {
    const dir = await tempDir();
    const pair = issued('n1');
    const file = path.join(dir, 'kubelet-client-2026-01-01-00-00-00.pem');
    await writeFile(file, pair.cert + pair.key, { mode: 0o600 });
    await symlink(file, path.join(dir, 'kubelet-client-updated.pem'));
    const store = await CertificateFileStore.open(dir, 'kubelet-client', () => Date.now());
    expect(store.current()?.key).toBe(pair.key);
    expect(await readdir(dir)).not.toContain('kubelet-client-updated.pem');
  });

  it('refuses a -current that is a plain file when swapping, naming it', async () => {
    const dir = await tempDir();
    const pair = issued('n1');
    await writeFile(path.join(dir, 'kubelet-client-current.pem'), pair.cert + pair.key, { mode: 0o600 });
    const store = await CertificateFileStore.open(dir, 'kubelet-client', () => Date.now());
    expect(store.current()?.key).toBe(pair.key);
    const next = issued('n1');
    await expect(store.update(next.cert, next.key)).rejects.toThrow(/kubelet-client-current.pem to be a symlink but it is a file/);
  });

  it('names a current file that holds no pair', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'x.pem'), 'junk');
    await symlink(path.join(dir, 'x.pem'), path.join(dir, 'kubelet-server-current.pem'));
    await expect(CertificateFileStore.open(dir, 'kubelet-server', () => Date.now())).rejects.toThrow(/kubelet-server-current.pem" into cert\/key pair: no certificate found/);
  });
});
