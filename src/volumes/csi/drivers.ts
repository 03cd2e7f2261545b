/**
 * The CSI drivers registered on this node, by name (pkg/volume/csi/csi_drivers_store.go
 * DriversStore): where each serves its API, and the highest CSI version it supports. The CSI
 * registration handler fills it; the CSI client finds a driver's endpoint here (until a driver
 * registers, or again, its volumes cannot be mounted). And the versions' rules
 * (k8s.io/apimachinery/pkg/util/version ParseGeneric, HighestSupportedVersion).
 */

/** A generic version (`1.0.0`, `v1.2`): two or more numeric components. */
export interface CsiVersion {
  components: readonly number[];
}

export interface RegisteredDriver {
  endpoint: string;
  highestSupportedVersion: CsiVersion;
}

export class CsiDrivers {
  private readonly drivers = new Map<string, RegisteredDriver>();

  get(name: string): RegisteredDriver | undefined {
    return this.drivers.get(name);
  }

  set(name: string, driver: RegisteredDriver): void {
    this.drivers.set(name, driver);
  }

  delete(name: string): void {
    this.drivers.delete(name);
  }

  names(): string[] {
    return [...this.drivers.keys()].sort();
  }
}

export const versionString = (version: CsiVersion) => version.components.join('.');

/** version.go compareInternal: component by component, a missing one counting as 0. */
export function versionLessThan(a: CsiVersion, b: CsiVersion): boolean {
  for (let i = 0; i < Math.max(a.components.length, b.components.length); i++) {
    const [x, y] = [a.components[i] ?? 0, b.components[i] ?? 0];
    if (x !== y) return x < y;
  }
  return false;
}

/** version.go ParseGeneric: `v?N.N[.N…]` and anything after; throws its errors. */
export function parseGenericVersion(text: string): CsiVersion {
  const match = /^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)$/s.exec(text);
  if (!match) throw new Error(`could not parse "${text}" as version`);
  const parts = match[1]!.split('.');
  if (parts.length < 2) throw new Error(`illegal version string "${text}"`);
  if (parts[0]!.startsWith('0') && parts[0] !== '0') throw new Error(`illegal zero-prefixed version component "${parts[0]}" in "${text}"`);
  return { components: parts.map(Number) };
}

/**
 * version.go HighestSupportedVersion: the highest 1.x of `versions` (2.x and above are skipped);
 * throws its errors (an empty list, none parsed or none below 2, a highest one that is not 1.x).
 */
export function highestSupportedVersion(versions: readonly string[]): CsiVersion {
  if (versions.length === 0) throw new Error('empty array for supported versions');
  let highest: CsiVersion | null = null;
  let parseError: string | null = null;
  for (let i = versions.length - 1; i >= 0; i--) {
    let version: CsiVersion;
    try {
      version = parseGenericVersion(versions[i]!);
    } catch (err) {
      parseError = (err as Error).message;
      continue;
    }
    if (version.components[0]! > 1) continue;
    if (!highest || versionLessThan(highest, version)) highest = version;
  }
  if (!highest) throw new Error(`could not find a highest supported version from versions ([${versions.join(' ')}]) reported: ${parseError ?? '<nil>'}`);
  if (highest.components[0] !== 1) throw new Error(`highest supported version reported is ${versionString(highest)}, must be v1.x`);
  return highest;
}
