/**
 * The single table of settings: for each one its AgentConfig key, value type, command-line flag,
 * KubeletConfiguration field, help group and help text. `flags.ts` drives command-line parsing and
 * `--help` from it, and `kubeletConfig.ts` drives config-file mapping from it, so adding a setting
 * is one entry here. Defaults come from `agentDefaults()` in `config.ts`.
 */

import { unsafeSysctlPatternProblem } from '../api/sysctls.ts';
import net from 'node:net';
import { DurationError, formatDuration, parseDuration } from '../duration.ts';
import { normalizeRuntimeEndpoint, type AgentSettings } from './config.ts';
import { crashLoopPolicy } from '../kuberuntime/backoff.ts';
import { VERIFICATION_POLICIES, parseAllowlist } from '../kuberuntime/pullPolicy.ts';
import type { Taint } from '../api/cluster.ts';
import { parseQuantity } from '../api/quantity.ts';
import { labelProblem } from '../api/validate.ts';
import { MAX_USERNS_PODS } from '../userns/rules.ts';
import { TLS_VERSIONS, cipherSuiteProblem } from './tlsSettings.ts';
import { nonDefaultGates } from './featureGates.ts';

/** A value was rejected; `message` is the reason only, and the caller names the flag or field. */
export class ValueError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'ValueError';
  }
}

/**
 * How one type of value is read from flag text and from a decoded config file, and shown in help.
 * Methods (not function properties) so that a kind of a narrower type can sit in the shared table.
 */
interface ValueKind<T> {
  /** Shown after the flag name in help, like pflag's `--max-pods int`; empty for booleans. */
  readonly placeholder: string;
  /** Booleans take no separate argument: `--flag` means true, and `--flag false` is not a value. */
  readonly takesArgument: boolean;
  fromText(text: string): T;
  fromConfig(value: unknown): T;
  display(value: T): string;
  /** How a repeated flag folds into its earlier occurrences; without it the last one wins. */
  combine?(earlier: T, later: T): T;
  /** The value as a KubeletConfiguration file writes it (`/configz`); without it, as it is. */
  toConfig?(value: T): unknown;
}

export type SettingKey = keyof AgentSettings;

interface OptionSpec<K extends SettingKey> {
  key: K;
  kind: ValueKind<Required<AgentSettings>[K]>;
  /** Long flag name without dashes; absent for config-file-only settings. */
  flag?: string;
  /** KubeletConfiguration field name, a dotted path in a nested block; absent for flag-only settings. */
  configField?: string;
  /** The config-file value is a path, resolved against the file's directory as the kubelet does. */
  configRelativePath?: boolean;
  group: OptionGroup;
  help: string;
  /** Replaces the default shown in help, for defaults that are derived rather than fixed. */
  defaultText?: string;
  /**
   * When the value given takes effect, if not always: a setting given where it would be ignored
   * is refused (a flag) or warned about (a config file field, as unknown fields are), so that the
   * agent never runs with a setting the user did not get. `reason` says what it needs.
   */
  onlyWith?: { holds(settings: AgentSettings): boolean; reason: string };
  /**
   * Why statelet cannot honour this value, or null when it can: a value it cannot honour is refused
   * at start, naming the flag or field and the value, never run as something else.
   */
  refuse?(value: Required<AgentSettings>[K]): string | null;
  /** For docs/kubelet-config.md: the values refused at start, where some are (by `refuse` or the kind). */
  refusedWhen?: string;
}

export type AnyOptionSpec = OptionSpec<SettingKey>;

/** Why a setting would be ignored: it needs `what`. */
const without = (what: string) => `has no effect without ${what}, and statelet does not take a setting it would ignore`;

/** Where a node's servers listen: with --nodes each node's own address (src/agent/nodes.ts) takes its place. */
const oneNode = { holds: (settings: AgentSettings) => settings.nodes === 1, reason: "is not for --nodes: each node's servers listen on the node's own address (--node-ip, then the next ones)" };

/** Settings of a node in a cluster: they take effect with an API server only. */
const inCluster = { holds: (settings: AgentSettings) => settings.kubeconfig !== undefined && settings.kubeconfig !== '', reason: without('--kubeconfig') };

/** Settings of the pod cgroups: they take effect with --cgroups-per-qos only. */
const withPodCgroups = (isSet: (settings: AgentSettings) => boolean) => ({
  holds: (settings: AgentSettings) => !isSet(settings) || settings.cgroupsPerQos,
  reason: without('--cgroups-per-qos (cgroupsPerQOS), which makes the cgroups it sets'),
});

/**
 * The settings given that would be ignored: each with what it needs (its `onlyWith`). Pure; the
 * caller knows which were given and where.
 */
export function ignoredSettings(settings: AgentSettings): { spec: AnyOptionSpec; reason: string }[] {
  return OPTIONS.flatMap((spec) => (spec.onlyWith && !spec.onlyWith.holds(settings) ? [{ spec, reason: spec.onlyWith.reason }] : []));
}

export const OPTION_GROUPS = [
  'General',
  'Static pods',
  'Container runtime',
  'Node',
  'Cluster',
  'Sync',
  'Serving',
  'Image pulls',
  'Garbage collection',
  'Statelet',
  'Logging',
] as const;
export type OptionGroup = (typeof OPTION_GROUPS)[number];

// ---------------------------------------------------------------------------------------------
// Value kinds

function expectString(value: unknown): string {
  if (typeof value !== 'string') throw new ValueError('expected a string');
  return value;
}

const stringKind: ValueKind<string> = {
  placeholder: 'string',
  takesArgument: true,
  fromText: (text) => text,
  fromConfig: expectString,
  display: (value) => JSON.stringify(value),
};

function ipAddress(text: string): string {
  if (net.isIP(text) === 0) throw new ValueError('not an IP address');
  return text;
}

const ipKind: ValueKind<string> = {
  placeholder: 'ip',
  takesArgument: true,
  fromText: ipAddress,
  fromConfig: (value) => ipAddress(expectString(value)),
  display: (value) => value,
};

/** --node-ip: one address, or an IPv4 and an IPv6 address for a dual-stack node. */
function nodeIps(text: string): string {
  if (text === '') return text;
  const addresses = text.split(',').map((part) => part.trim());
  const families = addresses.map((address) => {
    const family = net.isIP(address);
    if (family === 0) throw new ValueError(`${JSON.stringify(address)} is not an IP address`);
    return family;
  });
  if (families.length > 2) throw new ValueError('at most two addresses (one IPv4, one IPv6)');
  if (families.length === 2 && families[0] === families[1]) {
    throw new ValueError('two addresses must be one IPv4 and one IPv6');
  }
  return addresses.join(',');
}

const nodeIpKind: ValueKind<string> = {
  placeholder: 'ip[,ip]',
  takesArgument: true,
  fromText: nodeIps,
  fromConfig: (value) => nodeIps(expectString(value)),
  display: (value) => value,
};

function httpUrl(text: string): string {
  // Empty means "no URL", which lets a flag switch off a URL set in the config file.
  if (text === '') return text;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ValueError('not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ValueError('expected an http:// or https:// URL');
  return text;
}

const urlKind: ValueKind<string> = {
  placeholder: 'url',
  takesArgument: true,
  fromText: httpUrl,
  fromConfig: (value) => httpUrl(expectString(value)),
  display: (value) => value,
};

function wsUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ValueError('not a URL');
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new ValueError('expected a ws:// or wss:// URL');
  return text;
}

const wsUrlKind: ValueKind<string> = {
  placeholder: 'url',
  takesArgument: true,
  fromText: wsUrl,
  fromConfig: (value) => wsUrl(expectString(value)),
  display: (value) => value,
};

function endpointKind(options: { allowEmpty: boolean }): ValueKind<string> {
  const normalize = (text: string): string => {
    if (text === '') {
      if (options.allowEmpty) return text;
      throw new ValueError('must not be empty');
    }
    try {
      return normalizeRuntimeEndpoint(text);
    } catch (error) {
      throw new ValueError(error instanceof Error ? error.message : String(error));
    }
  };
  return {
    placeholder: 'endpoint',
    takesArgument: true,
    fromText: normalize,
    fromConfig: (value) => normalize(expectString(value)),
    display: (value) => value,
  };
}

function checkRange(value: number, min: number, max: number): number {
  if (value < min || value > max) {
    throw new ValueError(max === Number.MAX_SAFE_INTEGER ? `must be at least ${min}` : `must be between ${min} and ${max}`);
  }
  return value;
}

