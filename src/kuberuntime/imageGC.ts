/**
 * Image garbage collection (pkg/kubelet/images/image_gc_manager.go): the node's record of its
 * images, and which of them go when the image filesystem fills, when they have been unused too
 * long, or when the eviction manager asks for every unused one.
 *
 * Records (detectImages). Each look at the runtime lists its images and the containers it has, in
 * any state: an image seen for the first time is recorded as first detected then; an image in use
 * is recorded as last used now; an image the runtime no longer lists is forgotten. The records
 * are kept from one look to the next, so "last used" is the last look that found it in use.
 *
 * In use (detectImages, imagesInEvictionOrder). A container the runtime lists names the image (by
 * id, as the kubelet compares, or by one of its tags or digests, which some runtimes report
 * instead); or it is the runtime's sandbox image, which containerd 1.6 does not pin (its verbose
 * Status names it); or it is being pulled. A pinned image is never freed either.
 *
 * An image being pulled: the kubelet has no such rule. containerd lists an image only once its
 * pull is done, and a freshly pulled image is then kept for imageMinimumGCAge after its first
 * detection, long enough for its container to be created. Two cases escape that: an image already
 * present and pulled again (pull policy Always), whose record may be old, and imageMinimumGCAge
 * set to 0. statelet's puller knows what it is pulling (ImagePuller.pulling), so those images are
 * kept too, resolved to the runtime's ids by ImageStatus (the runtime qualifies `busybox:latest`
 * as it would for the pull).
 *
 * The periodic round (GarbageCollect) frees, in this order: the unused images last used longer
 * ago than imageMaximumGCAge (once the collector has run that long); then, when the image
 * filesystem's usage is at or above imageGCHighThresholdPercent, enough least recently used
 * images, each first detected at least imageMinimumGCAge ago, to bring it down to
 * imageGCLowThresholdPercent. The eviction manager's reclaim (DeleteUnusedImages) frees every
 * unused image old enough, whatever the usage. A failed removal is kept and the next image tried.
 */
import type { ObjectReference } from '../api/cluster.ts';
import type { EventRecorder } from '../eventrecorder/recorder.ts';
import type { Logger } from '../log.ts';
import { type Container, type ImageInfo, type ImageService, type RuntimeService, isNotFound } from '../runtime/types.ts';
import { aggregateErrors } from '../volumes/plan.ts';
import { errorText, goDuration } from './images.ts';

/** The kubelet's ImageGCPolicy, from its settings. */
export interface ImageGcPolicy {
  /** imageGCHighThresholdPercent: at or above this usage of the image filesystem, a round frees space. */
  highThresholdPercent: number;
  /** imageGCLowThresholdPercent: the usage a round frees down to. */
  lowThresholdPercent: number;
  /** imageMinimumGCAge: an image first detected more recently is never freed for space. */
  minAgeMs: number;
  /** imageMaximumGCAge: an image unused for longer is freed whatever the usage; 0: never. */
  maxAgeMs: number;
}

/** What the node keeps of one image between looks (imageRecord). */
export interface ImageRecord {
  id: string;
  /** Its first tag, else its id: how the log names it. */
  name: string;
  /** When it was first listed. */
  firstDetected: number;
  /** The last look that found it in use; -Infinity: never (Go's zero time, before any other). */
  lastUsed: number;
  size: number;
  pinned: boolean;
}

// ---------------------------------------------------------------------------------------------
// Decisions

/**
 * Whether the periodic image GC is off (kubelet.go StartGarbageCollection): a high threshold of
 * 100 and no maximum age, the documented way to turn it off. The eviction manager's reclaim stays.
 */
export function imageGcOff(policy: Pick<ImageGcPolicy, 'highThresholdPercent' | 'maxAgeMs'>): boolean {
  return policy.highThresholdPercent === 100 && policy.maxAgeMs === 0;
}

/**
 * The ids of the images in use: those a reference held names, by id, tag or digest. The
 * references are the images and image refs of the containers the runtime lists, and the images
 * kept besides (the sandbox image, those being pulled).
 */
