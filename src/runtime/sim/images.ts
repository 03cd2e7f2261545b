/**
 * The sim's image store. Every image can be pulled (after a simulated delay) except those the
 * configuration or the naming convention marks as absent from the registry:
 *
 * - the name contains `doesnotexist`, or
 * - the registry host ends in `.invalid` (RFC 2606 reserves the TLD), e.g. `sim.invalid/app:1`, or
 * - the normalised name is listed in `missingImages`.
 *
 * Their sizes are simulated: stable and plausible, or the one a tag declares (`:3Gi`).
 *
 * Names are normalised the way containerd resolves them (`busybox` ⇒
 * `docker.io/library/busybox:latest`), so `ImageStatus("busybox")` finds a pulled
 * `docker.io/library/busybox:latest`.
 */

import { createHash } from 'node:crypto';
import type { ImageInfo } from '../types.ts';
import type { Clock, TimerHandle } from '../../clock.ts';
import { SimError } from './errors.ts';

/** The image of every sandbox's pause process, as containerd's sandbox_image. */
export const SANDBOX_IMAGE = 'registry.k8s.io/pause:3.9';

export const DEFAULT_IMAGES: readonly string[] = ['docker.io/library/busybox:latest', SANDBOX_IMAGE];

/** Turns a short image reference into the fully qualified form containerd stores. */
function normalizeImageRef(reference: string): string {
  let ref = reference.trim();
  if (ref.startsWith('sha256:')) return ref;
  const firstSlash = ref.indexOf('/');
  const firstComponent = firstSlash < 0 ? '' : ref.slice(0, firstSlash);
  const hasDomain = firstComponent.includes('.') || firstComponent.includes(':') || firstComponent === 'localhost';
  if (!hasDomain) ref = firstSlash < 0 ? `docker.io/library/${ref}` : `docker.io/${ref}`;
  const lastComponent = ref.slice(ref.lastIndexOf('/') + 1);
  if (!lastComponent.includes(':') && !ref.includes('@')) ref = `${ref}:latest`;
  return ref;
}

const BINARY_UNITS: Readonly<Record<string, number>> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };

/**
 * The size a tag declares: a tag that is a binary quantity (`sim.example/filler:3Gi`) makes an
 * image of that many bytes, so that a test can fill the image filesystem to the usage it needs
 * (nothing is written: see README.md, "Stats"). Any other tag declares none.
 */
function declaredSize(normalized: string): number | undefined {
  const tag = /:(\d+)(Ki|Mi|Gi|Ti)$/.exec(normalized.slice(normalized.lastIndexOf('/') + 1));
  return tag ? Number(tag[1]) * BINARY_UNITS[tag[2]!]! : undefined;
}

function registryHost(normalized: string): string {
  return normalized.slice(0, normalized.indexOf('/'));
}

interface StoredImage {
  info: ImageInfo;
  /** The normalised name it was pulled as. */
  name: string;
}

interface ImageStoreOptions {
  clock: Clock;
  pullDelayMs: number;
  initialImages: readonly string[];
  missingImages: readonly string[];
}

export class ImageStore {
  private readonly byName = new Map<string, StoredImage>();
  private readonly byId = new Map<string, StoredImage>();
  private readonly missing: Set<string>;
  /** Pulls in flight, shared by concurrent callers for the same image. */
  private readonly pulls = new Map<string, { promise: Promise<ImageInfo>; timer: TimerHandle; reject(error: Error): void }>();

  constructor(private readonly options: ImageStoreOptions) {
    this.missing = new Set(options.missingImages.map(normalizeImageRef));
    for (const image of options.initialImages) this.add(normalizeImageRef(image));
  }

  /** Puts the image in the store, as an import would (`ctr images import`). */
  load(reference: string): ImageInfo {
    const name = normalizeImageRef(reference);
    return this.byName.get(name)?.info ?? this.add(name);
  }