function intKind(min: number, max: number = Number.MAX_SAFE_INTEGER): ValueKind<number> {
  return {
    placeholder: 'int',
    takesArgument: true,
    fromText(text) {
      if (!/^[+-]?\d+$/.test(text)) throw new ValueError('not an integer');
      const value = Number(text);
      if (!Number.isSafeInteger(value)) throw new ValueError('integer out of range');
      return checkRange(value, min, max);
    },
    fromConfig(value) {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new ValueError('expected an integer');
      return checkRange(value, min, max);
    },
    display: (value) => String(value),
  };
}

const portKind = intKind(0, 65535);

/** The spellings Go's strconv.ParseBool accepts, which is what pflag uses for boolean flags. */
const TRUE_TEXT = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);
const FALSE_TEXT = new Set(['0', 'f', 'F', 'false', 'FALSE', 'False']);

export const boolKind: ValueKind<boolean> = {
  placeholder: '',
  takesArgument: false,
  fromText(text) {
    if (TRUE_TEXT.has(text)) return true;
    if (FALSE_TEXT.has(text)) return false;
    throw new ValueError('not a boolean (expected true or false)');
  },
  fromConfig(value) {
    if (typeof value !== 'boolean') throw new ValueError('expected a boolean');
    return value;
  },
  display: (value) => String(value),
};

/** A duration in milliseconds. Periods reject zero: a zero period would make its loop spin. */
function duration(text: string, allowZero: boolean): number {
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch (error) {
    throw new ValueError(error instanceof DurationError ? error.reason : String(error));
  }
  if (ms === 0 && !allowZero) throw new ValueError('must be greater than 0');
  return ms;
}

function durationKind(allowZero: boolean): ValueKind<number> {
  return {
    placeholder: 'duration',
    takesArgument: true,
    fromText: (text) => duration(text, allowZero),
    fromConfig(value) {
      // metav1.Duration only decodes from a string, so `syncFrequency: 60` is a type error there too.
      if (typeof value !== 'string') throw new ValueError('expected a duration string such as "20s"');
      return duration(value, allowZero);
    },
    display: formatDuration,
    toConfig: formatDuration,
  };
}

const periodKind = durationKind(false);

/**
 * A duration taken even when negative, for the settings the kubelet reads as given and then
 * refuses in its own words (config.ts imageGcSettingsErrors).
 */
function signedDuration(text: string): number {
  try {
    return parseDuration(text, { allowNegative: true });
  } catch (error) {
    throw new ValueError(error instanceof DurationError ? error.reason : String(error));
  }
}

const signedDurationKind: ValueKind<number> = {
  ...durationKind(true),
  fromText: signedDuration,
  fromConfig(value) {
    if (typeof value !== 'string') throw new ValueError('expected a duration string such as "20s"');
    return signedDuration(value);
  },
};

/** A percentage of the image GC's: any integer here, its range checked with the kubelet's message (config.ts imageGcSettingsErrors). */
const imageGcPercentKind = intKind(Number.MIN_SAFE_INTEGER);

/** A period between `minMs` and `maxMs` (inclusive); `why` says where the bound comes from. */
function boundedPeriodKind(minMs: number, maxMs: number, why: string): ValueKind<number> {
  const check = (ms: number): number => {
    if (ms < minMs || ms > maxMs) {
      throw new ValueError(`must be between ${formatDuration(minMs)} and ${formatDuration(maxMs)} (${why})`);
    }
    return ms;
  };
  return {
    ...periodKind,
    fromText: (text) => check(periodKind.fromText(text)),
    fromConfig: (value) => check(periodKind.fromConfig(value)),
  };
}

/** The relist period while the event stream is healthy: /healthz fails after 3 min without a relist. */
const eventedRelistPeriodKind = boundedPeriodKind(1, 60_000, 'the PLEG is unhealthy after 3m0s without a relist');

/**
 * The crash-loop backoff cap: a period on the command line, and the kubelet's
 * `crashLoopBackOff: { maxContainerRestartPeriod: <duration> }` in the config file, with the
 * kubelet's bounds (1 s to 300 s). An empty `crashLoopBackOff` leaves the default.
 */
const maxRestartPeriod = boundedPeriodKind(1_000, 300_000, "the kubelet's bounds");
const crashLoopMaxKind: ValueKind<number> = {
  ...maxRestartPeriod,
  toConfig: (ms) => ({ maxContainerRestartPeriod: formatDuration(ms) }),
  fromConfig(value) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ValueError('expected an object such as { maxContainerRestartPeriod: "5m" }');
    }
    const period: unknown = 'maxContainerRestartPeriod' in value ? value.maxContainerRestartPeriod : undefined;
    if (period === undefined || period === null) return crashLoopPolicy.maxMs;
    try {
      return maxRestartPeriod.fromConfig(period);
    } catch (error) {
      if (error instanceof ValueError) throw new ValueError(`maxContainerRestartPeriod: ${error.message}`);
      throw error;
    }
  },
};

function enumKind<const V extends string>(values: readonly V[]): ValueKind<V> {
  const allowed: ReadonlySet<string> = new Set(values);
  const isValue = (text: string): text is V => allowed.has(text);
  const parse = (text: string): V => {
    if (!isValue(text)) throw new ValueError(`expected one of: ${values.join(', ')}`);
    return text;
  };
  return {
    placeholder: values.join('|'),
    takesArgument: true,
    fromText: parse,
    fromConfig: (value) => parse(expectString(value)),
    display: (value) => value,
  };
}

/** A size in bytes written as a quantity (`10Mi`), as containerLogMaxSize. */
const bytesKind: ValueKind<number> = {
  placeholder: 'quantity',
  takesArgument: true,
  fromText: (text) => {
    const value = parseQuantity(text);
    if (value instanceof Error) throw new ValueError(value.message);
    if (value <= 0) throw new ValueError('must be greater than 0');
    return Math.floor(value);
  },
  fromConfig: (value) => bytesKind.fromText(expectString(value)),
  display: (value) => (value % 2 ** 20 === 0 ? `${value / 2 ** 20}Mi` : value % 1024 === 0 ? `${value / 1024}Ki` : String(value)),
  toConfig: (value) => bytesKind.display(value),
};

type Headers = Record<string, string[]>;

/**
 * `a:hello,b:again,c:world`, the kubelet's colon-separated multimap: values for a repeated name
 * are kept in order, and repeating the flag adds to the earlier occurrences.
 */
const headersKind: ValueKind<Headers> = {
  placeholder: 'name:value,...',
  takesArgument: true,
  fromText(text) {
    const headers: Headers = {};
    for (const pair of text.split(',')) {
      if (pair === '') continue;
      const colon = pair.indexOf(':');
      if (colon < 0) throw new ValueError(`malformed pair ${JSON.stringify(pair)}, expected name:value`);
      const name = pair.slice(0, colon).trim();
      if (name === '') throw new ValueError(`malformed pair ${JSON.stringify(pair)}, header name is empty`);
      (headers[name] ??= []).push(pair.slice(colon + 1).trim());
    }
    return headers;
  },
  fromConfig(value) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ValueError('expected a map of header name to a list of values');
    }
    const headers: Headers = {};
    for (const [name, values] of Object.entries(value)) {
      if (!Array.isArray(values) || !values.every((item) => typeof item === 'string')) {
        throw new ValueError(`header ${JSON.stringify(name)}: expected a list of strings`);
      }
      headers[name] = [...values];
    }
    return headers;
  },
  display: (value) =>
    Object.entries(value)
      .flatMap(([name, values]) => values.map((item) => `${name}:${item}`))
      .join(','),
  combine(earlier, later) {
    const merged: Headers = {};
    for (const [name, values] of Object.entries(earlier)) merged[name] = [...values];
    for (const [name, values] of Object.entries(later)) (merged[name] ??= []).push(...values);
    return merged;
  },
};

/** `key=value,...`: a map of strings; `check` rejects a bad key or value with the reason. */
function stringMapKind(placeholder: string, check: (key: string, value: string) => string | null, separator = '='): ValueKind<Record<string, string>> {
  const validated = (entries: [string, string][]) => {
    const out: Record<string, string> = {};
    for (const [key, value] of entries) {
      const problem = check(key, value);
      if (problem) throw new ValueError(`${key}: ${problem}`);
      out[key] = value;
    }
    return out;
  };
  return {
    placeholder,
    takesArgument: true,
    fromText: (text) =>
      validated(
        text
          .split(',')
          .filter((pair) => pair.trim() !== '')
          .map((pair) => {
            const at = pair.indexOf(separator);
            if (at <= 0) throw new ValueError(`malformed pair ${JSON.stringify(pair)}, expected key${separator}value`);
            return [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
          }),
      ),
    fromConfig(value) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ValueError('expected a map');
      return validated(Object.entries(value).map(([key, item]) => [key, typeof item === 'number' ? String(item) : expectString(item)]));
    },
    display: (value) =>
      Object.entries(value)
        .map(([key, item]) => `${key}${separator}${item}`)
        .join(','),
  };
}