export function imagesInUse(images: readonly ImageInfo[], references: Iterable<string>): Set<string> {
  const named = new Set(references);
  const inUse = new Set<string>();
  for (const image of images) {
    if (named.has(image.id) || image.repoTags.some((t) => named.has(t)) || image.repoDigests.some((d) => named.has(d))) inUse.add(image.id);
  }
  return inUse;
}

/** The references a container holds on its image: the image it names and the one the runtime resolved. */
export function containerImageReferences(containers: readonly Pick<Container, 'image' | 'imageRef'>[]): string[] {
  return containers.flatMap((c) => [c.image, c.imageRef]);
}

/**
 * The records after a look (detectImages): every listed image has one, first detected at
 * `detectedAt` when new; those in use were last used `now`; size and pinning are the runtime's
 * latest; images no longer listed are dropped. Records keep their order, new ones after, in the
 * runtime's listing order.
 */
export function updatedRecords(records: ReadonlyMap<string, ImageRecord>, images: readonly ImageInfo[], inUse: ReadonlySet<string>, detectedAt: number, now: number): Map<string, ImageRecord> {
  const listed = new Map(images.map((image) => [image.id, image]));
  const next = new Map<string, ImageRecord>();
  for (const [id, record] of records) {
    const image = listed.get(id);
    if (image) next.set(id, { ...record, name: nameOf(image), size: image.size, pinned: image.pinned === true, lastUsed: inUse.has(id) ? now : record.lastUsed });
  }
  for (const image of images) {
    if (next.has(image.id)) continue;
    next.set(image.id, { id: image.id, name: nameOf(image), firstDetected: detectedAt, lastUsed: inUse.has(image.id) ? now : -Infinity, size: image.size, pinned: image.pinned === true });
  }
  return next;
}

function nameOf(image: ImageInfo): string {
  return image.repoTags[0] ?? image.id;
}

/**
 * The images a round may free, in the order it frees them (imagesInEvictionOrder,
 * byLastUsedAndDetected): neither in use nor pinned, least recently used first, then first
 * detected first. Go's sort leaves the order of full ties open; here they keep the records' order.
 */
export function evictionOrder(records: Iterable<ImageRecord>, inUse: ReadonlySet<string>): ImageRecord[] {
  return [...records].filter((r) => !inUse.has(r.id) && !r.pinned).sort((a, b) => (a.lastUsed === b.lastUsed ? a.firstDetected - b.firstDetected : a.lastUsed - b.lastUsed));
}

/**
 * The images to free for their age (freeOldImages): those last used more than imageMaximumGCAge
 * before `freeTime`, an image never seen in use counting as unused for ever. None while the
 * maximum age is 0, nor until the collector has run for longer than it (since `beganGc`): before
 * that, a look that has not yet seen an image in use says nothing of how long it has been unused.
 * The minimum age does not hold here, as in the kubelet.
 */
export function imagesTooOld(candidates: readonly ImageRecord[], policy: Pick<ImageGcPolicy, 'maxAgeMs'>, freeTime: number, beganGc: number): ImageRecord[] {
  if (policy.maxAgeMs === 0 || freeTime - beganGc <= policy.maxAgeMs) return [];
  return candidates.filter((image) => freeTime - image.lastUsed > policy.maxAgeMs);
}

/**
 * The image filesystem's usage in whole percent, and what to free to come down to the low
 * threshold when it is at or above the high one, null below it (GarbageCollect): the kubelet's
 * integer arithmetic, `100 - available*100/capacity` and `capacity*(100-low)/100 - available`,
 * each division truncated. `capacity` is more than 0 and `available` at most `capacity`.
 */
export function imageFsUsage(capacity: number, available: number, policy: Pick<ImageGcPolicy, 'highThresholdPercent' | 'lowThresholdPercent'>): { usagePercent: number; amountToFree: number | null } {
  const c = BigInt(Math.trunc(capacity));
  const a = BigInt(Math.trunc(available));
  const usagePercent = 100 - Number((a * 100n) / c);
  if (usagePercent < policy.highThresholdPercent) return { usagePercent, amountToFree: null };
  return { usagePercent, amountToFree: Number((c * BigInt(100 - policy.lowThresholdPercent)) / 100n - a) };
}

