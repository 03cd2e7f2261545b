/**
 * Keeps the mirror pods in the API in step with the static pods (plan: mirrorPods.ts): runs the
 * plan whenever the static pods or the mirrors seen through the API source change, and on every
 * housekeeping pass, which retries what failed. Passes never overlap; a request during a pass
 * runs one more pass after it. Nothing is planned before the API source has shown the mirrors
 * once (until then the agent cannot tell which exist).
 */
import type { OwnerReference } from '../api/cluster.ts';
import { ConfigAnnotation, type Pod, podRef } from '../api/types.ts';
import { isAlreadyExists, isForbidden, isNotFound, type KubeApi } from '../client/api.ts';
import type { Logger } from '../log.ts';
import { planMirrors } from './mirrorPods.ts';

/** Where mirror pods go: the API, the node's name, and its Node as their owner once its UID is known. */
export interface MirrorPodSettings {
  api: KubeApi;
  nodeName: string;
  owner(): OwnerReference | null;
}

interface MirrorPodSyncDeps extends MirrorPodSettings {
  staticPods(): Pod[];
  log: Logger;
  /** A static pod's mirror was created: its status can be written now. */
  onCreated?(staticPod: Pod): void;
  now(): number;
}

/**
 * How long a mirror the API server refused (403: NodeRestriction forbids mirrors that reference
 * service accounts, secrets or config maps) waits before it is asked for again: the same request
 * would be refused the same way, so it is not retried on every housekeeping pass.
 */
const REFUSED_RETRY_MS = 5 * 60_000;

export class MirrorPodSync {
  private mirrors: Pod[] | null = null;
  private running = false;
  private again = false;
  /** Mirrors the API server refused, by their static pod's hash: when to ask again. */
  private readonly refused = new Map<string, number>();

  constructor(private readonly deps: MirrorPodSyncDeps) {}

  /** The mirror pods the API source holds now. */
  mirrorsSeen(pods: Pod[]): void {
    this.mirrors = pods;
    this.request();
  }

  request(): void {
    if (this.mirrors === null) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.pass().finally(() => {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.request();
      }
    });
  }

  private async pass(): Promise<void> {
    const { api, log } = this.deps;
    const staticPods = this.deps.staticPods();
    const plan = planMirrors(staticPods, this.mirrors ?? [], this.deps.nodeName, this.deps.owner());
    for (const stale of plan.delete) {
      try {
        await api.deletePod(stale.namespace, stale.name, { gracePeriodSeconds: 0, uid: stale.uid });
        log('info', 'Deleted a mirror pod whose static pod changed or is gone', { pod: `${stale.namespace}/${stale.name}` });
      } catch (err) {
        if (!isNotFound(err)) log('warn', 'Failed to delete a mirror pod; will retry', { pod: `${stale.namespace}/${stale.name}`, err: String(err) });
      }
    }
    const now = this.deps.now();
    const hashes = new Set(staticPods.map((p) => p.metadata.annotations?.[ConfigAnnotation.hash]));
    for (const hash of this.refused.keys()) if (!hashes.has(hash)) this.refused.delete(hash);
    for (const mirror of plan.create) {
      const staticHash = mirror.metadata.annotations?.[ConfigAnnotation.mirror] ?? '';
      if ((this.refused.get(staticHash) ?? 0) > now) continue;
      try {
        await api.createPod(mirror);
        this.refused.delete(staticHash);
        log('info', 'Created the mirror pod of a static pod', { pod: podRef(mirror) });
        const staticPod = staticPods.find((p) => p.metadata.namespace === mirror.metadata.namespace && p.metadata.name === mirror.metadata.name);
        if (staticPod) this.deps.onCreated?.(staticPod);
      } catch (err) {
        if (isForbidden(err)) {
          if (!this.refused.has(staticHash)) {
            log('error', 'The API server refused the mirror pod of a static pod; the pod runs, its status is not published; asking again every 5 minutes', {
              pod: podRef(mirror),
              err: String(err),
            });
          }
          this.refused.set(staticHash, now + REFUSED_RETRY_MS);
        } else if (!isAlreadyExists(err)) {
          log('warn', 'Failed to create a mirror pod; will retry', { pod: podRef(mirror), err: String(err) });
        }
      }
    }
  }
}
