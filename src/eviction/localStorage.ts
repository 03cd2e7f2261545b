/**
 * Local ephemeral storage limits, pure (pkg/kubelet/eviction/eviction_manager.go
 * localStorageEviction, emptyDirLimitEviction, podEphemeralStorageLimitEviction,
 * containerEphemeralStorageLimitEviction; helpers.go emptyDirMessageFmt,
 * podEphemeralStorageMessageFmt, containerEphemeralStorageMessageFmt). Each round, before any
 * threshold is acted on, every active pod with stats is checked, the first rule it breaks naming
 * why it goes:
 *
 *   emptyDir   a volume's usage above its positive `sizeLimit` (any medium: the kubelet asks only
 *              for an emptyDir with a size limit and usage figures);
 *   pod        its ephemeral-storage usage (the containers' writable layers and logs, and its local
 *              ephemeral volumes) above its ephemeral-storage limit as PodLimits adds it up: the
 *              regular containers and sidecars that name one, at least each init container's, plus
 *              the overhead; a pod where no container names one is not checked;
 *   container  a regular container's logs, and its writable layer unless the image filesystem is
 *              dedicated (the layer is then on another disk: `dedicatedImageFs`), above its own
 *              non-zero limit.
 *
 * Quantities in messages are printed as resource.Quantity's String prints them: canonical, in the
 * form they were written (`1Mi`, `500M`, `1e9`). Several pods may break a rule in one round; each
 * is evicted.
 */
import { parseQuantity } from '../api/quantity.ts';
import type { Pod } from '../api/types.ts';
import type { PodSummary } from '../stats/summary.ts';
import { type PodVolume, podVolumes } from '../volumes/plan.ts';

type StatsOf = (pod: Pod) => PodSummary | undefined;

/** How long a pod evicted for its local storage gets (immediateEvictionGracePeriodSeconds). */
export const LOCAL_STORAGE_GRACE_PERIOD_SECONDS = 1;

export interface LocalStorageViolation {
  pod: Pod;
  /** The eviction message, ending with a space as the kubelet writes it. */
  message: string;
}

// ------------------------------------------------------------------------------------------------
// Quantities as resource.Quantity keeps them: a value and the form it was written in.

type QuantityFormat = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

export interface Quantity {
  value: number;
  format: QuantityFormat;
}

/** A quantity as written (`1Mi` BinarySI, `1G` or `1000` DecimalSI, `1e3` DecimalExponent); undefined when absent or not a quantity. */
export function quantityOf(written: string | number | undefined): Quantity | undefined {
  if (written === undefined) return undefined;
  if (typeof written === 'number') return Number.isFinite(written) ? { value: written, format: 'DecimalSI' } : undefined;
  const value = parseQuantity(written);
  if (value instanceof Error) return undefined;
  const text = written.trim();
  const format: QuantityFormat = /[KMGTPE]i$/.test(text) ? 'BinarySI' : /\d[eE][+-]?\d+$/.test(text) ? 'DecimalExponent' : 'DecimalSI';
  return { value, format };
}

const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const DECIMAL_SUFFIXES: Record<number, string> = { [-9]: 'n', [-6]: 'u', [-3]: 'm', 0: '', 3: 'k', 6: 'M', 9: 'G', 12: 'T', 15: 'P', 18: 'E' };

const isWhole = (x: number) => Math.abs(x - Math.round(x)) <= 1e-9 * Math.max(1, Math.abs(x));

/**
 * The quantity as Quantity.String writes it (CanonicalizeBytes): BinarySI in the largest binary
 * unit that divides it (`1Mi`, `1536Ki`), falling back to DecimalSI below 1024 or for a fraction;
 * DecimalSI and DecimalExponent with a power of ten that is a multiple of three (`1500M`, `1k`,
 * `100m`, `1e3`).
 */