const labelsKind = stringMapKind('key=value,...', (key, value) => labelProblem(key, value));

const resourceListKind = stringMapKind('name=quantity,...', (_key, value) => {
  const parsed = parseQuantity(value);
  if (parsed instanceof Error) return parsed.message;
  return parsed < 0 ? 'must not be negative' : null;
});

/**
 * Eviction statements, signal to value: `memory.available<100Mi,nodefs.available<10%` on the
 * command line (the kubelet's `<`-separated map), a map in the config file. What each value may be
 * is checked when the thresholds are made (src/eviction/thresholds.ts), with the kubelet's messages.
 */
const evictionThresholdsKind = stringMapKind('signal<value,...', () => null, '<');
const evictionSignalMapKind = stringMapKind('signal=value,...', () => null);

/**
 * --enforce-node-allocatable: `pods` (the default) limits the kubepods cgroup to allocatable;
 * `none` (or nothing) to capacity. The kubelet's `system-reserved` and `kube-reserved` need the
 * cgroups of those daemons (--system-reserved-cgroup), which statelet does not manage: refused.
 */
const enforceNodeAllocatableKind: ValueKind<string[]> = {
  placeholder: 'pods|none',
  takesArgument: true,
  fromText: (text) => enforceKeys(text.split(',').map((part) => part.trim()).filter(Boolean)),
  fromConfig(value) {
    if (!Array.isArray(value)) throw new ValueError('expected a list such as ["pods"]');
    return enforceKeys(value.map(expectString));
  },
  display: (value) => (value.length ? value.join(',') : 'none'),
};

function enforceKeys(keys: string[]): string[] {
  for (const key of keys) {
    if (key === 'system-reserved' || key === 'kube-reserved') {
      throw new ValueError(`"${key}" needs the ${key} daemons' own cgroup (--${key}-cgroup), which statelet does not manage: enforce "pods" only`);
    }
    if (key !== 'pods' && key !== 'none') throw new ValueError(`"${key}" is not one of pods, none`);
  }
  return keys.includes('none') ? [] : [...new Set(keys)];
}

/** --cgroup-driver: statelet makes its cgroups through cgroupfs; systemd's slices are refused, named. */
const cgroupDriverKind: ValueKind<'cgroupfs'> = {
  placeholder: 'cgroupfs',
  takesArgument: true,
  fromText: cgroupDriver,
  fromConfig: (value) => cgroupDriver(expectString(value)),
  display: (value) => value,
};

function cgroupDriver(text: string): 'cgroupfs' {
  if (text === 'cgroupfs') return text;
  // The kubelet takes the driver from CRI RuntimeConfig when the runtime answers it
  // (KubeletCgroupDriverFromCRI) and this setting only when it does not, as containerd 1.6 does not.
  if (text === 'systemd') {
    throw new ValueError(
      'statelet has no systemd cgroup driver: it makes its cgroups through cgroupfs only, so "systemd" is refused rather than run as cgroupfs ' +
        "(the kubelet asks the runtime first, with CRI RuntimeConfig, which containerd 1.6 does not implement, so there this field decides); " +
        'set cgroupfs, and run the runtime with cgroupfs too (containerd: SystemdCgroup = false)',
    );
  }
  throw new ValueError(`expected cgroupfs, not ${JSON.stringify(text)}`);
}

/**
 * A resource manager's policy of which statelet implements the default only. The kubelet's other
 * policies are refused by name rather than run as the default: a node that says `static` but
 * gives Guaranteed pods shared CPUs would break what its users rely on. A value the kubelet does
 * not know either gets the kubelet's own message (`unknown` says how it words it).
 */
function defaultPolicyOnlyKind<T extends string>(policy: {
  implemented: T;
  refused: readonly string[];
  what: string;
  unknown: (text: string) => string;
}): ValueKind<T> {
  const read = (text: string): T => {
    if (text === policy.implemented) return policy.implemented;
    if (policy.refused.includes(text)) {
      throw new ValueError(`statelet does not implement the ${JSON.stringify(text)} policy (${policy.what}): only ${JSON.stringify(policy.implemented)}`);
    }
    throw new ValueError(policy.unknown(text));
  };
  return {
    placeholder: 'string',
    takesArgument: true,
    fromText: read,
    fromConfig: (value) => read(expectString(value)),
    display: (value) => value,
  };
}

// pkg/kubelet/cm/cpumanager/cpu_manager.go NewManager: "unknown policy".
const cpuManagerPolicyKind = defaultPolicyOnlyKind({
  implemented: 'none',
  refused: ['static'],
  what: 'exclusive CPUs for Guaranteed pods with integer CPU requests',
  unknown: (text) => `unknown policy: ${JSON.stringify(text)}`,
});

// pkg/kubelet/cm/memorymanager/memory_manager.go NewManager: "unknown policy".
const memoryManagerPolicyKind = defaultPolicyOnlyKind({
  implemented: 'None',
  refused: ['Static'],
  what: 'NUMA-pinned memory for Guaranteed pods',
  unknown: (text) => `unknown policy: ${JSON.stringify(text)}`,
});

// pkg/kubelet/apis/config/validation/validation.go ValidateKubeletConfiguration.
const TOPOLOGY_MANAGER_POLICIES = ['none', 'best-effort', 'restricted', 'single-numa-node'];
const topologyManagerPolicyKind = defaultPolicyOnlyKind({
  implemented: 'none',
  refused: TOPOLOGY_MANAGER_POLICIES.slice(1),
  what: 'NUMA alignment of CPUs, memory and devices',
  unknown: (text) => `${JSON.stringify(text)} must be one of: [${TOPOLOGY_MANAGER_POLICIES.map((p) => JSON.stringify(p)).join(' ')}]`,
});

/**
 * memorySwap (config file only, as in the kubelet): `{ swapBehavior: NoSwap }` or an empty
 * swapBehavior, which means the same. LimitedSwap is refused rather than taken and ignored:
 * statelet gives every container NoSwap.
 */
export type SwapBehavior = '' | 'NoSwap';
const memorySwapKind: ValueKind<SwapBehavior> = {
  placeholder: '{swapBehavior: NoSwap}',
  takesArgument: true,
  fromText: swapBehavior,
  fromConfig(value) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ValueError('expected an object such as { swapBehavior: NoSwap }');
    const behavior: unknown = 'swapBehavior' in value ? value.swapBehavior : undefined;
    if (behavior === undefined || behavior === null) return '';
    try {
      return swapBehavior(expectString(behavior));
    } catch (error) {
      if (error instanceof ValueError) throw new ValueError(`swapBehavior: ${error.message}`);
      throw error;
    }
  },
  display: (value) => value,
  toConfig: (value) => (value ? { swapBehavior: value } : {}),
};

function swapBehavior(text: string): SwapBehavior {
  if (text === '' || text === 'NoSwap') return text;
  if (text === 'LimitedSwap') throw new ValueError('LimitedSwap is not implemented by statelet, whose containers never swap: use NoSwap (or leave it empty)');
  throw new ValueError(`${JSON.stringify(text)} must be one of: "", "LimitedSwap" or "NoSwap" (statelet implements NoSwap only)`);
}

/** --cgroup-root: an absolute cgroup path, or empty for the root. */
const cgroupRootKind: ValueKind<string> = {
  ...stringKind,
  placeholder: '/path',
  fromText: cgroupRoot,
  fromConfig: (value) => cgroupRoot(expectString(value)),
};

function cgroupRoot(text: string): string {
  if (text !== '' && (!text.startsWith('/') || text.split('/').some((part) => part === '..'))) throw new ValueError(`a cgroup root is an absolute path such as /statelet, not ${JSON.stringify(text)}`);
  return text;
}

const TAINT_EFFECTS: readonly Taint['effect'][] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** One taint, `key[=value]:Effect` as --register-with-taints writes it. */
function parseTaint(text: string): Taint {
  const colon = text.lastIndexOf(':');
  if (colon < 0) throw new ValueError(`invalid taint spec ${JSON.stringify(text)}: expected key[=value]:Effect`);
  const effect = text.slice(colon + 1);
  const [key, value] = text.slice(0, colon).split('=', 2) as [string, string | undefined];
  return checkedTaint({ key, ...(value !== undefined ? { value } : {}), effect });
}

