/**
 * The API server as the node agent uses it: the calls a kubelet makes with its node identity
 * (its Node and Lease, the pods bound to it and their status, mirror pods, events). The machines
 * and sources depend on this interface only; src/client/kubeClient.ts implements it with
 * @kubernetes/client-node, and tests may give an in-memory double.
 *
 * Every failure is an `ApiError` carrying the HTTP status (0: no answer: connection refused,
 * reset, timed out), so callers decide on the status, never on a message.
 */
import type { CSIDriver, PersistentVolume, PersistentVolumeClaim, VolumeAttachment } from '../api/storage.ts';
import type { CertificateSigningRequest, ClusterTrustBundle, CSINode, KubeEvent, Lease, NodeObject, RuntimeClass, Service } from '../api/cluster.ts';
import type { Pod } from '../api/types.ts';

export class ApiError extends Error {
  constructor(
    /** The HTTP status; 0 when the API server did not answer. */
    readonly status: number,
    /** The Status object's reason (`NotFound`, `Conflict`, `Expired`, …), when it had one. */
    readonly reason: string,
    /** The Status object's message: what client-go's error prints (`persistentvolumeclaims "data" not found`). */
    readonly statusMessage: string,
    /** The call, for messages: `PATCH pods/status default/web`. */
    readonly call: string,
  ) {
    super(`${call}: ${status ? `${status} ${reason ? `${reason}: ` : ''}` : ''}${statusMessage}`);
    this.name = 'ApiError';
  }
}

/** An error as the kubelet would print it: an API server's refusal is its Status message, as client-go's StatusError prints it. */
export const apiErrorText = (err: unknown) => (err instanceof ApiError ? err.statusMessage : err instanceof Error ? err.message : String(err));

export const isNotFound = (err: unknown) => err instanceof ApiError && err.status === 404;
export const isConflict = (err: unknown) => err instanceof ApiError && err.status === 409;
export const isAlreadyExists = (err: unknown) => err instanceof ApiError && err.status === 409 && err.reason === 'AlreadyExists';
export const isForbidden = (err: unknown) => err instanceof ApiError && err.status === 403;
/** The resourceVersion asked for is older than what etcd keeps (compaction): list again. */
export const isGone = (err: unknown) => err instanceof ApiError && (err.status === 410 || err.reason === 'Expired' || err.reason === 'Gone');

export interface PodList {
  items: Pod[];
  resourceVersion: string;
}

/** A watch event that changes an object. A BOOKMARK is not one: it comes as `onBookmark`. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface WatchHandlers<T> {
  onEvent(type: WatchEventType, object: T): void;
  /**
   * A BOOKMARK: the server has sent everything up to `resourceVersion`. It carries no object (only
   * that version in its metadata), and only moves where a resumed watch starts (client-go
   * reflector.go watchHandler: a bookmark sets the last sync resource version and nothing else).
   */
  onBookmark(resourceVersion: string): void;
  /** The watch ended: closed by the server (no error), or failed (an ApiError; 410 for a too old resourceVersion). */
  onEnd(err?: ApiError): void;
}

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  /** Delete only the object with this UID (a new pod of the same name is left alone). */
  uid?: string;
}

export interface TokenRequestSpec {
  /** None: the API server's own audiences. */
  audiences?: string[];
  expirationSeconds: number;
  boundObjectRef: { apiVersion: 'v1'; kind: 'Pod'; name: string; uid: string };
}

export interface IssuedToken {
  token: string;
  /** RFC 3339, as the API server reports it (for the kubelet's own tokens possibly earlier than the token's real expiry). */
  expirationTimestamp: string;
  /** The lifetime the server granted (its `spec.expirationSeconds`). */
  expirationSeconds: number;
}

/** A user as authentication knows it. */
export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export type ReviewedToken = { authenticated: true; user: UserInfo } | { authenticated: false; error?: string };

export interface AccessReview {
  user: UserInfo;
  verb: string;
  resource: string;
  subresource: string;
  name: string;
}

export interface KubeApi {
  createNode(node: NodeObject): Promise<NodeObject>;
  getNode(name: string): Promise<NodeObject>;
  /** A JSON merge patch of the Node (labels, annotations, taints at registration). */
  patchNode(name: string, patch: object): Promise<NodeObject>;
  /** A strategic merge patch of `nodes/<name>/status`. */
  patchNodeStatus(name: string, patch: object): Promise<NodeObject>;

  /** The node's CSINode (storage.k8s.io/v1, named after the Node), as the CSI volume plugin keeps it. */
  getCSINode(name: string): Promise<CSINode>;
  createCSINode(csiNode: CSINode): Promise<CSINode>;
  /** A PUT with the object's resourceVersion: a 409 means someone else wrote it first. */
  updateCSINode(csiNode: CSINode): Promise<CSINode>;
  deleteCSINode(name: string): Promise<void>;

  getLease(namespace: string, name: string): Promise<Lease>;
  createLease(lease: Lease): Promise<Lease>;
  /** A PUT with the lease's resourceVersion: a 409 means someone else wrote it first. */
  updateLease(lease: Lease): Promise<Lease>;

  listPods(fieldSelector: string): Promise<PodList>;
  /** Watches from `resourceVersion`, with bookmarks; `stop()` ends it without calling `onEnd`. */
  watchPods(fieldSelector: string, resourceVersion: string, handlers: WatchHandlers<Pod>): { stop(): void };
  getPod(namespace: string, name: string): Promise<Pod>;
  createPod(pod: Pod): Promise<Pod>;
  /** A strategic merge patch of `pods/<name>/status`. */
  patchPodStatus(namespace: string, name: string, patch: object): Promise<Pod>;
  deletePod(namespace: string, name: string, options: DeleteOptions): Promise<void>;

