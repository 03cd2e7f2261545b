/**
 * Resource quantities (k8s.io/apimachinery/pkg/api/resource quantity.go), pure: "100m", "2",
 * "1.5", "128Mi", "1G", "1e3". Parsed to plain numbers (cpu in cores, memory in bytes); node
 * amounts are small enough that a double loses nothing that matters.
 */

const SUFFIXES: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/;

/** The quantity's value, or an Error naming what is wrong. */
export function parseQuantity(text: string): number | Error {
  const match = QUANTITY.exec(text.trim());
  if (!match) return new Error(`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': "${text}"`);
  const [, digits, exponent, suffix] = match;
  const value = Number(digits) * (exponent ? 10 ** Number(exponent.slice(1)) : SUFFIXES[suffix ?? '']!);
  return value;
}

/** The quantity's value; 0 where it is absent or unparsable (validation reports those). */
export function quantityValue(text: string | number | undefined): number {
  if (text === undefined) return 0;
  if (typeof text === 'number') return text;
  const value = parseQuantity(text);
  return value instanceof Error ? 0 : value;
}

/** CPU as the API writes it: whole cores ("2") or millicores ("1500m"). */
export function formatCpu(cores: number): string {
  const milli = Math.max(0, Math.round(cores * 1000));
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

/** Memory in kibibytes, as the kubelet reports node capacity ("24523572Ki"). */
export function formatKi(bytes: number): string {
  return `${Math.max(0, Math.floor(bytes / 1024))}Ki`;
}

/** A plain byte count ("93478647495"), as the kubelet reports allocatable ephemeral storage. */
export function formatBytes(bytes: number): string {
  return String(Math.max(0, Math.floor(bytes)));
}

/**
 * Resource amounts as admission and the kubelet's messages use them: whole numbers, millicores for
 * `cpu`, bytes for memory and storage, units for the rest (each rounded up, as resource.Quantity does).
 */
export type ResourceAmounts = Record<string, number>;

/** `cpu` in millicores, anything else in its own unit, rounded up. */
export function amount(name: string, quantity: string | number | undefined): number {
  const scaled = quantityValue(quantity) * (name === 'cpu' ? 1000 : 1);
  // "0.7" is 700.0000000000001 millicores in floating point: that is 700, not 701.
  const nearest = Math.round(scaled);
  return Math.abs(scaled - nearest) < 1e-6 ? nearest : Math.ceil(scaled);
}

/** A ResourceList (`{cpu: "500m", memory: "1Gi"}`) as amounts; entries that are not objects count as none. */
export function amounts(list: Readonly<Record<string, string | number>> | undefined): ResourceAmounts {
  const out: ResourceAmounts = {};
  if (!list || typeof list !== 'object') return out;
  for (const [name, quantity] of Object.entries(list)) out[name] = amount(name, quantity);
  return out;
}

