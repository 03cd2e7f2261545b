/**
 * The node's CSI driver info in the API (pkg/volume/csi/nodeinfomanager/nodeinfomanager.go): the
 * calls that apply nodeInfo.ts's changes — GET the Node and PATCH `nodes/<name>/status` (its
 * metadata, as the kubelet's nodeutil.PatchNodeStatus does), GET, create, PUT or delete the
 * CSINode — each step retried as the kubelet retries it (updateBackoff: 4 tries, 10 ms × 5), its
 * failure worded as the kubelet words it.
 */
import type { CSINode, NodeObject } from '../../api/cluster.ts';
import { type KubeApi, isNotFound } from '../../client/api.ts';
import type { Sleep } from '../../clock.ts';
import type { Logger } from '../../log.ts';
import { csiNodeInitialized, csiNodeOwner, csiNodeWithDriver, csiNodeWithoutDriver, newCsiNode, nodeInstallPatch, nodeUninstallPatch, type NodeMetadataPatch } from './nodeInfo.ts';

/** nodeinfomanager.go updateBackoff: the waits between its 4 tries (10 ms, ×5 each time; its 10 % jitter left out). */
const UPDATE_BACKOFF_WAITS_MS = [10, 50, 250];

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** utilerrors.NewAggregate(...).Error(): one message as it is, several distinct ones in brackets. */
function aggregate(errors: readonly string[]): string {
  const distinct = [...new Set(errors)];
  return distinct.length === 1 ? distinct[0]! : `[${distinct.join(', ')}]`;
}

interface NodeInfoManagerDeps {
  /** None: a standalone node, whose every update fails as the kubelet's does without a client. */
  api: KubeApi | undefined;
  nodeName: string;
  sleep: Sleep;
  log: Logger;
}

export class NodeInfoManager {
  /** The Node's UID as last read (nim.nodeID): the CSINode's owner. */
  private nodeUid = '';
  /** One update at a time (nim.lock): a registration and a deregistration never interleave their reads and writes. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: NodeInfoManagerDeps) {}

  /** The API client; none: `error getting kube client` (nodeinfomanager.go, a kubelet without a kubeconfig). */
  private get api(): KubeApi {
    if (!this.deps.api) throw new Error('error getting kube client');
    return this.deps.api;
  }

  /**
   * wait.ExponentialBackoff over updateBackoff: the try until it succeeds; after the last, the
   * failures in the kubelet's words (all of them, or the last only where the kubelet keeps that).
   */
  private async retried(what: string, attempt: () => Promise<void>, cause: 'all' | 'last' = 'all'): Promise<void> {
    const failures: string[] = [];
    for (let i = 0; ; i++) {
      try {
        await this.locked(attempt);
        return;
      } catch (err) {
        failures.push(message(err));
      }
      if (i >= UPDATE_BACKOFF_WAITS_MS.length) break;
      await this.deps.sleep(UPDATE_BACKOFF_WAITS_MS[i]!);
    }
    throw new Error(`error updating ${what}: timed out waiting for the condition; caused by: ${cause === 'all' ? aggregate(failures) : failures.at(-1)}`);
  }

  private locked<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async readNode(): Promise<NodeObject> {
    const node = await this.api.getNode(this.deps.nodeName);
    this.nodeUid = node.metadata.uid ?? '';
    return node;
  }

  /** tryUpdateNode: GET the Node, the change from it, PATCH its status subresource when there is one. */
  private async patchNode(change: (node: NodeObject) => NodeMetadataPatch | null): Promise<void> {
    const patch = change(await this.readNode());
    if (patch) await this.api.patchNodeStatus(this.deps.nodeName, { metadata: patch });
  }

  /** ensureNodeOwnsCSINode: a CSINode of another Node of this name (an earlier one, deleted) is deleted, and this try fails. */
  private async ensureOwned(csiNode: CSINode): Promise<void> {
    const { owned, ownerUid } = csiNodeOwner(csiNode, this.deps.nodeName, this.nodeUid);
    if (owned) return;
    this.deps.log('info', 'The existing CSINode is owned by a different node, cleaning up', { csiNode: csiNode.metadata.name, oldNodeID: ownerUid, newNodeID: this.nodeUid });
    try {
      await this.api.deleteCSINode(this.deps.nodeName);
    } catch (err) {
      throw new Error(`error deleting existing CSINode "${csiNode.metadata.name}": ${message(err)}`);
    }
    throw new Error(`CSINode "${csiNode.metadata.name}" was owned by different node (oldNodeID="${ownerUid}", newNodeID="${this.nodeUid}"), deleted it`);
  }

  /** The CSINode, created when there is none (CreateCSINode). */
  private async csiNode(): Promise<CSINode> {
    try {
      return await this.api.getCSINode(this.deps.nodeName);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!this.nodeUid) await this.readNode();
    return this.api.createCSINode(newCsiNode(this.deps.nodeName, this.nodeUid));
  }

  /**
   * InitializeCSINodeWithAnnotation: the CSINode exists, owned by the Node, with the migrated
   * plugins annotated (created so when missing).
   */
  async initializeCsiNode(): Promise<void> {
    await this.retried(
      'CSINode annotation',
      async () => {
        await this.readNode();
        let csiNode: CSINode;
        try {
          csiNode = await this.api.getCSINode(this.deps.nodeName);
        } catch (err) {
          if (!isNotFound(err)) throw err;
          await this.api.createCSINode(newCsiNode(this.deps.nodeName, this.nodeUid));
          return;
        }
        await this.ensureOwned(csiNode);
        const annotated = csiNodeInitialized(csiNode);
        if (annotated) await this.api.updateCSINode(annotated);
      },
      'last',
    );
  }

  /** InstallCSIDriver: the Node's annotation and labels, then the CSINode's entry for the driver. */
  async installCsiDriver(driverName: string, driverNodeId: string, maxVolumes: number, topology: Readonly<Record<string, string>>): Promise<void> {
    if (driverNodeId === '') throw new Error('error adding CSI driver node info: driverNodeID must not be empty');
    try {
      await this.retried('node', () => this.patchNode((node) => nodeInstallPatch(node, driverName, driverNodeId, topology)));
    } catch (err) {
      throw new Error(`error updating Node object with CSI driver node info: ${message(err)}`);
    }
    try {
      await this.retried('CSINode', async () => {
        const csiNode = await this.csiNode();
        await this.ensureOwned(csiNode);
        const updated = csiNodeWithDriver(csiNode, driverName, driverNodeId, maxVolumes, topology);
        if (updated) await this.api.updateCSINode(updated);
      });
    } catch (err) {
      throw new Error(`error updating CSINode object with CSI driver node info: ${message(err)}`);
    }
  }

  /** UninstallCSIDriver: the driver out of the CSINode (gone already: done), then out of the Node's annotation. */
  async uninstallCsiDriver(driverName: string): Promise<void> {
    try {
      await this.retried('CSINode', async () => {
        let csiNode: CSINode;
        try {
          csiNode = await this.api.getCSINode(this.deps.nodeName);
        } catch (err) {
          if (isNotFound(err)) return;
          throw err;
        }
        const updated = csiNodeWithoutDriver(csiNode, driverName);
        if (updated) await this.api.updateCSINode(updated);
      });
    } catch (err) {
      throw new Error(`error uninstalling CSI driver from CSINode object ${message(err)}`);
    }
    try {
      await this.retried('node', () => this.patchNode((node) => nodeUninstallPatch(node, driverName)));
    } catch (err) {
      throw new Error(`error removing CSI driver node info from Node object ${message(err)}`);
    }
  }
}
