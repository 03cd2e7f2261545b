/**
 * The sim's image store. Every image can be pulled (after a simulated delay) except those the
 * configuration or the naming convention marks as absent from the registry:
 *
 * - the name contains `doesnotexist`, or
 * - the registry host ends in `.invalid` (RFC 2606 reserves the TLD), e.g. `sim.invalid/app:1`, or
 * - the normalised name is listed in `missingImages`.
 *
 * A registry may be private (`registryAuth`, or `requireCredentials`): it serves its images only to
 * a pull with its username and password, and refuses others as containerd 1.6 reports a registry
 * that answers 401 to a basic-auth login (remotes/docker/resolver.go Resolve: the manifest's
 * request and its status), the same words without credentials and with wrong ones:
 * `pulling from host <host> failed with status code [manifests <tag>]: 401 Unauthorized`.
 *
 * Their sizes are simulated: stable and plausible, or the one a tag declares (`:3Gi`).
 *
 * Names are normalised the way containerd resolves them (`busybox` ⇒
 * `docker.io/library/busybox:latest`), so `ImageStatus("busybox")` finds a pulled
 * `docker.io/library/busybox:latest`.
 */

import { createHash } from 'node:crypto';
import type { AuthConfig, ImageInfo } from '../types.ts';
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

/** The username and password a private registry takes. */
export interface RegistryCredential {
  username: string;
  password: string;
}

interface ImageStoreOptions {
  clock: Clock;
  pullDelayMs: number;
  initialImages: readonly string[];
  missingImages: readonly string[];
  /** Private registries by host (`registry.example.com`, `127.0.0.1:5000`, `docker.io`). */
  registryAuth: Readonly<Record<string, RegistryCredential>>;
}

/** The username and password a pull presents (containerd pkg/cri/server/image_pull.go ParseAuth): `auth` when no username. */
function presented(auth: AuthConfig | undefined): { username: string; password: string } {
  if (!auth) return { username: '', password: '' };
  if (auth.username) return { username: auth.username, password: auth.password ?? '' };
  if (auth.auth) {
    const decoded = Buffer.from(auth.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  return { username: '', password: '' };
}

/** The URL containerd asks a registry for a reference's manifest at (Docker Hub's is registry-1.docker.io). */
/** The registry host and the manifest reference (tag or digest) of a normalized name. */
function manifestOf(normalized: string): { host: string; reference: string } {
  const host = registryHost(normalized);
  const at = normalized.indexOf('@');
  return { host, reference: normalized.slice((at >= 0 ? at : normalized.lastIndexOf(':')) + 1) };
}

export class ImageStore {
  private readonly byName = new Map<string, StoredImage>();
  private readonly byId = new Map<string, StoredImage>();
  private readonly missing: Set<string>;
  private readonly registryAuth: Map<string, RegistryCredential>;
  /** Pulls in flight, shared by concurrent callers for the same image. */
  private readonly pulls = new Map<string, { promise: Promise<ImageInfo>; timer: TimerHandle; reject(error: Error): void }>();

  constructor(private readonly options: ImageStoreOptions) {
    this.missing = new Set(options.missingImages.map(normalizeImageRef));
    this.registryAuth = new Map(Object.entries(options.registryAuth));
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

  /** Makes a registry private, taking only this username and password (null: public again). */
  requireCredentials(host: string, credential: RegistryCredential | null): void {
    if (credential) this.registryAuth.set(host, { ...credential });
    else this.registryAuth.delete(host);
  }

  /** Why the registry refuses this pull, in containerd's words; null when it serves it. */
  private refusal(name: string, auth: AuthConfig | undefined): string | null {
    const required = this.registryAuth.get(registryHost(name));
    if (!required) return null;
    const { username, password } = presented(auth);
    if (username === required.username && password === required.password) return null;
    const { host, reference } = manifestOf(name);
    return `failed to pull and unpack image "${name}": failed to resolve reference "${name}": pulling from host ${host} failed with status code [manifests ${reference}]: 401 Unauthorized`;
  }

  existsInRegistry(reference: string): boolean {
    const name = normalizeImageRef(reference);
    return !(name.includes('doesnotexist') || registryHost(name).endsWith('.invalid') || this.missing.has(name));
  }

  /**
   * Resolves with the pulled image; rejects with NOT_FOUND (as containerd does) for absent images,
   * and with UNKNOWN (containerd's code for a registry's refusal) when the registry is private and
   * `auth` does not carry its credentials. Concurrent pulls of one image with the same credentials
   * share one.
   */
  pull(reference: string, auth?: AuthConfig): Promise<ImageInfo> {
    const name = normalizeImageRef(reference);
    const { username, password } = presented(auth);
    const key = `${name}\u0000${username}\u0000${password}`;
    const inFlight = this.pulls.get(key);
    if (inFlight) return inFlight.promise;
    let settle!: { resolve(info: ImageInfo): void; reject(error: Error): void };
    const promise = new Promise<ImageInfo>((resolve, reject) => {
      settle = { resolve, reject };
    });
    const complete = (): void => {
      this.pulls.delete(key);
      const refused = this.refusal(name, auth);
      if (refused) {
        settle.reject(new SimError('UNKNOWN', refused));
        return;
      }
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
    this.pulls.set(key, { promise, timer, reject: settle.reject });
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