function checkedTaint(taint: { key?: unknown; value?: unknown; effect?: unknown }): Taint {
  if (typeof taint.key !== 'string' || taint.key === '') throw new ValueError('a taint needs a key');
  const keyProblem = labelProblem(taint.key, typeof taint.value === 'string' ? taint.value : '');
  if (keyProblem) throw new ValueError(`taint ${taint.key}: ${keyProblem}`);
  if (!TAINT_EFFECTS.includes(taint.effect as Taint['effect'])) {
    throw new ValueError(`taint ${taint.key}: effect ${JSON.stringify(taint.effect)} is not one of ${TAINT_EFFECTS.join(', ')}`);
  }
  return { key: taint.key, ...(typeof taint.value === 'string' && taint.value ? { value: taint.value } : {}), effect: taint.effect as Taint['effect'] };
}

const taintsKind: ValueKind<Taint[]> = {
  placeholder: 'key=value:Effect,...',
  takesArgument: true,
  fromText: (text) => text.split(',').filter((part) => part.trim() !== '').map((part) => parseTaint(part.trim())),
  fromConfig(value) {
    if (!Array.isArray(value)) throw new ValueError('expected a list of taints');
    return value.map((item) => {
      if (typeof item !== 'object' || item === null) throw new ValueError('expected a taint object { key, value, effect }');
      return checkedTaint(item as Record<string, unknown>);
    });
  },
  display: (value) => value.map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`).join(','),
};

/** --allowed-unsafe-sysctls: sysctl names or prefixes (`kernel.msg*`), comma-separated; each must be namespaced. */
const sysctlPatternsKind: ValueKind<string[]> = {
  placeholder: 'name,prefix*,...',
  takesArgument: true,
  fromText: (text) => text.split(',').map((part) => part.trim()).filter(Boolean).map(sysctlPattern),
  fromConfig(value) {
    if (!Array.isArray(value)) throw new ValueError('expected a list of sysctl names or patterns');
    return value.map((item) => sysctlPattern(expectString(item)));
  },
  display: (value) => value.join(','),
};

function sysctlPattern(pattern: string): string {
  const problem = unsafeSysctlPatternProblem(pattern);
  if (problem) throw new ValueError(problem);
  return pattern;
}

/** preloadedImagesVerificationAllowlist: repositories or `/*` prefixes, checked as the kubelet checks them (pullPolicy.ts parseAllowlist). */
const allowlistKind: ValueKind<string[]> = {
  placeholder: 'repository,prefix/*,...',
  takesArgument: true,
  fromText: (text) => allowlistKind.fromConfig(text.split(',').filter(Boolean)),
  fromConfig(value) {
    if (!Array.isArray(value)) throw new ValueError('expected a list of image repositories or prefixes ending in /*');
    const patterns = value.map(expectString);
    const parsed = parseAllowlist(patterns);
    if (typeof parsed === 'string') throw new ValueError(parsed);
    return patterns;
  },
  display: (value) => value.join(','),
};

/** --cluster-dns: IP addresses, comma-separated (clusterDNS: a list). */
const ipListKind: ValueKind<string[]> = {
  placeholder: 'ip,...',
  takesArgument: true,
  fromText: (text) => text.split(',').map((part) => part.trim()).filter(Boolean).map(ipAddress),
  fromConfig(value) {
    if (!Array.isArray(value)) throw new ValueError('expected a list of IP addresses');
    return value.map((item) => ipAddress(expectString(item)));
  },
  display: (value) => value.join(','),
};

/** --pod-cidr: one CIDR, or an IPv4 and an IPv6 one for a dual-stack node, comma-separated. */
function podCidrs(text: string): string {
  if (text === '') return text;
  const parts = text.split(',').map((part) => part.trim());
  const families = parts.map((part) => {
    const [address = '', prefix = ''] = part.split('/');
    const family = net.isIP(address);
    if (family === 0 || !/^\d{1,3}$/.test(prefix) || Number(prefix) > (family === 4 ? 32 : 128)) {
      throw new ValueError(`${JSON.stringify(part)} is not a CIDR such as 10.244.1.0/24`);
    }
    return family;
  });
  if (parts.length > 2 || (parts.length === 2 && families[0] === families[1])) throw new ValueError('at most one IPv4 and one IPv6 CIDR');
  return parts.join(',');
}

const podCidrKind: ValueKind<string> = {
  placeholder: 'cidr',
  takesArgument: true,
  fromText: podCidrs,
  fromConfig: (value) => podCidrs(expectString(value)),
  display: (value) => value,
};

/** --tls-cipher-suites: Go cipher suite names, comma-separated (tlsCipherSuites: a list); an unknown name fails the start. */
const cipherSuitesKind: ValueKind<string[]> = {
  placeholder: 'name,...',
  takesArgument: true,
  fromText: (text) => cipherSuites(text.split(',').map((part) => part.trim()).filter(Boolean)),
  fromConfig(value) {
    if (!Array.isArray(value)) throw new ValueError('expected a list of cipher suite names');
    return cipherSuites(value.map(expectString));
  },
  display: (value) => value.join(','),
};

function cipherSuites(names: string[]): string[] {
  for (const name of names) {
    const problem = cipherSuiteProblem(name);
    if (problem) throw new ValueError(problem);
  }
  return names;
}

const TLS_VERSION_NAMES = Object.keys(TLS_VERSIONS) as (keyof typeof TLS_VERSIONS)[];

/**
 * --tls-min-version: VersionTLS10 … VersionTLS13; empty means the kubelet's default, VersionTLS12
 * (ciphersuites_flag.go TLSVersion), with its message for another name.
 */
const tlsVersionKind: ValueKind<keyof typeof TLS_VERSIONS> = {
  placeholder: TLS_VERSION_NAMES.join('|'),
  takesArgument: true,
  fromText: tlsVersion,
  fromConfig: (value) => tlsVersion(expectString(value)),
  display: (value) => value,
};

function tlsVersion(text: string): keyof typeof TLS_VERSIONS {
  if (text === '') return 'VersionTLS12';
  const name = TLS_VERSION_NAMES.find((candidate) => candidate === text);
  if (name === undefined) throw new ValueError(`unknown tls version ${JSON.stringify(text)}`);
  return name;
}

/**
 * --feature-gates `A=true,B=false` (repeated flags add keys) and featureGates, a map of booleans.
 * Which names exist and which values statelet honours is checked once the layers are merged.
 */
const featureGatesKind: ValueKind<Record<string, boolean>> = {
  placeholder: 'Name=true|false,...',
  takesArgument: true,
  fromText(text) {
    const gates: Record<string, boolean> = {};
    for (const pair of text.split(',')) {
      if (pair.trim() === '') continue;
      const at = pair.indexOf('=');
      // k8s.io/component-base/featuregate feature_gate.go Set: "missing bool value for %s".
      if (at < 0) throw new ValueError(`missing bool value for ${pair.trim()}`);
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      if (TRUE_TEXT.has(value)) gates[name] = true;
      else if (FALSE_TEXT.has(value)) gates[name] = false;
      else throw new ValueError(`invalid value of ${name}=${value}, err: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`);
    }
    return gates;
  },
  fromConfig(value) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ValueError('expected a map of feature gate names to true or false');
    const gates: Record<string, boolean> = {};
    for (const [name, enabled] of Object.entries(value)) {
      if (typeof enabled !== 'boolean') throw new ValueError(`${name}: expected true or false`);
      gates[name] = enabled;
    }
    return gates;
  },
  display: (value) =>
    Object.entries(value)
      .map(([name, enabled]) => `${name}=${enabled}`)
      .join(','),
  combine: (earlier, later) => ({ ...earlier, ...later }),
  // The resolved gates hold every gate; a config file lists the ones set otherwise than by default.
  toConfig: (value) => nonDefaultGates(value),
};

/**
 * --cloud-provider: "" or "external". The in-tree providers are gone from the kubelet, which
 * refuses their names with its message (k8s.io/cloud-provider plugins.go ErrorForDisabledProvider).
 */
const cloudProviderKind: ValueKind<'' | 'external'> = {
  placeholder: 'external',
  takesArgument: true,
  fromText(text) {
    if (text === '' || text === 'external') return text;
    throw new ValueError(`cloud provider ${JSON.stringify(text)} was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external and migrate to an external cloud provider`);
  },
  fromConfig: (value) => cloudProviderKind.fromText(expectString(value)),
  display: (value) => value,
};

// ---------------------------------------------------------------------------------------------
// The table

/** Checks at each entry that the kind's value type matches the key's type in AgentConfig. */
function option<K extends SettingKey>(spec: OptionSpec<K>): AnyOptionSpec {
  return spec;
}

