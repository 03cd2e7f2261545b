/**
 * The certificate file store of a certificate manager (client-go util/certificate/certificate_store.go
 * fileStore), one per prefix (`kubelet-client`, `kubelet-server`) in --cert-dir (0755):
 *   - each new pair is one file `<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem` (local time, mode 0600): the
 *     certificate chain, then the key. It is written under a temporary name and renamed, so no
 *     reader (nor the next start) ever sees half of it;
 *   - `<prefix>-current.pem` is a symlink to the file in use. A new file is made current by a
 *     symlink `<prefix>-updated.pem` to it (its absolute path), the removal of `-current`, and the
 *     rename of `-updated` onto `-current` (updateSymlink); a start that finds `-updated` without
 *     `-current` finishes that swap (recover).
 * The store is the manager's CertificateSource: `current()` is the pair in use, and its listeners
 * hear of each new one.
 */
import { lstat, mkdir, open, readFile, rename, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { type CertificatePair, parsePair } from './pair.ts';
import type { CertificateSource } from './source.ts';

/** Go's `2006-01-02-15-04-05` in local time, as fileStore.Update names a file. */
export function pairFileTimestamp(at: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())}-${two(at.getHours())}-${two(at.getMinutes())}-${two(at.getSeconds())}`;
}

const isMissing = (err: unknown) => (err as NodeJS.ErrnoException)?.code === 'ENOENT';

export class CertificateFileStore implements CertificateSource {
  private pair: CertificatePair | null = null;
  private readonly listeners = new Set<() => void>();

  private constructor(
    readonly certDir: string,
    readonly prefix: string,
    private readonly now: () => number,
  ) {}

  /** The store of `prefix` in `certDir`: the directory made, an interrupted swap finished, the current pair read. */
  static async open(certDir: string, prefix: string, now: () => number): Promise<CertificateFileStore> {
    const store = new CertificateFileStore(path.resolve(certDir), prefix, now);
    await mkdir(store.certDir, { recursive: true, mode: 0o755 });
    await store.recover();
    store.pair = await store.load();
    return store;
  }

  /** `<cert-dir>/<prefix>-current.pem`, what the kubeconfig names. */
  get currentPath(): string {
    return path.join(this.certDir, `${this.prefix}-current.pem`);
  }

  private get updatedPath(): string {
    return path.join(this.certDir, `${this.prefix}-updated.pem`);
  }

  /** The pair in use, or null when there is none or it has expired (certificate_manager.go Current). */
  current(): { cert: string; key: string; notAfter: Date } | null {
    if (!this.pair || this.now() > this.pair.leaf.notAfter.getTime()) return null;
    return { cert: this.pair.cert, key: this.pair.key, notAfter: this.pair.leaf.notAfter };
  }

  /** The pair in use with its leaf's subject and dates (what the manager compares with its template). */
  currentPair(): CertificatePair | null {
    return this.pair;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A lone `-updated` symlink (a swap cut short) becomes `-current` (certificate_store.go recover). */
  private async recover(): Promise<void> {
    if (await this.exists(this.currentPath)) return;
    const updated = await lstat(this.updatedPath).catch((err: unknown) => (isMissing(err) ? null : Promise.reject(err)));
    if (!updated) return;
    if (!updated.isSymbolicLink()) throw new Error(`expected ${this.updatedPath} to be a symlink but it is a file`);
    await rename(this.updatedPath, this.currentPath);
  }

  private async exists(file: string): Promise<boolean> {
    return lstat(file).then(
      () => true,
      (err: unknown) => (isMissing(err) ? false : Promise.reject(err)),
    );
  }

  /** The current pair, or null when there is none; a file that is not a pair is an error naming it. */
  private async load(): Promise<CertificatePair | null> {
    let text: string;
    try {
      text = await readFile(this.currentPath, 'utf8');
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
    try {
      return parsePair(text, text);
    } catch (err) {
      throw new Error(`could not convert data from "${this.currentPath}" into cert/key pair: ${(err as Error).message}`);
    }
  }

  /**
   * Makes `cert` (chain, PEM) and `key` the current pair (fileStore.Update): a new timestamped
   * file, then the symlink swap; the listeners are told once it is current.
   */
  async update(cert: string, key: string): Promise<CertificatePair> {
    const pair = parsePair(cert, key);
    await mkdir(this.certDir, { recursive: true, mode: 0o755 });
    const file = path.join(this.certDir, `${this.prefix}-${pairFileTimestamp(new Date(this.now()))}.pem`);
    const partial = `${file}.tmp`;
    const handle = await open(partial, 'w', 0o600);
    try {
      await handle.writeFile(pair.cert + pair.key);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(partial, file);
    await this.swapSymlink(file);
    this.pair = pair;
    for (const listener of [...this.listeners]) listener();
    return pair;
  }

  /** certificate_store.go updateSymlink: `-updated` → file, then onto `-current`. */
  private async swapSymlink(file: string): Promise<void> {
    const current = await lstat(this.currentPath).catch((err: unknown) => (isMissing(err) ? null : Promise.reject(err)));
    if (current && !current.isSymbolicLink()) throw new Error(`expected ${this.currentPath} to be a symlink but it is a file`);
    await rm(this.updatedPath, { force: true });
    await symlink(file, this.updatedPath);
    if (current) await rm(this.currentPath, { force: true });
    await rename(this.updatedPath, this.currentPath);
  }
}
