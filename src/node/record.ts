/**
 * The Node as the agent last wrote or read it. The node status loop writes it; the Lease (its
 * owner reference), the mirror pods (theirs) and admission (labels, taints, allocatable) read it.
 */
import type { NodeObject } from '../api/cluster.ts';

export class NodeRecord {
  node: NodeObject | null = null;

  get uid(): string | null {
    return this.node?.metadata.uid ?? null;
  }
}