  /** Whether the simulated registry has the image; `setMissing` takes it out of it (or puts it back). */
  setMissing(reference: string, missing = true): void {
    const name = normalizeImageRef(reference);
    if (missing) this.missing.add(name);
    else this.missing.delete(name);
  }

  existsInRegistry(reference: string): boolean {
    const name = normalizeImageRef(reference);
    return !(name.includes('doesnotexist') || registryHost(name).endsWith('.invalid') || this.missing.has(name));
  }

  /** Resolves with the pulled image; rejects with NOT_FOUND (as containerd does) for absent images. */
  pull(reference: string): Promise<ImageInfo> {
    const name = normalizeImageRef(reference);
    const inFlight = this.pulls.get(name);
    if (inFlight) return inFlight.promise;
    let settle!: { resolve(info: ImageInfo): void; reject(error: Error): void };
    const promise = new Promise<ImageInfo>((resolve, reject) => {
      settle = { resolve, reject };
    });
    const complete = (): void => {
      this.pulls.delete(name);
      if (!this.existsInRegistry(name)) {
        settle.reject(
          new SimError(
            'NOT_FOUND',
            `failed to pull and unpack image "${name}": failed to resolve reference "${name}": ${name}: not found`,
          ),
        );
        return;
      }
      settle.resolve(this.byName.get(name)?.info ?? this.add(name));
    };
    // No delay means no timer at all, so tests on a fake clock need not advance it for pulls.
    if (this.options.pullDelayMs <= 0) {
      complete();
      return promise;
    }
    const timer = this.options.clock.setTimeout(complete, this.options.pullDelayMs);
    this.pulls.set(name, { promise, timer, reject: settle.reject });
    return promise;
  }

  /** Looks an image up by name (short or qualified), id, or repo digest. */
  status(reference: string): ImageInfo | null {
    return this.find(reference)?.info ?? null;
  }

  list(): ImageInfo[] {
    return [...this.byName.values()].map((image) => image.info);
  }

  remove(reference: string): void {
    const image = this.find(reference);
    if (!image) return;
    this.byName.delete(image.name);
    this.byId.delete(image.info.id);
  }

  /** Abandons pulls in flight: the runtime is going away. */
  close(): void {
    for (const pull of this.pulls.values()) {
      this.options.clock.clearTimeout(pull.timer);
      pull.reject(new SimError('UNAVAILABLE', 'runtime is shutting down'));
    }
    this.pulls.clear();
  }

  private find(reference: string): StoredImage | undefined {
    return this.byId.get(reference) ?? this.byId.get(`sha256:${reference}`) ?? this.byName.get(normalizeImageRef(reference)) ?? this.findByDigest(reference);
  }

  private findByDigest(reference: string): StoredImage | undefined {
    if (!reference.includes('@')) return undefined;
    for (const image of this.byName.values()) if (image.info.repoDigests.includes(reference)) return image;
    return undefined;
  }

  private add(name: string): ImageInfo {
    const digest = createHash('sha256').update(name).digest('hex');
    const at = name.indexOf('@');
    const repository = at >= 0 ? name.slice(0, at) : name.slice(0, name.lastIndexOf(':') > name.lastIndexOf('/') ? name.lastIndexOf(':') : name.length);
    const info: ImageInfo = {
      id: `sha256:${digest}`,
      repoTags: at >= 0 ? [] : [name],
      repoDigests: at >= 0 ? [name] : [`${repository}@sha256:${digest}`],
      // The tag's, or a plausible, stable size so image accounting has something to add up.
      size: declaredSize(name) ?? 1_000_000 + (parseInt(digest.slice(0, 6), 16) % 9_000_000),
      // The sandbox image is pinned, as containerd pins its sandbox_image.
      ...(name === SANDBOX_IMAGE ? { pinned: true } : {}),
    };
    const image: StoredImage = { info, name };
    this.byName.set(name, image);
    this.byId.set(info.id, image);
    return info;
  }
}
