/**
 * Where the allocation manager keeps its records across restarts of the agent (the kubelet's
 * checkpoints `allocated_pods_state` and `actuated_pods_state` in its root directory,
 * pkg/kubelet/allocation/state/state_checkpoint.go): one JSON file each, written whole after each
 * change (a temporary file renamed over the old one, so a crash leaves the old or the new one),
 * read once at start. Saves are written once the current turn of the event loop is over, so a
 * batch of pods admitted together is one write (and on flush, when the agent stops). A removal
 * may wait a second (`lazily`), so that pods finishing one by one share a write: the kubelet writes
 * at each removal, but a crash before a removal is written only leaves the record of a pod that
 * is gone, which the next start's orphan removal drops; what is added or changed is never kept waiting.
 * A file that cannot be read or parsed starts empty, as the kubelet starts
 * from an empty state when its checkpoint is corrupt; one that cannot be written is said once and
 * the records are kept in memory.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ResourceRequirements } from '../api/types.ts';
import { type Clock, type TimerHandle, realClock } from '../clock.ts';
import type { Logger } from '../log.ts';

/** The records of every pod: UID → container name → resources. */
export type PodResourceRecords = Record<string, Record<string, ResourceRequirements>>;

export interface CheckpointStore {
  load(): PodResourceRecords;
  /**
   * Keeps `records` (the caller's object, read again when written); `lazily` (a removal): the write
   * may wait up to LAZY_WRITE_MS, for other removals to share it.
   */
  save(records: PodResourceRecords, lazily?: boolean): void;
  /** Writes what `save` was last given now, if it has not been yet. */
  flush?(): void;
}

interface CheckpointFile {
  version: 1;
  pods: PodResourceRecords;
}

/** How long a removal may wait to be written. */
export const LAZY_WRITE_MS = 1_000;

/** A checkpoint in `<dir>/<name>`. */
export function fileCheckpoint(dir: string, name: string, log: Logger, clock: Clock = realClock): CheckpointStore {
  const file = path.join(dir, name);
  let failed = false;
  let pending: PodResourceRecords | undefined;
  let scheduled = false;
  let lazyWrite: TimerHandle | undefined;
  return {
    load() {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        return {};
      }
      try {
        const parsed = JSON.parse(text) as Partial<CheckpointFile>;
        if (parsed.version === 1 && parsed.pods && typeof parsed.pods === 'object') return parsed.pods;
      } catch {
        // corrupt: as the kubelet, start over
      }
      log('warn', 'Ignoring a checkpoint that cannot be read', { path: file });
      return {};
    },
    save(records, lazily = false) {
      pending = records;
      if (scheduled) return;
      if (lazily) {
        lazyWrite ??= clock.setTimeout(write, LAZY_WRITE_MS);
        return;
      }
      scheduled = true;
      setImmediate(write);
    },
    flush: write,
  };

  function write(): void {
    scheduled = false;
    if (lazyWrite !== undefined) clock.clearTimeout(lazyWrite);
    lazyWrite = undefined;
    const records = pending;
    pending = undefined;
    if (!records) return;
    try {
      mkdirSync(dir, { recursive: true });
      const temporary = `${file}.tmp`;
      writeFileSync(temporary, JSON.stringify({ version: 1, pods: records } satisfies CheckpointFile));
      renameSync(temporary, file);
      failed = false;
    } catch (err) {
      if (!failed) log('error', 'Failed to write a checkpoint; keeping it in memory', { path: file, err });
      failed = true;
    }
  }
}

/** A checkpoint in memory only (tests; the kubelet's NewStateMemory). */
export function memoryCheckpoint(initial: PodResourceRecords = {}): CheckpointStore & { records: PodResourceRecords } {
  const store = {
    records: structuredClone(initial),
    load: () => structuredClone(store.records),
    save: (records: PodResourceRecords) => void (store.records = structuredClone(records)),
  };
  return store;
}
