/**
 * The kubelet's records of the images it pulled and with which credentials
 * (pkg/kubelet/images/pullmanager: fs_pullrecords.go for the files, image_pull_manager.go
 * PullManager for their use), so that a pod cannot use a private image another pod's secret
 * pulled (KubeletEnsureSecretPulledImages).
 *
 * Files under `<root-dir>/image_manager/`: `pulling/` holds an ImagePullIntent per image being
 * pulled, `pulled/` an ImagePulledRecord per image reference, each named `sha256-<hex of the
 * image or reference>`, JSON of kubelet.config.k8s.io/v1alpha1, mode 0600, written to a `.tmp`
 * file and renamed. A record holds secrets' coordinates and credential hashes, never credentials.
 * They are files, so they outlive the agent: an intent left by a pull the agent did not see end
 * becomes a record at start when the runtime has the image (PullManager.initialize).
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.ts';
import type { ImageInfo } from '../runtime/types.ts';
import { repositoryOf } from '../credentialprovider/keyring.ts';
import {
  type Allowlist,
  type PodSecrets,
  type PodServiceAccount,
  type PulledRecord,
  type RecordedCredentials,
  type VerificationPolicy,
  mergeIntoRecord,
  mustAttemptPull,
  requiresVerification,
} from './pullPolicy.ts';

const API_VERSION = 'kubelet.config.k8s.io/v1alpha1';
const FILE_PREFIX = 'sha256-';
const TMP_SUFFIX = '.tmp';

/** fs_pullrecords.go cacheFilename. */
const fileName = (key: string) => `${FILE_PREFIX}${createHash('sha256').update(key).digest('hex')}`;

/** What the image manager asks of the records (pullmanager.ImagePullManager). */
export interface ImagePullRecords {
  /** Whether a present image needs a pull before this pod may use it. */
  mustAttemptPull(image: string, imageRef: string, podSecrets: PodSecrets, podServiceAccount?: PodServiceAccount): Promise<boolean>;
  /** Before a pull: the intent, so a pull the agent does not see end still counts as the kubelet's. */
  recordPullIntent(image: string): Promise<void>;
  /** After a successful pull, with who may use it; null credentials: pulled under unknown circumstances. */
  recordImagePulled(image: string, imageRef: string, credentials: RecordedCredentials | null): Promise<void>;
  recordPullFailed(image: string): Promise<void>;
  /**
   * Forgets the records of images the runtime no longer has (PruneUnknownRecords): those whose
   * image reference is not in `presentImageIds`, last updated before `until` (when the listing
   * began, so a record written since is kept). The image GC calls it after a round that freed
   * space (image_gc_manager.go GarbageCollect, its post-GC hooks).
   */
  pruneUnknownRecords(presentImageIds: readonly string[], until: number): Promise<void>;
}

interface PullRecordsOptions {
  rootDir: string;
  policy: VerificationPolicy;
  allowlist: Allowlist;
  log: Logger;
  /** The runtime's images, for the intents a previous run left (initialize). */
  listImages: () => Promise<ImageInfo[]>;
  now?: () => number;
}

/** The records on disk, with the count of pulls under way per image (PullManager's intentCounters). */
export class FilePullRecords implements ImagePullRecords {
  private readonly pullingDir: string;
  private readonly pulledDir: string;
  private readonly intents = new Map<string, number>();
  /** Writes of one record in turn (PullManager's pulledAccessors lock). */
  private writes = Promise.resolve();
  /**
   * What the files say, as last read or written: this process is their only writer, so a present
   * image's check reads each file once, not at every container start.
   */
  private readonly recordCache = new Map<string, PulledRecord | null>();
  private readonly intentCache = new Map<string, boolean>();
  /** The write of each image's intent file while pulls of it are counted. */
  private readonly intentWrites = new Map<string, Promise<void>>();
  /** The last write of each file, for the next to wait on. */
  private readonly fileWrites = new Map<string, Promise<void>>();
  /** The start's work (initialize): every use waits for it. */
  private readonly ready: Promise<void>;

  constructor(private readonly options: PullRecordsOptions) {
    this.pullingDir = path.join(options.rootDir, 'image_manager', 'pulling');
    this.pulledDir = path.join(options.rootDir, 'image_manager', 'pulled');
    this.ready = this.initialize(options.listImages).catch((err: unknown) => options.log('error', 'Unable to read the records of image pulls', { err }));
  }