export const OPTIONS: readonly AnyOptionSpec[] = [
  option({
    key: 'configFile',
    kind: stringKind,
    flag: 'config',
    group: 'General',
    help: 'KubeletConfiguration file to load; command-line flags override the values in it',
  }),
  option({
    key: 'rootDir',
    kind: stringKind,
    flag: 'root-dir',
    group: 'General',
    help: 'Directory for agent state (pod directories, checkpoints)',
  }),
  option({
    key: 'kubeconfig',
    kind: stringKind,
    flag: 'kubeconfig',
    group: 'General',
    help: 'kubeconfig file with API server credentials; with it the agent registers its Node, keeps a Lease and runs the pods bound to it',
  }),
  option({
    key: 'bootstrapKubeconfig',
    kind: stringKind,
    flag: 'bootstrap-kubeconfig',
    group: 'General',
    help: 'kubeconfig with bootstrap credentials (a bootstrap token) to request the node\'s client certificate with when --kubeconfig is missing or expired',
    // The bootstrap writes --kubeconfig (bootstrap.go LoadClientConfig); without one there is nothing to write.
    onlyWith: { holds: (settings) => !settings.bootstrapKubeconfig || inCluster.holds(settings), reason: inCluster.reason },
  }),
  option({
    key: 'rotateCertificates',
    kind: boolKind,
    flag: 'rotate-certificates',
    configField: 'rotateCertificates',
    group: 'General',
    help: 'Renew the client certificate before it expires by requesting a new one with a CertificateSigningRequest',
    onlyWith: { holds: (settings) => !settings.rotateCertificates || inCluster.holds(settings), reason: inCluster.reason },
  }),
  option({
    key: 'serverTLSBootstrap',
    kind: boolKind,
    flag: 'rotate-server-certificates',
    configField: 'serverTLSBootstrap',
    group: 'Serving',
    help: 'Request the serving certificate with a kubernetes.io/kubelet-serving CertificateSigningRequest and renew it before it expires',
  }),
  option({
    key: 'tlsCipherSuites',
    kind: cipherSuitesKind,
    flag: 'tls-cipher-suites',
    configField: 'tlsCipherSuites',
    group: 'Serving',
    help: 'Cipher suites of the authenticated API, Go names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,...); none given: the defaults',
    refusedWhen: "a name Go does not know (the kubelet's message), or one Node.js's OpenSSL lacks",
  }),
  option({
    key: 'tlsMinVersion',
    kind: tlsVersionKind,
    flag: 'tls-min-version',
    configField: 'tlsMinVersion',
    group: 'Serving',
    help: 'Lowest TLS version the authenticated API accepts',
  }),
  option({
    key: 'featureGates',
    kind: featureGatesKind,
    flag: 'feature-gates',
    configField: 'featureGates',
    group: 'General',
    help: 'Feature gates to set (Name=true|false,...); on the command line each one given wins over the config file\'s',
    refusedWhen: "an unknown gate, a locked gate set otherwise (the kubelet's messages), a gate set otherwise than its default that statelet does not implement",
  }),
  option({
    key: 'configDir',
    kind: stringKind,
    flag: 'config-dir',
    group: 'General',
    help: 'Directory of KubeletConfiguration drop-ins: every *.conf under it, in lexical order, is merged over --config as a JSON merge patch; flags override both',
  }),
  option({
    key: 'cloudProvider',
    kind: cloudProviderKind,
    flag: 'cloud-provider',
    group: 'Cluster',
    help: "'external' when a cloud controller manager initializes the node: it is registered with the node.cloudprovider.kubernetes.io/uninitialized:NoSchedule taint; empty for none",
    onlyWith: { holds: (settings) => settings.cloudProvider === '' || inCluster.holds(settings), reason: inCluster.reason },
    refusedWhen: "any provider but `external` (the kubelet's message: built-in providers are gone)",
  }),
  option({
    key: 'providerId',
    kind: stringKind,
    flag: 'provider-id',
    configField: 'providerID',
    group: 'Cluster',
    help: "The node's ID in its provider's machine database, registered as spec.providerID",
    onlyWith: { holds: (settings) => settings.providerId === '' || inCluster.holds(settings), reason: inCluster.reason },
  }),
  option({
    key: 'registerNode',
    kind: boolKind,
    flag: 'register-node',
    configField: 'registerNode',
    group: 'Cluster',
    help: 'Register the node with the API server (with --kubeconfig)',
    onlyWith: inCluster,
  }),
  option({
    key: 'nodeLabels',
    kind: labelsKind,
    flag: 'node-labels',
    group: 'Cluster',
    help: 'Labels to add when registering the node (key=value,...); the NodeRestriction plugin limits which',
  }),
  option({
    key: 'registerWithTaints',
    kind: taintsKind,
    flag: 'register-with-taints',
    configField: 'registerWithTaints',
    group: 'Cluster',
    help: 'Taints to register the node with (key=value:Effect,...)',
    onlyWith: inCluster,
  }),
  option({
    key: 'nodeStatusUpdateFrequencyMs',
    kind: periodKind,
    flag: 'node-status-update-frequency',
    configField: 'nodeStatusUpdateFrequency',
    group: 'Cluster',
    help: 'How often the node status is computed; it is written when it changed',
    onlyWith: inCluster,
  }),
  option({
    key: 'nodeStatusReportFrequencyMs',
    kind: periodKind,
    flag: 'node-status-report-frequency',
    configField: 'nodeStatusReportFrequency',
    group: 'Cluster',
    help: 'The longest time between node status writes when nothing changed',
    onlyWith: inCluster,
  }),
  option({
    key: 'nodeLeaseDurationSeconds',
    kind: intKind(1),
    flag: 'node-lease-duration-seconds',
    configField: 'nodeLeaseDurationSeconds',
    group: 'Cluster',
    help: "Duration of the node's Lease; it is renewed every quarter of it",
    onlyWith: inCluster,
  }),
  option({
    key: 'kubeApiQps',
    kind: intKind(0),
    flag: 'kube-api-qps',
    configField: 'kubeAPIQPS',
    group: 'Cluster',
    help: 'Requests per second to the API server (pods, their status, mirror pods); 0: no limit',
    onlyWith: inCluster,
  }),
  option({
    key: 'kubeApiBurst',
    kind: intKind(0),
    flag: 'kube-api-burst',
    configField: 'kubeAPIBurst',
    group: 'Cluster',
    help: 'Requests to the API server allowed at once above --kube-api-qps',
    onlyWith: inCluster,
  }),
  option({
    key: 'registryPullQps',
    kind: intKind(0),
    flag: 'registry-qps',
    configField: 'registryPullQPS',
    group: 'Image pulls',
    help: 'Image pulls per second the runtime is asked for; a pull over it fails at once with "pull QPS exceeded" and backs off; 0: no limit',
  }),
  option({
    key: 'registryBurst',
    kind: intKind(0),
    flag: 'registry-burst',
    configField: 'registryBurst',
    group: 'Image pulls',
    help: 'Image pulls allowed at once above --registry-qps (only with a --registry-qps above 0)',
  }),
  option({
    key: 'eventQps',
    kind: intKind(0),
    flag: 'event-qps',
    configField: 'eventRecordQPS',
    group: 'Cluster',
    help: 'Events written per second to the API server; 0: no limit',
    onlyWith: inCluster,
  }),
  option({
    key: 'eventBurst',
    kind: intKind(0),
    flag: 'event-burst',
    configField: 'eventBurst',
    group: 'Cluster',
    help: 'Events written at once above --event-qps',
    onlyWith: inCluster,
  }),
  option({
    key: 'systemReserved',
    kind: resourceListKind,
    flag: 'system-reserved',
    configField: 'systemReserved',
    group: 'Cluster',
    help: 'Resources reserved for the system (cpu=100m,memory=100Mi,ephemeral-storage=1Gi,pid=1000)',
  }),
  option({
    key: 'kubeReserved',
    kind: resourceListKind,
    flag: 'kube-reserved',
    configField: 'kubeReserved',
    group: 'Cluster',
    help: 'Resources reserved for Kubernetes daemons, same form as --system-reserved',
  }),

  option({
    key: 'podManifestPath',
    kind: stringKind,
    flag: 'pod-manifest-path',
    configField: 'staticPodPath',
    configRelativePath: true,
    group: 'Static pods',
    help: 'Directory (or file) of static pod manifests to run',
  }),
  option({
    key: 'fileCheckFrequencyMs',
    kind: periodKind,
    flag: 'file-check-frequency',
    configField: 'fileCheckFrequency',
    group: 'Static pods',
    help: 'How often to re-read the static pod manifest path',
    onlyWith: { holds: (settings) => Boolean(settings.podManifestPath), reason: without('--pod-manifest-path (staticPodPath)') },
  }),
  option({
    key: 'manifestUrl',
    kind: urlKind,
    flag: 'manifest-url',
    configField: 'staticPodURL',
    group: 'Static pods',
    help: 'URL serving static pods: one Pod or a v1 PodList, YAML or JSON (the kubelet\'s HTTP source)',
  }),
  option({
    key: 'manifestUrlHeaders',
    kind: headersKind,
    flag: 'manifest-url-header',
    configField: 'staticPodURLHeader',
    group: 'Static pods',
    help: "HTTP headers for --manifest-url, e.g. 'a:hello,b:again'; repeatable, values for one name accumulate",
    onlyWith: { holds: (settings) => Object.keys(settings.manifestUrlHeaders).length === 0 || Boolean(settings.manifestUrl), reason: without('--manifest-url (staticPodURL)') },
  }),
  option({
    key: 'httpCheckFrequencyMs',
    kind: periodKind,
    flag: 'http-check-frequency',
    configField: 'httpCheckFrequency',
    group: 'Static pods',
    help: 'How often to re-fetch --manifest-url',
    onlyWith: { holds: (settings) => Boolean(settings.manifestUrl), reason: without('--manifest-url (staticPodURL)') },
  }),

  option({
    key: 'containerRuntimeEndpoint',
    kind: endpointKind({ allowEmpty: false }),
    flag: 'container-runtime-endpoint',
    configField: 'containerRuntimeEndpoint',
    group: 'Container runtime',
    help: 'CRI runtime endpoint: unix://<socket>, an absolute socket path, or sim:// for the built-in simulator',
  }),
  option({
    key: 'imageServiceEndpoint',
    kind: endpointKind({ allowEmpty: true }),
    flag: 'image-service-endpoint',
    configField: 'imageServiceEndpoint',
    group: 'Container runtime',
    help: 'CRI image service endpoint, same forms as --container-runtime-endpoint',
    defaultText: 'the container runtime endpoint',
  }),
  option({
    key: 'runtimeRequestTimeoutMs',
    kind: periodKind,
    flag: 'runtime-request-timeout',
    configField: 'runtimeRequestTimeout',
    group: 'Container runtime',
    help: 'Deadline of every runtime call but image pulls (a stop or an exec gets its own timeout on top)',
  }),

  option({
    key: 'hostnameOverride',
    kind: stringKind,
    flag: 'hostname-override',
    group: 'Node',
    help: 'Node name to use instead of the hostname (lowercased)',
    defaultText: "this machine's hostname",
  }),
  option({
    key: 'nodeIp',
    kind: nodeIpKind,
    flag: 'node-ip',
    group: 'Node',
    help: 'IP address(es) of the node; an IPv4 and an IPv6 address, comma-separated, for dual-stack',
  }),
  option({
    key: 'podCidr',
    kind: podCidrKind,
    flag: 'pod-cidr',
    configField: 'podCIDR',
    group: 'Node',
    help: "The pod CIDR(s) the runtime gives pod addresses from, until the Node has spec.podCIDRs (which the controller-manager's node IPAM sets); told to the runtime with CRI UpdateRuntimeConfig",
  }),
  option({
    key: 'clusterDns',
    kind: ipListKind,
    flag: 'cluster-dns',
    configField: 'clusterDNS',
    group: 'Node',
    help: "The cluster's DNS servers, for pods with dnsPolicy ClusterFirst",
  }),
  option({
    key: 'clusterDomain',
    kind: stringKind,
    flag: 'cluster-domain',
    configField: 'clusterDomain',
    group: 'Node',
    help: "The cluster's domain (e.g. cluster.local): pods search <namespace>.svc.<domain>, svc.<domain> and <domain>",
  }),
  option({
    key: 'resolvConf',
    kind: stringKind,
    flag: 'resolv-conf',
    configField: 'resolvConf',
    configRelativePath: true,
    group: 'Node',
    help: 'The resolver file pods with dnsPolicy Default inherit ("": none)',
  }),
  option({
    key: 'maxPods',
    // Each pod may need a block of IDs for a user namespace of its own: the kubelet refuses to start
    // with more pods than blocks (userns_manager.go MakeUserNsManager).
    kind: intKind(0, MAX_USERNS_PODS),
    flag: 'max-pods',
    configField: 'maxPods',
    group: 'Node',
    help: 'Number of pods that can run on this node',
  }),
  option({
    key: 'allowedUnsafeSysctls',
    kind: sysctlPatternsKind,
    flag: 'allowed-unsafe-sysctls',
    configField: 'allowedUnsafeSysctls',
    group: 'Node',
    help: 'Namespaced sysctls (names, or prefixes ending in *) pods may set besides the safe ones',
  }),
  option({
    key: 'evictionHard',
    kind: evictionThresholdsKind,
    flag: 'eviction-hard',
    configField: 'evictionHard',
    group: 'Node',
    help: 'Hard eviction thresholds (memory.available<100Mi,nodefs.available<10%,...): met, pods are evicted at once; giving any replaces all the defaults',
  }),
  option({
    key: 'evictionSoft',
    kind: evictionThresholdsKind,
    flag: 'eviction-soft',
    configField: 'evictionSoft',
    group: 'Node',
    help: 'Soft eviction thresholds (memory.available<1.5Gi,...): met for their grace period, pods are evicted',
  }),
  option({
    key: 'evictionSoftGracePeriod',
    kind: evictionSignalMapKind,
    flag: 'eviction-soft-grace-period',
    configField: 'evictionSoftGracePeriod',
    group: 'Node',
    help: 'How long each soft threshold must hold before pods are evicted (memory.available=1m30s,...)',
  }),
  option({
    key: 'evictionMinimumReclaim',
    kind: evictionSignalMapKind,
    flag: 'eviction-minimum-reclaim',
    configField: 'evictionMinimumReclaim',
    group: 'Node',
    help: 'How far above its threshold a signal must climb before pressure ends (memory.available=0Mi,nodefs.available=500Mi,...)',
  }),
  option({
    key: 'evictionPressureTransitionPeriodMs',
    kind: periodKind,
    flag: 'eviction-pressure-transition-period',
    configField: 'evictionPressureTransitionPeriod',
    group: 'Node',
    help: 'How long a pressure condition stays True after its threshold was last met',
  }),
  option({
    key: 'volumeStatsAggPeriodMs',
    kind: durationKind(true),
    flag: 'volume-stats-agg-period',
    configField: 'volumeStatsAggPeriod',
    group: 'Node',
    help: 'How often the pods\' persistent and CSI volumes\' usage is measured for /stats/summary and kubelet_volume_stats_* (0: never)',
  }),
  option({
    key: 'evictionMaxPodGracePeriod',
    kind: intKind(0),
    flag: 'eviction-max-pod-grace-period',
    configField: 'evictionMaxPodGracePeriod',
    group: 'Node',
    help: 'Longest grace period (seconds) a pod evicted for a soft threshold gets',
  }),
  option({
    key: 'cgroupsPerQos',
    kind: boolKind,
    flag: 'cgroups-per-qos',
    configField: 'cgroupsPerQOS',
    group: 'Node',
    help: 'Keep the kubelet\'s cgroup hierarchy: kubepods with the node\'s allocatable, a cgroup per QoS class and per pod (needs root and a writable cgroupfs)',
  }),
  option({
    key: 'cgroupRoot',
    kind: cgroupRootKind,
    flag: 'cgroup-root',
    configField: 'cgroupRoot',
    group: 'Node',
    help: 'The cgroup the kubepods hierarchy goes under (default: the root)',
    onlyWith: withPodCgroups((settings) => settings.cgroupRoot !== ''),
  }),
  option({
    key: 'cgroupDriver',
    kind: cgroupDriverKind,
    flag: 'cgroup-driver',
    configField: 'cgroupDriver',
    group: 'Node',
    help: 'How cgroups are made: cgroupfs (systemd is refused)',
    refusedWhen: '`systemd`: statelet has no systemd cgroup driver',
  }),
  option({
    key: 'cpuManagerPolicy',
    kind: cpuManagerPolicyKind,
    flag: 'cpu-manager-policy',
    configField: 'cpuManagerPolicy',
    group: 'Node',
    help: 'CPU Manager policy: none (static is refused)',
    refusedWhen: '`static`',
  }),
  option({
    key: 'memoryManagerPolicy',
    kind: memoryManagerPolicyKind,
    flag: 'memory-manager-policy',
    configField: 'memoryManagerPolicy',
    group: 'Node',
    help: 'Memory Manager policy: None (Static is refused)',
    refusedWhen: '`Static`',
  }),
  option({
    key: 'topologyManagerPolicy',
    kind: topologyManagerPolicyKind,
    flag: 'topology-manager-policy',
    configField: 'topologyManagerPolicy',
    group: 'Node',
    help: 'Topology Manager policy: none (best-effort, restricted and single-numa-node are refused)',
    refusedWhen: '`best-effort`, `restricted`, `single-numa-node`',
  }),
  option({
    key: 'enforceNodeAllocatable',
    kind: enforceNodeAllocatableKind,
    flag: 'enforce-node-allocatable',
    configField: 'enforceNodeAllocatable',
    group: 'Node',
    help: 'pods: limit the kubepods cgroup to allocatable (capacity less --system-reserved and --kube-reserved); none: to capacity',
    onlyWith: {
      holds: (settings) => settings.enforceNodeAllocatable.length === 0 || settings.cgroupsPerQos,
      // pkg/kubelet/apis/config/validation/validation.go ValidateKubeletConfiguration.
      reason: 'cgroupsPerQOS (--cgroups-per-qos) must be set to true when "pods" contained in enforceNodeAllocatable (--enforce-node-allocatable); give --enforce-node-allocatable=none',
    },
    refusedWhen: '`system-reserved`, `kube-reserved`',
  }),
  option({
    key: 'podMaxPids',
    kind: intKind(-1),
    flag: 'pod-max-pids',
    configField: 'podPidsLimit',
    group: 'Node',
    help: 'Most processes a pod may run (its cgroup\'s pids.max); -1: no limit',
    onlyWith: withPodCgroups((settings) => settings.podMaxPids !== -1),
  }),
  option({
    key: 'failSwapOn',
    kind: boolKind,
    flag: 'fail-swap-on',
    configField: 'failSwapOn',
    group: 'Node',
    help: 'Refuse to start while the machine has swap on (/proc/swaps lists a device); with false, containers still get no swap (NoSwap)',
  }),
  option({
    key: 'oomScoreAdj',
    kind: intKind(-1000, 1000),
    flag: 'oom-score-adj',
    configField: 'oomScoreAdj',
    group: 'Node',
    help: "The agent process's own OOM score adjustment, set at start (in [-1000, 1000]); the kernel's OOM killer takes processes with higher scores first",
  }),
  option({
    key: 'maxOpenFiles',
    kind: intKind(1),
    flag: 'max-open-files',
    configField: 'maxOpenFiles',
    group: 'Node',
    help: "The agent process's open file limit, soft and hard, set at start",
  }),
  option({
    key: 'failCgroupV1',
    kind: boolKind,
    flag: 'fail-cgroupv1',
    configField: 'failCgroupV1',
    group: 'Node',
    help: "Refuse to start on a host whose cgroups are v1 (the kubelet's default is true; statelet's is false, so that it runs where the kubelet would stop)",
  }),
  option({
    key: 'memorySwapBehavior',
    kind: memorySwapKind,
    configField: 'memorySwap',
    group: 'Node',
    help: 'memorySwap.swapBehavior: NoSwap (or empty), the only behaviour statelet has; LimitedSwap is refused',
    defaultText: 'NoSwap',
    refusedWhen: '`LimitedSwap`',
  }),
  option({
    key: 'seccompDefault',
    kind: boolKind,
    flag: 'seccomp-default',
    configField: 'seccompDefault',
    group: 'Node',
    help: "Run containers that name no seccomp profile under the runtime's default profile (RuntimeDefault) instead of Unconfined",
  }),

  option({
    key: 'syncFrequencyMs',
    kind: periodKind,
    flag: 'sync-frequency',
    configField: 'syncFrequency',
    group: 'Sync',
    help: 'Maximum period between re-syncs of running pods with their spec',
  }),

  option({
    key: 'address',
    kind: ipKind,
    flag: 'address',
    configField: 'address',
    group: 'Serving',
    help: 'IP address of the authenticated API (--port)',
    onlyWith: oneNode,
  }),
  option({
    key: 'port',
    kind: portKind,
    flag: 'port',
    configField: 'port',
    group: 'Serving',
    help: 'Port of the authenticated API (HTTPS: logs, pods, metrics); 0 disables',
  }),
  option({
    key: 'tlsCertFile',
    kind: stringKind,
    flag: 'tls-cert-file',
    configField: 'tlsCertFile',
    group: 'Serving',
    help: 'Serving certificate (PEM) of the authenticated API; absent: a self-signed one in --cert-dir',
  }),
  option({
    key: 'tlsPrivateKeyFile',
    kind: stringKind,
    flag: 'tls-private-key-file',
    configField: 'tlsPrivateKeyFile',
    group: 'Serving',
    help: 'Private key (PEM) of --tls-cert-file',
  }),
  option({
    key: 'certDir',
    kind: stringKind,
    flag: 'cert-dir',
    group: 'Serving',
    help: 'Where the self-signed serving certificate is kept',
    defaultText: '<root-dir>/pki',
  }),
  option({
    key: 'clientCaFile',
    kind: stringKind,
    flag: 'client-ca-file',
    configField: 'authentication.x509.clientCAFile',
    group: 'Serving',
    help: 'CA bundle (PEM) that signs the client certificates the authenticated API accepts (user = CN, groups = O)',
  }),
  option({
    key: 'anonymousAuth',
    kind: boolKind,
    flag: 'anonymous-auth',
    configField: 'authentication.anonymous.enabled',
    group: 'Serving',
    help: 'Let requests without credentials in as system:anonymous (then authorized like any user)',
  }),
  option({
    key: 'authenticationTokenWebhook',
    kind: boolKind,
    flag: 'authentication-token-webhook',
    configField: 'authentication.webhook.enabled',
    group: 'Serving',
    help: 'Authenticate bearer tokens with the TokenReview API',
    defaultText: 'true with --kubeconfig',
    onlyWith: {
      holds: (settings) => settings.authenticationTokenWebhook !== true || inCluster.holds(settings),
      // cmd/kubelet/app/auth.go BuildAuthn.
      reason: 'needs --kubeconfig: no client provided, cannot use webhook authentication',
    },
  }),
  option({
    key: 'authorizationMode',
    kind: enumKind(['AlwaysAllow', 'Webhook'] as const),
    flag: 'authorization-mode',
    configField: 'authorization.mode',
    group: 'Serving',
    help: 'Webhook: every request authorized by a SubjectAccessReview (nodes/<subresource>); AlwaysAllow: any authenticated request',
    defaultText: 'Webhook with --kubeconfig, else AlwaysAllow',
    onlyWith: {
      holds: (settings) => settings.authorizationMode !== 'Webhook' || inCluster.holds(settings),
      // cmd/kubelet/app/auth.go BuildAuthz.
      reason: 'Webhook needs --kubeconfig: no client provided, cannot use webhook authorization',
    },
  }),
  option({
    key: 'containerLogMaxSize',
    kind: bytesKind,
    flag: 'container-log-max-size',
    configField: 'containerLogMaxSize',
    group: 'Container runtime',
    help: 'A running container\'s log file is rotated once it reaches this size',
  }),
  option({
    key: 'containerLogMaxFiles',
    kind: intKind(2),
    flag: 'container-log-max-files',
    configField: 'containerLogMaxFiles',
    group: 'Container runtime',
    help: 'Log files kept per container, the live one included (at least 2)',
  }),
  option({
    key: 'containerLogMonitorIntervalMs',
    kind: periodKind,
    flag: 'container-log-monitor-interval',
    configField: 'containerLogMonitorInterval',
    group: 'Container runtime',
    help: 'How often the running containers\' logs are looked at for rotation (the kubelet\'s is a config field only)',
  }),
  option({
    key: 'readOnlyAddress',
    kind: ipKind,
    flag: 'read-only-address',
    group: 'Serving',
    help: 'IP address of the unauthenticated read-only port (statelet; the kubelet uses --address)',
    onlyWith: oneNode,
  }),
  option({
    key: 'readOnlyPort',
    kind: portKind,
    flag: 'read-only-port',
    configField: 'readOnlyPort',
    group: 'Serving',
    help: 'Port of the unauthenticated read-only API; 0 disables',
    defaultText: '10255, or 0 when --config is given, as in the kubelet',
  }),
  option({
    key: 'healthzPort',
    kind: portKind,
    flag: 'healthz-port',
    configField: 'healthzPort',
    group: 'Serving',
    help: 'Port of the /healthz endpoint; 0 disables',
  }),
  option({
    key: 'healthzBindAddress',
    kind: ipKind,
    flag: 'healthz-bind-address',
    configField: 'healthzBindAddress',
    group: 'Serving',
    help: 'IP address for the /healthz endpoint',
    onlyWith: oneNode,
  }),

  option({
    key: 'serializeImagePulls',
    kind: boolKind,
    flag: 'serialize-image-pulls',
    configField: 'serializeImagePulls',
    group: 'Image pulls',
    help: 'Pull one image at a time',
  }),
  option({
    key: 'maxParallelImagePulls',
    kind: intKind(1),
    configField: 'maxParallelImagePulls',
    group: 'Image pulls',
    help: 'Maximum concurrent image pulls when serializeImagePulls is false',
  }),
  option({
    key: 'imagePullCredentialsVerificationPolicy',
    kind: enumKind(VERIFICATION_POLICIES),
    configField: 'imagePullCredentialsVerificationPolicy',
    group: 'Image pulls',
    help: 'When a pod must have the credentials of an image already on the node: NeverVerify, NeverVerifyPreloadedImages (images the node did not pull are free), NeverVerifyAllowlistedImages, AlwaysVerify',
  }),
  option({
    key: 'preloadedImagesVerificationAllowlist',
    kind: allowlistKind,
    configField: 'preloadedImagesVerificationAllowlist',
    group: 'Image pulls',
    help: 'Repositories (registry.example.com/team/app, or a prefix ending in /*) any pod may use without credentials under NeverVerifyAllowlistedImages',
  }),
  option({
    key: 'imageCredentialProviderConfig',
    kind: stringKind,
    flag: 'image-credential-provider-config',
    group: 'Image pulls',
    help: 'CredentialProviderConfig file (YAML or JSON), or a directory of them, naming the credential provider plugins to run for image pull credentials; with --image-credential-provider-bin-dir',
  }),
  option({
    key: 'imageCredentialProviderBinDir',
    kind: stringKind,
    flag: 'image-credential-provider-bin-dir',
    group: 'Image pulls',
    help: 'Directory of the credential provider plugins\' executables; with --image-credential-provider-config',
  }),

  option({
    key: 'plegRelistPeriodMs',
    kind: periodKind,
    flag: 'pleg-relist-period',
    group: 'Statelet',
    help: 'How often to relist containers from the runtime to detect state changes',
  }),
  option({
    key: 'eventedPleg',
    kind: boolKind,
    flag: 'evented-pleg',
    group: 'Statelet',
    help: "Follow the runtime's container event stream (CRI GetContainerEvents) where it has one, relisting more slowly while it is healthy",
  }),
  option({
    key: 'eventedPlegRelistPeriodMs',
    kind: eventedRelistPeriodKind,
    flag: 'evented-pleg-relist-period',
    group: 'Statelet',
    help: 'How often to relist while the container event stream is healthy, to catch what it missed (at most 1m; the kubelet uses 300s)',
    onlyWith: { holds: (settings) => settings.eventedPleg, reason: without('--evented-pleg') },
  }),
  option({
    key: 'crashLoopBackOffInitialMs',
    kind: periodKind,
    flag: 'crash-loop-backoff-initial',
    group: 'Statelet',
    help: 'First delay before restarting a crashed container; it doubles on each crash up to the maximum',
  }),
  option({
    key: 'crashLoopBackOffMaxMs',
    kind: crashLoopMaxKind,
    flag: 'crash-loop-backoff-max',
    configField: 'crashLoopBackOff',
    group: 'Statelet',
    help: 'Maximum delay before restarting a crashed container, 1s to 5m; in a config file, crashLoopBackOff.maxContainerRestartPeriod',
  }),
  option({
    key: 'containerGcPeriodMs',
    kind: periodKind,
    flag: 'container-gc-period',
    group: 'Garbage collection',
    help: 'How often the container garbage collection runs (statelet only; the kubelet runs it every minute); at most once per housekeeping pass, every 2s',
  }),
  option({
    key: 'minimumContainerTtlMs',
    kind: durationKind(true),
    flag: 'minimum-container-ttl-duration',
    group: 'Garbage collection',
    help: 'Minimum age of a finished container before it can be garbage collected',
  }),
  option({
    key: 'maxDeadContainersPerContainer',
    kind: intKind(-1),
    flag: 'maximum-dead-containers-per-container',
    group: 'Garbage collection',
    help: 'Finished instances of each container to keep (-1: no limit)',
  }),
  option({
    key: 'maxDeadContainers',
    kind: intKind(-1),
    flag: 'maximum-dead-containers',
    group: 'Garbage collection',
    help: 'Finished containers to keep in total (-1: no limit)',
  }),
  option({
    key: 'imageGcHighThresholdPercent',
    kind: imageGcPercentKind,
    flag: 'image-gc-high-threshold',
    configField: 'imageGCHighThresholdPercent',
    group: 'Garbage collection',
    help: 'Usage of the image filesystem (percent, 0 to 100) at or above which unused images are removed; 100 turns image GC off unless imageMaximumGCAge is set',
  }),
  option({
    key: 'imageGcLowThresholdPercent',
    kind: imageGcPercentKind,
    flag: 'image-gc-low-threshold',
    configField: 'imageGCLowThresholdPercent',
    group: 'Garbage collection',
    help: 'Usage of the image filesystem (percent) image GC frees down to; less than --image-gc-high-threshold',
  }),
  option({
    key: 'imageMinimumGcAgeMs',
    kind: signedDurationKind,
    flag: 'minimum-image-ttl-duration',
    configField: 'imageMinimumGCAge',
    group: 'Garbage collection',
    help: 'How long after it is first seen an unused image is kept',
  }),
  option({
    key: 'imageMaximumGcAgeMs',
    kind: signedDurationKind,
    configField: 'imageMaximumGCAge',
    group: 'Garbage collection',
    help: 'An image unused for longer is removed whatever the disk usage (0: never); more than imageMinimumGCAge',
  }),
  option({
    key: 'podLogsDir',
    kind: stringKind,
    flag: 'pod-logs-dir',
    configField: 'podLogsDir',
    group: 'Statelet',
    help: 'Directory of the per-pod container log directories (the kubelet uses /var/log/pods)',
  }),
  option({
    key: 'nodes',
    kind: intKind(1, 10_000),
    flag: 'nodes',
    group: 'Statelet',
    help: 'How many simulated nodes this process runs, each with its own Node, Lease, pods and sim:// runtime: named <hostname-override>-0, -1, …, at --node-ip (default 127.0.1.1) and the next addresses, where each serves on the same ports; a {node} in --kubeconfig is each node\'s name; --root-dir and --pod-cidr are divided among them',
    onlyWith: {
      holds: (settings) => settings.nodes === 1 || settings.containerRuntimeEndpoint.startsWith('sim://'),
      reason: 'runs simulated nodes, each with a sim:// runtime of its own: it needs --container-runtime-endpoint=sim://',
    },
  }),
  option({
    key: 'visualizerPort',
    kind: portKind,
    flag: 'visualizer-port',
    group: 'Statelet',
    help: 'Port of the live statechart visualizer; 0 disables',
  }),
  option({
    key: 'inspect',
    kind: enumKind(['stately']),
    flag: 'inspect',
    group: 'Statelet',
    help: 'Send statechart events to an inspector',
  }),
  option({
    key: 'inspectUrl',
    kind: wsUrlKind,
    flag: 'inspect-url',
    group: 'Statelet',
    help: 'WebSocket URL that --inspect=stately sends to (a relay such as @statelyai/inspect/server)',
    defaultText: 'ws://localhost:8080',
    onlyWith: { holds: (settings) => settings.inspect !== undefined, reason: without('--inspect=stately') },
  }),

  option({
    key: 'verbosity',
    kind: intKind(0),
    flag: 'v',
    configField: 'logging.verbosity',
    group: 'Logging',
    help: 'Log verbosity level (also -v N)',
  }),
  option({
    key: 'logFormat',
    kind: enumKind(['text', 'json']),
    flag: 'logging-format',
    configField: 'logging.format',
    group: 'Logging',
    help: 'Log output format',
  }),
];

/**
 * The configuration in effect as a KubeletConfiguration (what `/configz` serves under
 * `kubeletconfig`): every setting that has a config-file field, in that field's form.
 */
export function configz(config: AgentSettings): Record<string, unknown> {
  const out: Record<string, unknown> = { kind: 'KubeletConfiguration', apiVersion: 'kubelet.config.k8s.io/v1beta1' };
  for (const spec of OPTIONS) {
    if (!spec.configField) continue;
    const value = config[spec.key];
    if (value === undefined) continue;
    // A field of a nested block (authentication.x509.clientCAFile) goes into its block.
    const parts = spec.configField.split('.');
    let holder = out;
    for (const part of parts.slice(0, -1)) holder = (holder[part] ??= {}) as Record<string, unknown>;
    holder[parts[parts.length - 1]!] = spec.kind.toConfig ? (spec.kind.toConfig as (v: unknown) => unknown)(value) : value;
  }
  return out;
}
