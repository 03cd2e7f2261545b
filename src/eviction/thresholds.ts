/**
 * Eviction thresholds (pkg/kubelet/eviction/api/types.go; helpers.go ParseThresholdConfig), pure:
 * from the four settings (`--eviction-hard`, `--eviction-soft`, `--eviction-soft-grace-period`,
 * `--eviction-minimum-reclaim`), each a map of signal to value, to the list of thresholds the
 * eviction manager watches. A threshold is met when what its signal observes available is less
 * than its value (the only operator there is); it is hard when it has no grace period.
 */
import { parseQuantity } from '../api/quantity.ts';
import { parseDuration } from '../duration.ts';

/** The signals statelet observes, with the node condition each raises and the resource it starves. */
export const SIGNALS = {
  'memory.available': { condition: 'MemoryPressure', resource: 'memory' },
  'nodefs.available': { condition: 'DiskPressure', resource: 'ephemeral-storage' },
  'nodefs.inodesFree': { condition: 'DiskPressure', resource: 'inodes' },
  'imagefs.available': { condition: 'DiskPressure', resource: 'ephemeral-storage' },
  'imagefs.inodesFree': { condition: 'DiskPressure', resource: 'inodes' },
  'pid.available': { condition: 'PIDPressure', resource: 'pids' },
} as const;

export type Signal = keyof typeof SIGNALS;
export type PressureCondition = (typeof SIGNALS)[Signal]['condition'];
export type StarvedResource = (typeof SIGNALS)[Signal]['resource'];

/** The node conditions in the order the kubelet reports them. */
export const PRESSURE_CONDITIONS: readonly PressureCondition[] = ['MemoryPressure', 'DiskPressure', 'PIDPressure'];

/** A quantity (bytes, inodes, pids) or a fraction of the signal's capacity. */
export type ThresholdValue = { quantity: number } | { percentage: number };

export interface Threshold {
  signal: Signal;
  value: ThresholdValue;
  /** 0: a hard threshold, acted on at once. */
  gracePeriodMs: number;
  minReclaim?: ThresholdValue;
}

export interface EvictionSettings {
  evictionHard: Readonly<Record<string, string>>;
  evictionSoft: Readonly<Record<string, string>>;
  evictionSoftGracePeriod: Readonly<Record<string, string>>;
  evictionMinimumReclaim: Readonly<Record<string, string>>;
}

function signalOf(name: string): Signal {
  if (name in SIGNALS) return name as Signal;
  if (name.startsWith('containerfs.')) {
    // The kubelet derives these from nodefs or imagefs and ignores a value given for them.
    throw new Error(`eviction signal ${name} follows nodefs (or imagefs) and cannot be set on its own: set ${name.replace('containerfs', 'nodefs')} instead`);
  }
  if (name === 'allocatableMemory.available') {
    throw new Error('eviction signal allocatableMemory.available needs node allocatable enforced on a pods cgroup, which statelet does not manage yet');
  }
  throw new Error(`unsupported eviction signal ${name} (supported: ${Object.keys(SIGNALS).join(', ')})`);
}

/** `10%` as 0.1; the kubelet's own messages for what is out of range. */
function percentage(signal: string, text: string): number {
  const value = Number(text.slice(0, -1));
  if (text.slice(0, -1).trim() === '' || Number.isNaN(value)) throw new Error(`eviction threshold ${signal}: ${JSON.stringify(text)} is not a percentage`);
  return value / 100;
}

/** One statement of --eviction-hard or --eviction-soft; null for the ignored 0% and 100%. */
function thresholdValue(signal: Signal, text: string): ThresholdValue | null {
  if (text.endsWith('%')) {
    if (text === '0%' || text === '100%') return null;
    const fraction = percentage(signal, text);
    if (fraction < 0) throw new Error(`eviction percentage threshold ${signal} must be >= 0%: ${text}`);
    if (fraction > 1) throw new Error(`eviction percentage threshold ${signal} must be <= 100%: ${text}`);
    return { percentage: fraction };
  }
  const quantity = parseQuantity(text);
  if (quantity instanceof Error) throw new Error(`eviction threshold ${signal}: ${quantity.message}`);
  if (quantity <= 0) throw new Error(`eviction threshold ${signal} must be positive: ${text}`);
  return { quantity };
}