  /**
   * Makes the directories (0700) and turns the intents a previous run left into records for the
   * images the runtime has (PullManager.initialize): such an image was pulled by the kubelet with
   * credentials it no longer knows, so its record names none and every pod must verify.
   */
  private async initialize(listImages: () => Promise<ImageInfo[]>): Promise<void> {
    await mkdir(this.pullingDir, { recursive: true, mode: 0o700 });
    await mkdir(this.pulledDir, { recursive: true, mode: 0o700 });
    const intents = await this.readAll(this.pullingDir, (json) => (json.kind === 'ImagePullIntent' && typeof json.image === 'string' ? json.image : null));
    if (intents.length === 0) return;
    const images = await listImages().catch((err: unknown) => {
      this.options.log('error', 'failed to list images', { err });
      return [];
    });
    const left = new Set(intents);
    for (const image of images) {
      for (const name of [...image.repoDigests, ...image.repoTags]) {
        if (!left.has(name)) continue;
        await this.writeRecord(name, image.id, null);
        await rm(path.join(this.pullingDir, fileName(name)), { force: true });
        this.intentCache.set(name, false);
      }
    }
  }

  async mustAttemptPull(image: string, imageRef: string, podSecrets: PodSecrets, podServiceAccount?: PodServiceAccount): Promise<boolean> {
    if (!imageRef) return true;
    await this.ready;
    let record: PulledRecord | null;
    let pulledByKubelet: boolean;
    try {
      record = await this.readRecord(imageRef);
      pulledByKubelet = record !== null || (this.intents.get(image) ?? 0) > 0 || (await this.intentExists(image));
    } catch (err) {
      this.options.log('error', 'Unable to access cache records about image pulls', { err });
      return true;
    }
    if (!requiresVerification(this.options.policy, this.options.allowlist, image, pulledByKubelet)) return false;
    const decision = mustAttemptPull(record, repositoryOf(image), podSecrets, podServiceAccount);
    if (decision.remember) {
      await this.writeRecord(image, imageRef, { kubernetesSecrets: [decision.remember] }).catch((err: unknown) => this.options.log('error', 'failed to write an image pulled record', { image, imageRef, err }));
    }
    return decision.pull;
  }

  /**
   * Counts a pull of `image` about to start; the first of a run of them writes the intent file
   * (its content is the image alone), the others wait for that write. A pod that joins another's
   * pull so joins at once, instead of writing the same file again after the pull it could have
   * shared has ended.
   */
  async recordPullIntent(image: string): Promise<void> {
    await this.ready;
    const count = this.intents.get(image) ?? 0;
    this.intents.set(image, count + 1);
    let write = this.intentWrites.get(image);
    if (count === 0 || !write) {
      write = this.writeFile(this.pullingDir, fileName(image), { kind: 'ImagePullIntent', apiVersion: API_VERSION, image });
      this.intentWrites.set(image, write);
    }
    try {
      await write;
    } catch (err) {
      if (this.intentWrites.get(image) === write) this.intentWrites.delete(image);
      await this.decrementIntent(image);
      throw err;
    }
    this.intentCache.set(image, true);
  }

  async recordImagePulled(image: string, imageRef: string, credentials: RecordedCredentials | null): Promise<void> {
    try {
      await this.writeRecord(image, imageRef, credentials);
    } catch (err) {
      // The intent stays: the next start turns it into a record (image_pull_manager.go RecordImagePulled).
      this.options.log('error', 'failed to write image pulled record', { imageRef, err });
      return;
    }
    await this.decrementIntent(image);
  }

  async recordPullFailed(image: string): Promise<void> {
    await this.decrementIntent(image);
  }

  /**
   * image_pull_manager.go PruneUnknownRecords, under the records' write lock (its GlobalLock): a
   * record that cannot be read is logged and kept; a removal that fails is logged and the next
   * record tried.
   */
  async pruneUnknownRecords(presentImageIds: readonly string[], until: number): Promise<void> {
    await this.ready;
    const present = new Set(presentImageIds);
    const prune = this.writes.then(async () => {
      const records = await this.readAll(this.pulledDir, (json) =>
        json.kind === 'ImagePulledRecord' && typeof json.imageRef === 'string' ? { imageRef: json.imageRef, updated: Date.parse(String(json.lastUpdatedTime ?? '')) } : null,
      );
      for (const { imageRef, updated } of records) {
        // A record updated since the listing began is kept (`!LastUpdatedTime.Before(until)`); one with no time is as old as can be.
        if ((Number.isFinite(updated) && updated >= until) || present.has(imageRef)) continue;
        try {
          await rm(path.join(this.pulledDir, fileName(imageRef)), { force: true });
          this.recordCache.set(imageRef, null);
        } catch (err) {
          this.options.log('error', 'failed to remove an ImagePulledRecord', { imageRef, err });
        }
      }
    });
    this.writes = prune.catch(() => {});
    return prune;
  }