  /** Every Service of the cluster (the service link variables of pods' environments). */
  listServices(): Promise<{ items: Service[]; resourceVersion: string }>;
  watchServices(resourceVersion: string, handlers: WatchHandlers<Service>): { stop(): void };

  /** Every RuntimeClass of the cluster (node.k8s.io/v1): the handlers pods name. */
  listRuntimeClasses(): Promise<{ items: RuntimeClass[]; resourceVersion: string }>;
  watchRuntimeClasses(resourceVersion: string, handlers: WatchHandlers<RuntimeClass>): { stop(): void };

  /** A ConfigMap's `data` (string values). */
  getConfigMap(namespace: string, name: string): Promise<{ data?: Record<string, string>; binaryData?: Record<string, string> }>;
  /** A Secret's `data` (base64 values, as the API returns them). */
  getSecret(namespace: string, name: string): Promise<{ metadata?: { uid?: string }; type?: string; data?: Record<string, string> }>;
  /** A ServiceAccount's uid and annotations (what credential provider plugins in token mode need). */
  getServiceAccount(namespace: string, name: string): Promise<{ metadata?: { uid?: string; annotations?: Record<string, string> } }>;

  /** A PersistentVolumeClaim, read live each time a pod's volumes are processed (the volume manager's populator). */
  getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim>;
  /** A PersistentVolume, read live as its claim is. */
  getPersistentVolume(name: string): Promise<PersistentVolume>;

  /**
   * A strategic merge patch of `persistentvolumeclaims/<name>/status` (the node's online expansion,
   * resize_util.go PatchPVCStatus; the Node authorizer lets a node patch its pods' claims).
   */
  patchPersistentVolumeClaimStatus(namespace: string, name: string, patch: object): Promise<PersistentVolumeClaim>;

  // The CSI mount flow's reads (pkg/volume/csi): the cluster's CSIDrivers, listed and watched as
  // the kubelet's CSIDriver informer keeps them (a live GET while that has not listed); a volume's
  // VolumeAttachment, read once per mount (csi_attacher.go WaitForAttach).
  /** A CSIDriver; a 404 when the driver has none. */
  getCSIDriver(name: string): Promise<CSIDriver>;
  listCSIDrivers(): Promise<{ items: CSIDriver[]; resourceVersion: string }>;
  watchCSIDrivers(resourceVersion: string, handlers: WatchHandlers<CSIDriver>): { stop(): void };
  getVolumeAttachment(name: string): Promise<VolumeAttachment>;

  /** The resources an API group version serves (discovery, `GET /apis/<groupVersion>`); not served: a 404. */
  apiResources(groupVersion: string): Promise<string[]>;
  /** Every ClusterTrustBundle, read through `groupVersion` (certificates.k8s.io/v1, v1beta1 or v1alpha1). */
  listClusterTrustBundles(groupVersion: string): Promise<ClusterTrustBundle[]>;

  /**
   * A token of `serviceAccount` bound to a pod (the TokenRequest API,
   * `POST serviceaccounts/<name>/token`): the node may ask only for pods bound to it.
   */
  createServiceAccountToken(namespace: string, serviceAccount: string, spec: TokenRequestSpec): Promise<IssuedToken>;

  /** Who a bearer token belongs to (TokenReview, as the kubelet's webhook authenticator asks). */
  createTokenReview(token: string): Promise<ReviewedToken>;
  /** Whether a user may do something (SubjectAccessReview, as the kubelet's webhook authorizer asks). */
  createSubjectAccessReview(review: AccessReview): Promise<{ allowed: boolean; reason?: string }>;

  createEvent(event: KubeEvent): Promise<KubeEvent>;
  /** A JSON merge patch of an Event (its count and lastTimestamp, when it repeats). */
  patchEvent(namespace: string, name: string, patch: object): Promise<KubeEvent>;
}

/**
 * The CSR API as a node uses it to get its certificates (client-go util/certificate/csr): create a
 * request, read one back, and watch one by name until it is issued; and whether the API server
 * answers at all (the transport's expiry check).
 */
export interface CertificateSigningRequests {
  createCertificateSigningRequest(csr: CertificateSigningRequest): Promise<CertificateSigningRequest>;
  getCertificateSigningRequest(name: string): Promise<CertificateSigningRequest>;
  listCertificateSigningRequests(fieldSelector: string): Promise<{ items: CertificateSigningRequest[]; resourceVersion: string }>;
  watchCertificateSigningRequests(fieldSelector: string, resourceVersion: string, handlers: WatchHandlers<CertificateSigningRequest>): { stop(): void };
  /** Whether the API server answers `GET /healthz` with any HTTP status (its refusal is an answer too). */
  serverResponds(): Promise<boolean>;
}

/**
 * Requests made to the API server, by method, resource and status code (0: no answer): the
 * kubelet's `rest_client_requests_total`. A watch counts once, when it is opened.
 */
export class RequestCounts {
  private readonly counts = new Map<string, number>();

  add(method: string, resource: string, code: number): void {
    const key = `${method} ${resource} ${code}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  entries(): { method: string; resource: string; code: number; count: number }[] {
    return [...this.counts].map(([key, count]) => {
      const [method, resource, code] = key.split(' ');
      return { method: method!, resource: resource!, code: Number(code), count };
    });
  }

  total(): number {
    let sum = 0;
    for (const count of this.counts.values()) sum += count;
    return sum;
  }
}