/**
 * The images to free for `bytesToFree` (freeSpace), in order: each first detected at least
 * imageMinimumGCAge before `freeTime`, until their sizes reach the amount. The kubelet removes an
 * image before it compares, so an amount of 0 or less still takes the first one.
 */
export function imagesToFree(candidates: readonly ImageRecord[], bytesToFree: number, freeTime: number, policy: Pick<ImageGcPolicy, 'minAgeMs'>): ImageRecord[] {
  const chosen: ImageRecord[] = [];
  let bytes = 0;
  for (const image of candidates) {
    // It may have just been pulled, for a container about to be created.
    if (freeTime - image.firstDetected < policy.minAgeMs) continue;
    chosen.push(image);
    bytes += image.size;
    if (bytes >= bytesToFree) break;
  }
  return chosen;
}

/** A size as the kubelet's FreeDiskSpaceFailed message writes it (formatSize): `512 B`, `26.4 GiB`. */
export function formatSize(sizeBytes: number): string {
  const units = [
    ['TiB', 2n ** 40n],
    ['GiB', 2n ** 30n],
    ['MiB', 2n ** 20n],
    ['KiB', 2n ** 10n],
  ] as const;
  const size = BigInt(Math.trunc(sizeBytes));
  const found = units.find(([, unit]) => size >= unit);
  if (!found) return `${size} B`;
  const [name, unit] = found;
  // Go's %.1f: to the nearest tenth, a tie to the even one.
  const tenths = (size * 10n) / unit;
  const twice = ((size * 10n) % unit) * 2n;
  const rounded = twice > unit || (twice === unit && tenths % 2n === 1n) ? tenths + 1n : tenths;
  return `${rounded / 10n}.${rounded % 10n} ${name}`;
}

// ---------------------------------------------------------------------------------------------
// The manager

/** The image filesystem as the node's stats provider measures it; a figure it lacks counts as 0, as in the kubelet. */
interface ImageFsSize {
  capacityBytes?: number;
  availableBytes?: number;
}

export interface ImageGcDeps {
  /** The containers it lists, in any state (GetPods(true)). */
  runtime: Pick<RuntimeService, 'listContainers'>;
  /**
   * The runtime's sandbox image, as its verbose Status named it when the agent started: kept as if
   * in use, since containerd 1.6 does not pin it (the kubelet's --pod-infra-container-image was
   * pinned the same way); absent: the runtime did not say.
   */
  sandboxImage?: string;
  images: Pick<ImageService, 'listImages' | 'removeImage' | 'imageStatus'>;
  /** The image filesystem's size and free space (the node's stats provider); undefined when it cannot be measured. */
  imageFs(): Promise<ImageFsSize | undefined>;
  /** The images being pulled now, as the pods name them (ImagePuller.pulling). */
  pulling(): readonly string[];
  policy: ImageGcPolicy;
  now(): number;
  log: Logger;
  recorder: EventRecorder;
  /** The Node, as its events name it (nodeReference). */
  node: ObjectReference;
  /**
   * Told after a round that freed space, with the ids of the images left and when the round began
   * (image_gc_manager.go runPostGCHooks: the kubelet's one hook prunes the pulled-image records,
   * image_pull_manager.go PruneUnknownRecords). Absent: nothing told.
   */
  afterFreeingSpace?: (remainingImageIds: readonly string[], gcStart: number) => Promise<void>;
}

/** An image a round removed, and why: unused too long (`age`), or to free space (`space`), as the kubelet's metric labels them. */
export interface RemovedImage {
  id: string;
  name: string;
  size: number;
  reason: 'age' | 'space';
}

/** What a periodic round did (GarbageCollect), for its caller to show. */
export interface ImageGcRound {
  /** In the order they went: those too old first, then those freed for space. */
  removed: RemovedImage[];
  /** The image filesystem's usage in percent; null when the round ended before measuring it. */
  usagePercent: number | null;
  /** What the round set out to free; null below the high threshold, or when not measured. */
  amountToFree: number | null;
  /** The error the kubelet's GarbageCollect returns; null when the round succeeded. */
  failure: string | null;
}