  private async decrementIntent(image: string): Promise<void> {
    const count = this.intents.get(image) ?? 0;
    if (count > 1) {
      this.intents.set(image, count - 1);
      return;
    }
    // Uncounted at once: a pull that starts now writes its own intent, after this removal (one chain per file).
    this.intents.delete(image);
    this.intentWrites.delete(image);
    try {
      await this.onFile(path.join(this.pullingDir, fileName(image)), (target) => rm(target, { force: true }));
      if (!this.intents.has(image)) this.intentCache.set(image, false);
    } catch (err) {
      this.options.log('error', 'failed to remove image pull intent', { image, err });
    }
  }


  private writeRecord(image: string, imageRef: string, credentials: RecordedCredentials | null): Promise<void> {
    const write = this.writes.then(async () => {
      const existing = await this.readRecord(imageRef).catch(() => null);
      const now = new Date(this.options.now?.() ?? Date.now()).toISOString().replace(/\.\d+Z$/, 'Z');
      const merged = mergeIntoRecord(existing, imageRef, repositoryOf(image), credentials, now);
      if (!merged) return;
      // A failed write leaves the cache to read the file again.
      this.recordCache.delete(imageRef);
      await this.writeFile(this.pulledDir, fileName(imageRef), { kind: 'ImagePulledRecord', apiVersion: API_VERSION, ...merged });
      this.recordCache.set(imageRef, merged);
    });
    this.writes = write.catch(() => {});
    return write;
  }

  private async readRecord(imageRef: string): Promise<PulledRecord | null> {
    const cached = this.recordCache.get(imageRef);
    if (cached !== undefined) return cached;
    let text: string;
    try {
      text = await readFile(path.join(this.pulledDir, fileName(imageRef)), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      this.recordCache.set(imageRef, null);
      return null;
    }
    const json = JSON.parse(text) as Partial<PulledRecord> & { kind?: string };
    if (json.kind !== 'ImagePulledRecord') throw new Error(`${fileName(imageRef)}: not an ImagePulledRecord`);
    const record = json.imageRef === imageRef ? { lastUpdatedTime: json.lastUpdatedTime ?? '', imageRef, credentialMapping: json.credentialMapping ?? {} } : null;
    this.recordCache.set(imageRef, record);
    return record;
  }

  private async intentExists(image: string): Promise<boolean> {
    const cached = this.intentCache.get(image);
    if (cached !== undefined) return cached;
    let exists: boolean;
    try {
      const json = JSON.parse(await readFile(path.join(this.pullingDir, fileName(image)), 'utf8')) as { image?: string };
      exists = json.image === image;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      exists = false;
    }
    this.intentCache.set(image, exists);
    return exists;
  }

  /**
   * fs_pullrecords.go writeFile: a temporary file, 0600, renamed into place. Writes of one file
   * go in turn (the kubelet's per-image locks): two pods pulling one image write one intent.
   */
  private writeFile(dir: string, name: string, content: object): Promise<void> {
    return this.onFile(path.join(dir, name), async (target) => {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const tmp = target + TMP_SUFFIX;
      try {
        await writeFile(tmp, JSON.stringify(content), { mode: 0o600 });
        await rename(tmp, target);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    });
  }

  /** Runs `op` on `target` after the operations on it already under way, one at a time. */
  private onFile(target: string, op: (target: string) => Promise<void>): Promise<void> {
    const run = (this.fileWrites.get(target) ?? Promise.resolve()).then(() => op(target));
    const settled = run.catch(() => {});
    this.fileWrites.set(target, settled);
    void settled.then(() => {
      if (this.fileWrites.get(target) === settled) this.fileWrites.delete(target);
    });
    return run;
  }

  /** The files of a directory this module wrote (no `.tmp`), each read by `read`; unreadable ones logged and skipped. */
  private async readAll<T>(dir: string, read: (json: Record<string, unknown>) => T | null): Promise<T[]> {
    const found: T[] = [];
    for (const name of await readdir(dir).catch(() => [])) {
      if (!name.startsWith(FILE_PREFIX) || name.endsWith(TMP_SUFFIX)) continue;
      try {
        const value = read(JSON.parse(await readFile(path.join(dir, name), 'utf8')) as Record<string, unknown>);
        if (value !== null) found.push(value);
      } catch (err) {
        this.options.log('error', 'failed to read an image pull record', { file: path.join(dir, name), err });
      }
    }
    return found;
  }
}