export function canonicalQuantity(q: Quantity): string {
  if (q.value === 0) return '0';
  if (q.format === 'BinarySI' && Math.abs(q.value) >= 1024 && Number.isInteger(q.value)) {
    let mantissa = q.value;
    let exponent = 0;
    while (exponent < BINARY_SUFFIXES.length - 1 && mantissa % 1024 === 0) {
      mantissa /= 1024;
      exponent++;
    }
    return `${mantissa}${BINARY_SUFFIXES[exponent]}`;
  }
  // A whole mantissa and a power of ten, the power then lowered to a multiple of three.
  let scale = 0;
  while (scale < 9 && !isWhole(q.value * 10 ** scale)) scale++;
  let mantissa = Math.round(q.value * 10 ** scale);
  let exponent = -scale;
  while (mantissa !== 0 && mantissa % 10 === 0) {
    mantissa /= 10;
    exponent++;
  }
  const lower = ((exponent % 3) + 3) % 3;
  mantissa *= 10 ** lower;
  exponent -= lower;
  const suffix = q.format === 'DecimalExponent' ? undefined : DECIMAL_SUFFIXES[exponent];
  if (suffix !== undefined) return `${mantissa}${suffix}`;
  return exponent === 0 ? String(mantissa) : `${mantissa}e${exponent}`;
}

/** Quantity.Add: the sum keeps the first one's form, unless that was zero. */
function add(a: Quantity | undefined, b: Quantity | undefined): Quantity | undefined {
  if (!b) return a;
  if (!a) return { ...b };
  return { value: a.value + b.value, format: a.value === 0 ? b.format : a.format };
}

/** maxResourceList for one resource: the larger, the first kept on a tie. */
function larger(a: Quantity | undefined, b: Quantity | undefined): Quantity | undefined {
  if (!b) return a;
  return !a || b.value > a.value ? { ...b } : a;
}

// ------------------------------------------------------------------------------------------------
// The pod's limit and usage

const EPHEMERAL_STORAGE = 'ephemeral-storage';

/**
 * The pod's ephemeral-storage limit as the kubelet adds it up (component-helpers resource PodLimits
 * with no options, for one resource): the regular containers and the sidecars summed, at least
 * what each init container needs beside the sidecars started before it, plus the pod's overhead
 * when the limit is not zero. Undefined when no container names the resource.
 */
export function podEphemeralStorageLimit(pod: Pod): Quantity | undefined {
  const limitOf = (c: Pod['spec']['containers'][number]) => quantityOf(c.resources?.limits?.[EPHEMERAL_STORAGE]);
  let total: Quantity | undefined;
  for (const c of pod.spec.containers) total = add(total, limitOf(c));
  let sidecars: Quantity | undefined;
  let initPeak: Quantity | undefined;
  for (const c of pod.spec.initContainers ?? []) {
    const own = limitOf(c);
    if (c.restartPolicy === 'Always') {
      total = add(total, own);
      sidecars = add(sidecars, own);
      initPeak = larger(initPeak, sidecars);
    } else {
      initPeak = larger(initPeak, add(add(undefined, own), sidecars));
    }
  }
  total = larger(total, initPeak);
  const overhead = quantityOf(pod.spec.overhead?.[EPHEMERAL_STORAGE]);
  if (total && total.value !== 0 && overhead) total = add(total, overhead);
  return total;
}

/** A volume whose files are on the node's disk for the pod's life (volume/util IsLocalEphemeralVolume). */
function isLocalEphemeralVolume(volume: PodVolume): boolean {
  return volume['gitRepo'] !== undefined || volume.configMap !== undefined || (volume.emptyDir !== undefined && (volume.emptyDir.medium ?? '') === '');
}

/**
 * The pod's ephemeral-storage usage as the stats provider sums it (stats/helper.go
 * calcEphemeralStorage): each container's writable layer and, where it has one, its logs; and the
 * pod's local ephemeral volumes.
 */