/** DeleteUnusedImages asks freeSpace for math.MaxInt64 bytes, which its error message prints. */
const MAX_INT64_TEXT = '9223372036854775807';

/** Removals in order, each tried once; a failure is kept and the next one tried (freeImage). */
interface Removals {
  removed: RemovedImage[];
  errors: string[];
}

export class ImageGcManager {
  private records = new Map<string, ImageRecord>();

  constructor(private readonly deps: ImageGcDeps) {}

  /**
   * One periodic round (GarbageCollect), `beganGc` being when the collector started: the images
   * too old, then space down to the low threshold. Never rejects: a failure is the round's
   * `failure`, with what it removed before; FreeDiskSpaceFailed and InvalidDiskCapacity are
   * recorded on the Node as the kubelet records them.
   */
  async garbageCollect(beganGc: number): Promise<ImageGcRound> {
    const { policy, log, recorder, node } = this.deps;
    const round: ImageGcRound = { removed: [], usagePercent: null, amountToFree: null, failure: null };
    const fail = (failure: string): ImageGcRound => ({ ...round, failure });
    try {
      const freeTime = this.deps.now();
      let candidates = await this.candidates(freeTime);
      const old = imagesTooOld(candidates, policy, freeTime, beganGc);
      if (old.length > 0) {
        const byAge = await this.remove(old, 'age');
        round.removed.push(...byAge.removed);
        const gone = new Set(byAge.removed.map((r) => r.id));
        candidates = candidates.filter((c) => !gone.has(c.id));
        if (byAge.errors.length > 0) return fail(`wanted to free images older than ${goDuration(policy.maxAgeMs)}, encountered errors in image deletion: ${aggregateErrors(byAge.errors)}`);
      }

      const fs = await this.deps.imageFs();
      if (!fs) return fail('imageFs information is unavailable');
      const capacity = fs.capacityBytes ?? 0;
      let available = fs.availableBytes ?? 0;
      if (available > capacity) {
        log('info', 'Availability is larger than capacity', { available, capacity });
        available = capacity;
      }
      if (capacity === 0) {
        const message = 'invalid capacity 0 on image filesystem';
        recorder.event(node, 'Warning', 'InvalidDiskCapacity', message);
        return fail(message);
      }
      const { usagePercent, amountToFree } = imageFsUsage(capacity, available, policy);
      round.usagePercent = usagePercent;
      round.amountToFree = amountToFree;
      if (amountToFree === null) return round;

      log('info', 'Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold', {
        usage: usagePercent,
        highThreshold: policy.highThresholdPercent,
        amountToFree,
        lowThreshold: policy.lowThresholdPercent,
      });
      const forSpace = await this.freeSpace(candidates, amountToFree, freeTime);
      round.removed.push(...forSpace.removed);
      const freed = bytesOf(forSpace.removed);
      // Failed to delete images, eg due to a read-only filesystem.
      if (forSpace.errors.length > 0) return fail(freeSpaceError(amountToFree, freed, forSpace.errors));
      // The records now hold every image this round's look listed, less those it removed.
      // A hook returns nothing in the kubelet: its failure is logged, the round's outcome stays.
      await this.deps.afterFreeingSpace?.([...this.records.keys()], freeTime).catch((err: unknown) => log('error', 'post image GC hook failed', { err }));
      if (freed < amountToFree) {
        // Usually a disk full of something else than images (logs, volumes), or of images in use.
        const message =
          `Insufficient free disk space on the node's image filesystem (${usagePercent}% of ${formatSize(capacity)} used). ` +
          `Failed to free sufficient space by deleting unused images (freed ${freed} bytes). ` +
          'Investigate disk usage, as it could be used by active images, logs, volumes, or other data.';
        recorder.event(node, 'Warning', 'FreeDiskSpaceFailed', message);
        return fail(message);
      }
      return round;
    } catch (err) {
      return fail(errorText(err));
    }
  }

