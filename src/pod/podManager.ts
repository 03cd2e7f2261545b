/**
 * The desired pods, as the merged config sources last described them (the kubelet's pod
 * manager): UID → pod, in arrival order. `/pods` lists these with their statuses; housekeeping
 * compares them with the pod actors.
 */
import type { Pod } from '../api/types.ts';

/** What anyone but the config handlers may do with the desired pods: read them. */
export type DesiredPods = Pick<PodManager, 'get' | 'has' | 'all' | 'size'>;

export class PodManager {
  private readonly pods = new Map<string, Pod>();

  set(pod: Pod): void {
    this.pods.set(pod.metadata.uid, pod);
  }

  delete(uid: string): void {
    this.pods.delete(uid);
  }

  get(uid: string): Pod | undefined {
    return this.pods.get(uid);
  }

  has(uid: string): boolean {
    return this.pods.has(uid);
  }

  all(): IterableIterator<Pod> {
    return this.pods.values();
  }

  get size(): number {
    return this.pods.size;
  }
}
