/**
 * Per-key exponential backoff as the kubelet keeps it for crash loops and image pulls, as plain
 * data so that it can live in a pod actor's context: every function returns a new table.
 *
 * An entry is forgotten once the thing it guards has behaved for twice the maximum delay (a
 * container that ran for ten minutes under the default 300 s cap starts over at the initial delay).
 */

interface BackoffEntry {
  delayMs: number;
  lastUpdateMs: number;
  /** What the last failure was, where the back-off's message repeats it (image pulls). */
  lastError?: string;
}

export type BackoffTable = Readonly<Record<string, BackoffEntry>>;

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
}

export const crashLoopPolicy: BackoffPolicy = { initialMs: 10_000, maxMs: 300_000 };

function expired(entry: BackoffEntry, eventMs: number, policy: BackoffPolicy): boolean {
  return eventMs - entry.lastUpdateMs > 2 * policy.maxMs;
}

/** Records one more failure of `key` (seen at `eventMs`) and returns the grown table. */
export function nextBackoff(
  table: BackoffTable,
  key: string,
  eventMs: number,
  nowMs: number,
  policy: BackoffPolicy,
): BackoffTable {
  const entry = table[key];
  const delayMs =
    !entry || expired(entry, eventMs, policy) ? policy.initialMs : Math.min(entry.delayMs * 2, policy.maxMs);
  return { ...table, [key]: { delayMs, lastUpdateMs: nowMs } };
}

/**
 * How much longer `key` must wait after a failure at `eventMs`; 0 when it may go ahead.
 */
export function backoffRemainingMs(
  table: BackoffTable,
  key: string,
  eventMs: number,
  nowMs: number,
  policy: BackoffPolicy,
): number {
  const entry = table[key];
  if (!entry || expired(entry, eventMs, policy)) return 0;
  return Math.max(0, entry.delayMs - (nowMs - eventMs));
}