  /**
   * The eviction manager's reclaim (DeleteUnusedImages): every unused image first detected at
   * least imageMinimumGCAge ago, least recently used first. Resolves with the bytes freed; rejects
   * when a look or a removal failed (after the other removals).
   */
  async deleteUnusedImages(): Promise<number> {
    this.deps.log('info', 'Attempting to delete unused images');
    const freeTime = this.deps.now();
    const { removed, errors } = await this.freeSpace(await this.candidates(freeTime), Infinity, freeTime);
    const freed = bytesOf(removed);
    if (errors.length > 0) throw new Error(freeSpaceError(Infinity, freed, errors));
    return freed;
  }

  /**
   * A look at the runtime, to keep the records current where no round runs (the image manager's
   * Start, every 5 minutes): the minimum age counts from an image's first detection.
   */
  async detectImages(): Promise<void> {
    await this.look(this.deps.now());
  }

  /** The images in use now, with the records brought up to date. */
  private async look(detectedAt: number): Promise<Set<string>> {
    const { runtime, images } = this.deps;
    const [listed, containers, pulling] = await Promise.all([images.listImages(), runtime.listContainers(), this.pullingIds()]);
    const kept = [...(this.deps.sandboxImage ? [this.deps.sandboxImage] : []), ...pulling];
    const inUse = imagesInUse(listed, [...containerImageReferences(containers), ...kept]);
    this.records = updatedRecords(this.records, listed, inUse, detectedAt, this.deps.now());
    return inUse;
  }

  /** The ids of the images being pulled, as the runtime resolves their references; those it does not have yet are not listed either. */
  private async pullingIds(): Promise<string[]> {
    const found = await Promise.all(this.deps.pulling().map((reference) => this.deps.images.imageStatus(reference)));
    return found.flatMap((image) => (image ? [image.id] : []));
  }

  private async candidates(freeTime: number): Promise<ImageRecord[]> {
    // The records as this look leaves them: the images it found for the first time are candidates too.
    const inUse = await this.look(freeTime);
    return evictionOrder(this.records.values(), inUse);
  }

  /** Frees `bytesToFree` from `candidates` (freeSpace): past a failed removal, on to the next image. */
  private async freeSpace(candidates: readonly ImageRecord[], bytesToFree: number, freeTime: number): Promise<Removals> {
    const done: Removals = { removed: [], errors: [] };
    const tried = new Set<string>();
    for (;;) {
      const next = imagesToFree(
        candidates.filter((c) => !tried.has(c.id)),
        bytesToFree - bytesOf(done.removed),
        freeTime,
        this.deps.policy,
      );
      for (const image of next) tried.add(image.id);
      const batch = await this.remove(next, 'space');
      done.removed.push(...batch.removed);
      done.errors.push(...batch.errors);
      // The kubelet compares after each removal that worked, so a failure never ends the search.
      if (next.length === 0 || (done.removed.length > 0 && bytesOf(done.removed) >= bytesToFree)) return done;
    }
  }

  /** Removes each image in turn (freeImage), forgetting its record; one already gone counts as removed, as CRI's RemoveImage is idempotent. */
  private async remove(images: readonly ImageRecord[], reason: RemovedImage['reason']): Promise<Removals> {
    const done: Removals = { removed: [], errors: [] };
    for (const image of images) {
      this.deps.log('info', 'Removing image to free bytes', { imageID: image.id, image: image.name, size: image.size });
      try {
        await this.deps.images.removeImage(image.id);
      } catch (err) {
        if (!isNotFound(err)) {
          done.errors.push(errorText(err));
          continue;
        }
      }
      this.records.delete(image.id);
      done.removed.push({ id: image.id, name: image.name, size: image.size, reason });
    }
    return done;
  }
}

function bytesOf(removed: readonly RemovedImage[]): number {
  return removed.reduce((sum, image) => sum + image.size, 0);
}

function freeSpaceError(bytesToFree: number, freed: number, errors: readonly string[]): string {
  const wanted = Number.isFinite(bytesToFree) ? String(bytesToFree) : MAX_INT64_TEXT;
  return `wanted to free ${wanted} bytes, but freed ${freed} bytes space with errors in image deletion: ${aggregateErrors(errors)}`;
}
