/**
 * Static pods that share a full name (`name_namespace`) take turns (pkg/kubelet/pod_workers.go
 * allowStaticPodStart): when a
 * static manifest changes, its new version has a new UID, and it must not start before the old
 * version has finished terminating — two etcd members with one data dir must never overlap.
 * A name is held by the static pod started under it until that pod finishes; the others wait in
 * arrival order. Plain data structure, no I/O.
 */
export class StaticPodNames {
  private readonly holders = new Map<string, string>();
  private readonly waiting = new Map<string, string[]>();

  /** Claims `fullName` for `uid` if it is free (or already held by it); else queues `uid`. */
  tryStart(fullName: string, uid: string): boolean {
    const holder = this.holders.get(fullName);
    if (holder === undefined || holder === uid) {
      this.holders.set(fullName, uid);
      this.drop(fullName, uid);
      return true;
    }
    const queue = this.waiting.get(fullName) ?? [];
    if (!queue.includes(uid)) queue.push(uid);
    this.waiting.set(fullName, queue);
    return false;
  }

  /**
   * `uid` finished: frees the name and hands it to the first waiting UID that is still wanted
   * (`stillWanted`), dropping the ones ahead of it that are not. Returns the UID to start.
   */
  release(fullName: string, uid: string, stillWanted: (uid: string) => boolean): string | undefined {
    if (this.holders.get(fullName) !== uid) return undefined;
    this.holders.delete(fullName);
    const queue = this.waiting.get(fullName) ?? [];
    while (queue.length > 0) {
      const next = queue.shift() as string;
      if (!stillWanted(next)) continue;
      if (queue.length === 0) this.waiting.delete(fullName);
      this.holders.set(fullName, next);
      return next;
    }
    this.waiting.delete(fullName);
    return undefined;
  }

  /** Forgets a waiting UID (its manifest went away before it could start). */
  drop(fullName: string, uid: string): void {
    const queue = this.waiting.get(fullName);
    if (!queue) return;
    const rest = queue.filter((u) => u !== uid);
    if (rest.length) this.waiting.set(fullName, rest);
    else this.waiting.delete(fullName);
  }

  isWaiting(fullName: string, uid: string): boolean {
    return this.waiting.get(fullName)?.includes(uid) ?? false;
  }

  holder(fullName: string): string | undefined {
    return this.holders.get(fullName);
  }
}
