/**
 * Values shared between their versions and their holders: a new version keeps the unchanged parts
 * of the one before it (`sharedWith`), and what is shared is frozen (`deepFreeze`) so that no
 * holder can change it for the others.
 */

/**
 * `next`, with each part that is the same as the part at the same place in `previous` (same
 * members, same values; nothing ignored) taken from `previous`: successive versions of an object
 * then hold one copy of what did not change (a pod's spec across its status updates), and an
 * unchanged part is recognised by identity. Neither argument is modified; a part of `next` that
 * differs is rebuilt only where it holds shared parts.
 */
export function sharedWith<T>(previous: unknown, next: T): T {
  return share(previous, next) as T;
}

function share(previous: unknown, next: unknown): unknown {
  // An equal string is taken from `previous` too: one copy of its characters.
  if (previous === next) return previous;
  if (typeof next !== 'object' || next === null || typeof previous !== 'object' || previous === null) return next;
  if (Array.isArray(next)) {
    if (!Array.isArray(previous)) return next;
    const items = next.map((item, i) => share(previous[i], item));
    if (items.length === previous.length && items.every((item, i) => item === previous[i])) return previous;
    return items.every((item, i) => item === next[i]) ? next : items;
  }
  if (Array.isArray(previous)) return next;
  const before = previous as Record<string, unknown>;
  const now = next as Record<string, unknown>;
  const keys = Object.keys(now);
  let allShared = keys.length === Object.keys(before).length;
  let copy: Record<string, unknown> | undefined;
  for (const key of keys) {
    const value = now[key];
    const kept = Object.hasOwn(before, key) ? share(before[key], value) : value;
    if (kept !== before[key] || !Object.hasOwn(before, key)) allShared = false;
    if (kept !== value) (copy ??= { ...now })[key] = kept;
  }
  return allShared ? previous : (copy ?? next);
}

/**
 * Freezes `value` and everything it holds, so that an object shared between versions and
 * consumers cannot be changed by any of them (a write throws). A frozen object's parts are frozen
 * before it, so a part found frozen is not walked again.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  for (const member of Object.values(value)) deepFreeze(member);
  return Object.freeze(value);
}