function minimumReclaim(signal: Signal, text: string): ThresholdValue {
  if (text.endsWith('%')) {
    const fraction = percentage(signal, text);
    if (fraction <= 0) throw new Error(`eviction percentage minimum reclaim ${signal} must be positive: ${text}`);
    return { percentage: fraction };
  }
  const quantity = parseQuantity(text);
  if (quantity instanceof Error) throw new Error(`eviction minimum reclaim ${signal}: ${quantity.message}`);
  if (quantity < 0) throw new Error(`negative eviction minimum reclaim specified for ${signal}`);
  return { quantity };
}

/**
 * The thresholds, hard ones first; throws with the kubelet's message when a statement is wrong
 * (an unknown signal, a value out of range, a soft threshold without its grace period).
 */
export function parseThresholds(settings: EvictionSettings): Threshold[] {
  const thresholds: Threshold[] = [];
  const statements = (map: Readonly<Record<string, string>>, gracePeriodMs: (signal: Signal) => number) => {
    for (const [name, text] of Object.entries(map)) {
      const signal = signalOf(name);
      const value = thresholdValue(signal, text.trim());
      if (value) thresholds.push({ signal, value, gracePeriodMs: gracePeriodMs(signal) });
    }
  };
  const graces = new Map<Signal, number>();
  for (const [name, text] of Object.entries(settings.evictionSoftGracePeriod)) {
    const signal = signalOf(name);
    const ms = parseDuration(text.trim(), { allowNegative: true });
    if (ms < 0) throw new Error(`invalid eviction grace period specified: ${text}, must be a positive value`);
    graces.set(signal, ms);
  }
  statements(settings.evictionHard, () => 0);
  statements(settings.evictionSoft, (signal) => {
    const ms = graces.get(signal);
    if (ms === undefined) throw new Error(`grace period must be specified for the soft eviction threshold ${signal}`);
    return ms;
  });
  for (const [name, text] of Object.entries(settings.evictionMinimumReclaim)) {
    const signal = signalOf(name);
    const reclaim = minimumReclaim(signal, text.trim());
    for (const t of thresholds) if (t.signal === signal) t.minReclaim = reclaim;
  }
  return thresholds;
}

/** A threshold without a grace period evicts as soon as it is met (helpers.go isHardEvictionThreshold). */
export function isHard(threshold: Threshold): boolean {
  return threshold.gracePeriodMs === 0;
}

/** The threshold's value in the signal's unit, for a signal whose capacity is `capacity`. */
export function thresholdQuantity(value: ThresholdValue, capacity: number): number {
  return 'quantity' in value ? value.quantity : Math.floor(value.percentage * capacity);
}

/** `100Mi` or `10%`, as written in flags and messages. */
export function formatThresholdValue(value: ThresholdValue): string {
  if ('percentage' in value) return `${Math.round(value.percentage * 10000) / 100}%`;
  return formatQuantity(value.quantity);
}

/**
 * A byte or count quantity the way resource.Quantity prints a BinarySI value: `100Mi`, `2Gi`,
 * `1536Ki`, `123`; below 1024 in decimal units, as CanonicalizeBytes does (`1k`).
 */
export function formatQuantity(value: number): string {
  const v = Math.round(value);
  if (Math.abs(v) < 1024) return v !== 0 && v % 1000 === 0 ? `${v / 1000}k` : String(v);
  for (const [suffix, unit] of [['Ei', 2 ** 60], ['Pi', 2 ** 50], ['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]] as const) {
    if (v !== 0 && v % unit === 0) return `${v / unit}${suffix}`;
  }
  return String(v);
}

/** What a signal observes, for people: bytes in the largest binary unit (`23.5Gi`), inodes and pids as counts. */
export function readableAmount(signal: Signal, value: number): string {
  const resource = SIGNALS[signal].resource;
  if (resource !== 'memory' && resource !== 'ephemeral-storage') return String(Math.round(value));
  for (const [suffix, unit] of [['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]] as const) {
    if (value >= unit) return `${Math.round((value / unit) * 10) / 10}${suffix}`;
  }
  return String(Math.round(value));
}
