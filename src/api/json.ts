/** Plain JSON values, compared as the API server sees them. */
import { isRecord } from './validate.ts';

/**
 * Structural equality of JSON values; key order and members set to `undefined` or `null` do not
 * count: an object member that is null reads as absent in the API (Go's decoder leaves the field
 * unset), so a status generated with `lastProbeTime: null` equals the one the API gives back.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (!isRecord(a) || !isRecord(b)) return false;
  const keysA = Object.keys(a).filter((key) => a[key] !== undefined && a[key] !== null);
  const keysB = Object.keys(b).filter((key) => b[key] !== undefined && b[key] !== null);
  return keysA.length === keysB.length && keysA.every((key) => b[key] !== undefined && b[key] !== null && jsonEqual(a[key], b[key]));
}