export function podEphemeralStorageUsage(pod: Pod, stats: PodSummary): number {
  let used = 0;
  for (const c of stats.containers) {
    if (!c.rootfs) continue;
    used += (c.rootfs.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0);
  }
  const local = new Set(podVolumes(pod).filter(isLocalEphemeralVolume).map((v) => v.name));
  for (const v of stats.volume ?? []) if (local.has(v.name)) used += v.usedBytes ?? 0;
  return used;
}

// ------------------------------------------------------------------------------------------------
// The three rules

/** emptyDirLimitEviction: the first emptyDir, in the pod's order, using more than its size limit. */
function emptyDirViolation(pod: Pod, stats: PodSummary): string | null {
  const used = new Map((stats.volume ?? []).filter((v) => v.usedBytes !== undefined).map((v) => [v.name, v.usedBytes!]));
  for (const volume of podVolumes(pod)) {
    if (!volume.emptyDir) continue;
    const size = quantityOf(volume.emptyDir.sizeLimit);
    const usage = used.get(volume.name);
    if (usage !== undefined && size && size.value > 0 && usage > size.value) {
      return `Usage of EmptyDir volume ${JSON.stringify(volume.name)} exceeds the limit ${JSON.stringify(canonicalQuantity(size))}. `;
    }
  }
  return null;
}

/** podEphemeralStorageLimitEviction: the pod's total usage above its limit. */
function podViolation(pod: Pod, stats: PodSummary): string | null {
  const limit = podEphemeralStorageLimit(pod);
  if (!limit) return null;
  if (podEphemeralStorageUsage(pod, stats) <= limit.value) return null;
  return `Pod ephemeral local storage usage exceeds the total limit of containers ${canonicalQuantity(limit)}. `;
}

/**
 * containerEphemeralStorageLimitEviction: the first container, in the stats' order, above its own
 * limit, counting its writable layer only where it shares nodefs's disk.
 */
function containerViolation(pod: Pod, stats: PodSummary, dedicatedImageFs: boolean): string | null {
  const limits = new Map<string, Quantity>();
  for (const c of pod.spec.containers) {
    const limit = quantityOf(c.resources?.limits?.[EPHEMERAL_STORAGE]);
    if (limit && limit.value !== 0) limits.set(c.name, limit);
  }
  for (const c of stats.containers) {
    const limit = limits.get(c.name);
    if (!limit) continue;
    const used = (c.logs?.usedBytes ?? 0) + (dedicatedImageFs ? 0 : (c.rootfs?.usedBytes ?? 0));
    if (limit.value < used) return `Container ${c.name} exceeded its local ephemeral storage limit ${JSON.stringify(canonicalQuantity(limit))}. `;
  }
  return null;
}

/**
 * Whether any rule can name the pod: an emptyDir with a positive `sizeLimit`, or a container that
 * names an ephemeral-storage limit (a regular container's own limit counts into the pod's). A pod
 * without one cannot be over a limit, whatever it uses, so its usage need not be read.
 */
export function hasLocalStorageLimit(pod: Pod): boolean {
  if (podEphemeralStorageLimit(pod) !== undefined) return true;
  return podVolumes(pod).some((v) => v.emptyDir !== undefined && (quantityOf(v.emptyDir.sizeLimit)?.value ?? 0) > 0);
}

/**
 * The pods over a local-storage limit, in the order given, each with the first rule it breaks
 * (localStorageEviction): its emptyDirs, then the pod's total, then its containers. A pod without
 * stats is skipped. Whether a pod may be evicted at all (critical pods may not) is the caller's.
 */
export function localStorageViolations(pods: readonly Pod[], statsOf: StatsOf, dedicatedImageFs = false): LocalStorageViolation[] {
  const violations: LocalStorageViolation[] = [];
  for (const pod of pods) {
    const stats = statsOf(pod);
    if (!stats) continue;
    const message = emptyDirViolation(pod, stats) ?? podViolation(pod, stats) ?? containerViolation(pod, stats, dedicatedImageFs);
    if (message !== null) violations.push({ pod, message });
  }
  return violations;
}
