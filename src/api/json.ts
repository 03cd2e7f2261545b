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
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (!isRecord(a) || !isRecord(b)) return false;
  // Counted, not listed: statuses are compared often (the status writer's resync, every pod), and
  // the lists of keys were the largest single share of what a node at rest allocated.
  let members = 0;
  for (const key in a) {
    if (!present(a[key])) continue;
    members++;
    if (!present(b[key]) || !jsonEqual(a[key], b[key])) return false;
  }
  for (const key in b) if (present(b[key])) members--;
  return members === 0;
}

const present = (value: unknown): boolean => value !== undefined && value !== null;
