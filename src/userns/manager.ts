/**
 * The pods' user namespaces (pkg/kubelet/userns/userns_manager.go UsernsManager): a pod with
 * `hostUsers: false` gets a block of 65536 host IDs of its own, the first free one, recorded in its
 * directory (`<root-dir>/pods/<uid>/userns`, written atomically) so that a restarted agent gives
 * it the same block; the blocks recorded there are read back at start (MakeUserNsManager) and a
 * block is free again once its pod's directory is gone (CleanupOrphanedPodUsernsAllocations).
 * Every other pod is in the node's user namespace (mode NODE). The rules are in rules.ts.
 */
import { randomBytes } from 'node:crypto';
import { open, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Pod } from '../api/types.ts';
import type { Logger } from '../log.ts';
import { NamespaceMode, type RuntimeHandler, type UserNamespace } from '../runtime/types.ts';
import { IDS_PER_POD, firstFreeBlock, mappingsFile, parseMappingsFile, userNamespaceRefusal, wantsOwnUserNamespace } from './rules.ts';

/** The file in a pod's directory (userns_manager.go mappingsFile). */
export const MAPPINGS_FILE = 'userns';

/** A pod's user namespace refused: the kubelet's message, for the FailedCreatePodSandBox event. */
export class UserNamespaceError extends Error {
  override readonly name = 'UserNamespaceError';
}

const NODE_NAMESPACE: UserNamespace = Object.freeze({ mode: NamespaceMode.NODE, uids: [], gids: [] });

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class UserNamespaceManager {
  /** Each pod's block, by its first host ID. */
  private readonly held = new Map<string, number>();
  private readonly taken = new Set<number>();
  private readonly ready: Promise<void>;

  /** `handlers`: what the runtime's Status reported last (null before it answered: the kubelet's runtimeState). */
  constructor(
    private readonly podsDir: string,
    private readonly handlers: () => readonly RuntimeHandler[] | null,
    private readonly log: Logger,
  ) {
    this.ready = this.readRecorded();
  }

  /**
   * The namespace options of the pod's sandbox and containers on `handler`
   * (GetOrCreateUserNamespaceMappings); rejects with UserNamespaceError when the handler cannot
   * give it its own, or its recorded block is not one the kubelet wrote.
   */
  async mappingsFor(pod: Pod, handler: string): Promise<UserNamespace> {
    if (!wantsOwnUserNamespace(pod)) return NODE_NAMESPACE;
    const refusal = userNamespaceRefusal(this.handlers(), handler);
    if (refusal) throw new UserNamespaceError(refusal);
    await this.ready;
    const uid = pod.metadata.uid;
    const hostId = this.held.get(uid) ?? (await this.recordedOrNew(uid));
    const mapping = { hostId, containerId: 0, length: IDS_PER_POD };
    return { mode: NamespaceMode.POD, uids: [mapping], gids: [mapping] };
  }

  /** The pod's directory is gone: its block is free (releaseWithLock). */
  async release(uid: string): Promise<void> {
    await this.ready;
    const hostId = this.held.get(uid);
    if (hostId === undefined) return;
    this.held.delete(uid);
    this.taken.delete(hostId);
    await rm(this.fileOf(uid), { force: true });
  }

  private fileOf(uid: string): string {
    return path.join(this.podsDir, uid, MAPPINGS_FILE);
  }

  /** The block the pod's file records (an agent restarted), else the first free one, written down before it is used. */
  private async recordedOrNew(uid: string): Promise<number> {
    const content = await readFile(this.fileOf(uid), 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return '';
      throw new UserNamespaceError(`read user namespace mappings of pod ${uid}: ${errorText(err)}`);
    });
    const known = this.held.get(uid);
    if (known !== undefined) return known;
    if (content !== '') {
      const recorded = this.record(uid, content);
      if ('error' in recorded) throw new UserNamespaceError(recorded.error);
      return recorded.hostId;
    }
    const hostId = firstFreeBlock(this.taken);
    if (hostId === null) throw new UserNamespaceError('could not find an empty slot to allocate a user namespace');
    this.held.set(uid, hostId);
    this.taken.add(hostId);
    try {
      await this.write(uid, mappingsFile(hostId));
    } catch (err) {
      this.held.delete(uid);
      this.taken.delete(hostId);
      throw new UserNamespaceError(`write user namespace mappings of pod ${uid}: ${errorText(err)}`);
    }
    return hostId;
  }

  /** Holds the block a file records for the pod, refused when another pod holds it (record). */
  private record(uid: string, content: string): { hostId: number } | { error: string } {
    const parsed = parseMappingsFile(content);
    if ('error' in parsed) return parsed;
    if (this.taken.has(parsed.hostId)) return { error: `range picked for pod ${JSON.stringify(uid)} already taken` };
    this.held.set(uid, parsed.hostId);
    this.taken.add(parsed.hostId);
    return parsed;
  }

  /** Written to a new file renamed over the old, then the directory synced: whole or not at all, and durable (utilstore FileStore.Write, writeMappingsToFile). */
  private async write(uid: string, content: string): Promise<void> {
    const file = this.fileOf(uid);
    const temporary = `${file}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(temporary, content, { mode: 0o644 });
    try {
      await rename(temporary, file);
    } catch (err) {
      await rm(temporary, { force: true });
      throw err;
    }
    const dir = await open(path.dirname(file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }

  /**
   * The blocks the pods' directories record (MakeUserNsManager). A file that is not one the
   * kubelet wrote is reported and left unrecorded (the kubelet would not start): its pod's sandbox
   * is refused with the reason when it is next created, and no other pod is held up.
   */
  private async readRecorded(): Promise<void> {
    const uids = await readdir(this.podsDir).catch(() => []);
    for (const uid of uids) {
      const content = await readFile(this.fileOf(uid), 'utf8').catch(() => '');
      if (content === '') continue;
      const recorded = this.record(uid, content);
      if ('error' in recorded) this.log('error', 'A pod user namespace mappings file is not valid', { podUID: uid, err: recorded.error });
    }
  }
}
