/**
 * `KubeApi` over @kubernetes/client-node: its kubeconfig handling (TLS, credentials, exec plugins,
 * proxy) for every request, sent as plain JSON (`jsonRequester` says why), and its `Watch` for the
 * watches. Every request carries statelet's user agent and a deadline (a request that hangs is
 * aborted and fails with status 0, so a silent API server never stalls a heartbeat); a request
 * the API server asks to retry later (429 or 5xx with `Retry-After`: priority and fairness, a
 * server shutting down) is sent again after that wait, at most 10 times, as client-go's rest
 * client does (rest/with_retry.go IsNextRetry, checkWait); every error becomes an `ApiError`
 * naming the call.
 */
import http from 'node:http';
import https from 'node:https';
import { ApiException, HttpMethod, KubeConfig, PatchStrategy, RequestContext, Watch } from '@kubernetes/client-node';
import type { CertificateSigningRequest, ClusterTrustBundle, KubeEvent, RuntimeClass, Service } from '../api/cluster.ts';
import type { CSIDriver } from '../api/storage.ts';

/** The nodes' CSINodes (cluster-scoped; the Node authorizer lets a node write its own). */
const CSI_NODES_PATH = '/apis/storage.k8s.io/v1/csinodes';
const csiNodePath = (name: string) => `${CSI_NODES_PATH}/${encodeURIComponent(name)}`;

/** The cluster's CSIDrivers (cluster-scoped; the Node authorizer lets a node get, list and watch them). */
const CSI_DRIVERS_PATH = '/apis/storage.k8s.io/v1/csidrivers';

/** The cluster's CertificateSigningRequests (cluster-scoped; a node creates its own and watches them by name). */
const CSRS_PATH = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

/** The cluster's RuntimeClasses (cluster-scoped; the Node authorizer lets a node get, list and watch them). */
const RUNTIME_CLASSES_PATH = '/apis/node.k8s.io/v1/runtimeclasses';
import type { Pod } from '../api/types.ts';
import { withoutNullMembers } from '../api/validate.ts';
import { type Clock, realClock, sleepOn } from '../clock.ts';
import { type Bucket, type RateLimit, takeToken } from './rateLimit.ts';
import { ApiError, type CertificateSigningRequests, type DeleteOptions, type RequestCounts, type KubeApi, type PodList, type WatchEventType, type WatchHandlers } from './api.ts';

export interface KubeClientOptions {
  /** Deadline of one request (not of a watch). */
  requestTimeoutMs: number;
  userAgent: string;
  /** Where every request is counted. */
  counts?: RequestCounts;
  /**
   * Client-side rate limits (--kube-api-qps/--kube-api-burst, --event-qps/--event-burst): pods and
   * their status on one bucket, events on another; the Node and its Lease, the heartbeat, on none
   * (as the kubelet's heartbeat client). Absent: no limit.
   */
  limits?: { api: RateLimit; events: RateLimit; clock: Clock };
  /**
   * The client certificate a certificate manager keeps current (pkg/kubelet/certificate/transport.go
   * addCertRotation): presented in place of the kubeconfig's own, none while there is none yet;
   * when it changes, new connections present the new one and the old connections are closed (idle
   * ones at once, busy ones as their request ends; watches end cleanly, so their reflectors resume
   * from their last resourceVersion on the new connection).
   */
  clientCertificate?: ClientCertificate;
  /** Told after each change of the client certificate, once the old connections are being closed. */
  onCertificateRotation?(): void;
}

/** A client certificate and key kept current elsewhere (src/certificate's CertificateSource has this shape). */
export interface ClientCertificate {
  current(): { cert: string; key: string } | null;
  onChange(listener: () => void): () => void;
}

/** How many times a request the API server asked to retry later is sent again (client-go rest/request.go maxRetries). */
const MAX_RETRIES = 10;

/** The wait the API server asked for before a retry (a 429 or 5xx with `Retry-After` seconds), or null. */
function retryAfterMs(err: unknown): number | null {
  if (!(err instanceof ApiException) || (err.code !== 429 && err.code < 500)) return null;
  const header = Object.entries(err.headers ?? {}).find(([name]) => name.toLowerCase() === 'retry-after')?.[1];
  const seconds = header === undefined ? NaN : Number(header);
  return Number.isInteger(seconds) && seconds >= 0 ? seconds * 1000 : null;
}

/** A waiter on one token bucket. */
function limiter(limit: RateLimit | undefined, clock: Clock | undefined): () => Promise<void> {
  let bucket: Bucket | null = null;
  return async () => {
    if (!limit || !clock) return;
    const taken = takeToken(bucket, limit, clock.now());
    bucket = taken.bucket;
    if (taken.waitMs > 0) await new Promise<void>((resolve) => clock.setTimeout(resolve, taken.waitMs));
  };
}

/** Connections kept open to the API server at most: the rate limits keep fewer requests in flight. */
const MAX_SOCKETS = 16;
/**
 * An idle connection is closed after this long, well before the API server closes it from its
 * side (its idle timeout is 90 s): a request is never written to a connection being closed.
 */
const IDLE_SOCKET_TIMEOUT_MS = 30_000;

/**
 * An agent for the one API server of the kubeconfig, with one set of TLS settings: its pool needs
 * one name. https.Agent names each request's pool by its host and TLS options, the CA, client
 * certificate and key included, concatenating those PEM texts at every request and again when
 * its connection is freed.
 */
class OneServerAgent extends https.Agent {
  override getName(): string {
    return 'api-server';
  }
}

/**
 * The library makes a new agent for every request (KubeConfig.applySecurityAuthentication), so
 * each call opened its own TLS connection to the API server — a handshake and a TLS context per
 * status write, and memory the allocator kept. Given the first request's agent, this returns one
 * agent with the same TLS settings that keeps its connections open (client-go likewise keeps one
 * connection per server); each later request gets it. A proxy's agent is left as it is.
 */
function keepAliveAgent(): { agentFor(agent: http.Agent | https.Agent | undefined): http.Agent | https.Agent | undefined; destroy(): void } {
  let shared: http.Agent | https.Agent | undefined;
  return {
    agentFor: (agent) => {
      if (shared) return shared;
      if (!agent || (agent.constructor !== https.Agent && agent.constructor !== http.Agent)) return agent;
      const settings = { ...(agent as https.Agent).options, keepAlive: true, maxSockets: MAX_SOCKETS, timeout: IDLE_SOCKET_TIMEOUT_MS };
      shared = agent instanceof https.Agent ? new OneServerAgent(settings) : new http.Agent(settings);
      return shared;
    },
    destroy: () => shared?.destroy(),
  };
}

/**
 * The connections of one set of credentials: its shared agent, the requests in flight on it and
 * its open watches. Retired when the client certificate changes (transport.go: CloseAll): its
 * idle connections close at once, its busy ones once their requests end (so a status write in
 * flight is not lost), and its watches end without an error so their reflectors resume at once.
 */
class Connections {
  readonly agent = keepAliveAgent();
  readonly watches = new Set<() => void>();
  private inFlight = 0;
  private retired = false;

  started(): void {
    this.inFlight += 1;
  }

  ended(): void {
    this.inFlight -= 1;
    if (this.retired && this.inFlight === 0) this.agent.destroy();
  }

  retire(): void {
    this.retired = true;
    for (const reconnect of [...this.watches]) reconnect();
    if (this.inFlight === 0) this.agent.destroy();
  }
}

/** Turns what the client library throws into an ApiError. */
function apiError(call: string, err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof ApiException) {
    const body = parseBody(err.body);
    return new ApiError(err.code, String(body?.reason ?? ''), String(body?.message ?? err.message), call);
  }
  const message = err instanceof Error ? err.message : String(err);
  // The library's Watch refuses a request with a plain Error carrying the HTTP status (its body
  // unread): a 410 must still be Gone, for the reflector lists again on it however it comes
  // (client-go tools/cache/reflector.go watch: apierrors.IsResourceExpired or IsGone).
  const statusCode = (err as { statusCode?: unknown } | null)?.statusCode;
  return new ApiError(typeof statusCode === 'number' ? statusCode : 0, '', message, call);
}

function parseBody(body: unknown): Record<string, unknown> | undefined {
  if (typeof body === 'string') {
    try {
      return JSON.parse(body) as Record<string, unknown>;
    } catch {
      return { message: body };
    }
  }
  return body && typeof body === 'object' ? (body as Record<string, unknown>) : undefined;
}

/**
 * A JSON request sent with the kubeconfig's TLS settings, credentials and proxy, applied by the
 * library as for its own requests (applySecurityAuthentication gives the agent and the headers),
 * on the shared connections. Every request goes this way rather than through the library's typed
 * API classes: their conversion of each body into model classes and of each answer back (a whole
 * Pod for a status write) cost more CPU than the request itself, their answers drop the fields
 * the library's models do not know, and the ~2,600 generated models they pull in kept a 5.3 MB
 * chunk of source, and its classes, in every agent (6–9 MB of RSS; docs/benchmarks.md). The answer is
 * parsed JSON; a refusal is thrown as the library throws it (an ApiException with the Status and
 * the headers).
 */
function jsonRequester(config: KubeConfig, options: KubeClientOptions, connections: Connections) {
  const server = (config.getCurrentCluster()?.server ?? '').replace(/\/+$/, '');
  const authentication = recentAuthentication(config, server);
  return async (method: HttpMethod, path: string, body?: unknown, contentType = 'application/json'): Promise<unknown> => {
    // Appended to the server's URL, whose path a proxy in front of the API server may need
    // (`https://host/k8s/clusters/c-1`), as the library's own requests and Watch do.
    const url = new URL(`${server}${path}`);
    const credentials = await authentication.get();
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string | number> = { ...credentials.headers, Accept: 'application/json', 'User-Agent': options.userAgent };
    if (payload !== undefined) Object.assign(headers, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(payload) });
    connections.started();
    return new Promise<unknown>((resolve, reject) => {
      const request = (url.protocol === 'https:' ? https : http).request(url, {
        method,
        agent: connections.agent.agentFor(credentials.agent),
        signal: AbortSignal.timeout(options.requestTimeoutMs),
        headers,
      });
      request.once('error', reject);
      request.once('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.once('error', reject);
        response.once('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = response.statusCode ?? 0;
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            // Not JSON (a proxy's error page): kept as text.
          }
          if (status === 401) authentication.forget(); // the next request asks the library again (a renewed token)
          if (status >= 200 && status < 300) resolve(parsed);
          else reject(new ApiException(status, `${method} ${path}`, parsed, response.headers as Record<string, string>));
        });
      });
      request.end(payload);
    }).finally(() => connections.ended());
  };
}

/** How long the library's credentials for a request are used before it is asked again. */
const CREDENTIALS_TTL_MS = 10_000;

/**
 * The headers and agent the library gives a request (applySecurityAuthentication), asked for at
 * most every CREDENTIALS_TTL_MS and again after a 401: the library reads the kubeconfig's
 * certificate and key files (or decodes their data) and builds a new agent each time, 50–90 µs of
 * CPU for every status write and event, for what changes only when a credential is renewed
 * (client-go's cached token source likewise reads a token file again only every minute).
 */
function recentAuthentication(config: KubeConfig, server: string) {
  interface Credentials {
    headers: Record<string, string>;
    agent: http.Agent | https.Agent | undefined;
  }
  let cached: { credentials: Promise<Credentials>; until: number } | undefined;
  return {
    get(): Promise<Credentials> {
      const now = performance.now();
      if (cached === undefined || now >= cached.until) {
        const credentials = (async () => {
          const context = new RequestContext(server, HttpMethod.GET);
          await config.applySecurityAuthentication(context);
          return { headers: { ...context.getHeaders() }, agent: context.getAgent() as http.Agent | https.Agent | undefined };
        })();
        const entry = { credentials, until: now + CREDENTIALS_TTL_MS };
        cached = entry;
        // A failure is not kept: the next request asks again.
        credentials.catch(() => {
          if (cached === entry) cached = undefined;
        });
      }
      return cached.credentials;
    },
    forget(): void {
      cached = undefined;
    },
  };
}

/** `path` with its query parameters (those given). */
function withQuery(path: string, params: Record<string, string | undefined>): string {
  const query = new URLSearchParams(Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined)).toString();
  return query ? `${path}?${query}` : path;
}

/**
 * The API client of a kubeconfig file; a file that cannot be read, or whose current context names
 * no server, is refused with the file's name.
 */
export function kubeClientFromFile(file: string, options: KubeClientOptions): { api: KubeApi & CertificateSigningRequests; server: string } {
  const config = new KubeConfig();
  try {
    config.loadFromFile(file);
  } catch (err) {
    throw new Error(`--kubeconfig ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const server = config.getCurrentCluster()?.server;
  if (!server) throw new Error(`--kubeconfig ${file}: the current context names no cluster server`);
  return { api: createKubeClient(config, options), server };
}

/**
 * The kubeconfig with its current user presenting `pair` as its client certificate, and no
 * certificate at all without one (transport.go addCertRotation zeroes the kubeconfig's own).
 */
function withClientCertificate(config: KubeConfig, pair: { cert: string; key: string } | null): KubeConfig {
  const userName = config.getCurrentUser()?.name;
  const copy = new KubeConfig();
  copy.loadFromOptions({
    clusters: config.clusters,
    contexts: config.contexts,
    currentContext: config.currentContext,
    users: config.users.map((user) => {
      if (user.name !== userName) return user;
      const { certFile: _certFile, keyFile: _keyFile, certData: _certData, keyData: _keyData, ...rest } = user;
      return pair ? { ...rest, certData: Buffer.from(pair.cert).toString('base64'), keyData: Buffer.from(pair.key).toString('base64') } : rest;
    }),
  });
  return copy;
}

/** What requests and watches go through: one kubeconfig's credentials and their connections. */
interface Transport {
  connections: Connections;
  watch: Watch;
  json: ReturnType<typeof jsonRequester>;
}

function openTransport(config: KubeConfig, options: KubeClientOptions): Transport {
  const connections = new Connections();
  return { connections, watch: new Watch(config), json: jsonRequester(config, options, connections) };
}

export function createKubeClient(config: KubeConfig, options: KubeClientOptions): KubeApi & CertificateSigningRequests {
  const source = options.clientCertificate;
  let transport = openTransport(source ? withClientCertificate(config, source.current()) : config, options);
  source?.onChange(() => {
    const retired = transport;
    transport = openTransport(withClientCertificate(config, source.current()), options);
    retired.connections.retire();
    options.onCertificateRotation?.();
  });
  const json: Transport['json'] = (...args) => transport.json(...args);
  /** A watch on the current transport, reconnected (ended cleanly) when that is retired. */
  const watchOn = <T>(path: string, params: Record<string, string>, call: string, handlers: WatchHandlers<T>, shape: (object: unknown) => T) =>
    watchPath(transport, path, params, call, handlers, shape);
  const segment = encodeURIComponent;
  const nodePath = (name: string) => `/api/v1/nodes/${segment(name)}`;
  const leasesPath = (namespace: string) => `/apis/coordination.k8s.io/v1/namespaces/${segment(namespace)}/leases`;
  const namespaced = (namespace: string, resource: string, name?: string) =>
    `/api/v1/namespaces/${segment(namespace)}/${resource}${name === undefined ? '' : `/${segment(name)}`}`;

  const waitForApi = limiter(options.limits?.api, options.limits?.clock);
  const waitForEvents = limiter(options.limits?.events, options.limits?.clock);
  const heartbeat = new Set(['nodes', 'nodes/status', 'leases']);

  /** A watch counted and opened once its token is there; stopping it before then opens nothing. */
  const limitedWatch = (resource: string, open: () => { stop(): void }): { stop(): void } => {
    options.counts?.add('WATCH', resource, 200);
    let stopped = false;
    let opened: { stop(): void } | undefined;
    void waitForApi().then(() => {
      if (!stopped) opened = open();
    });
    return {
      stop: () => {
        stopped = true;
        opened?.stop();
      },
    };
  };

  const sleep = sleepOn(options.limits?.clock ?? realClock);
  /**
   * One request: `name` is `<METHOD> <resource> <object>`; the first two words are what is
   * counted and limited (each retry too).
   */
  const call = async <T>(name: string, method: HttpMethod, path: string, body?: unknown, contentType?: string): Promise<T> => {
    const [verb = '', resource = ''] = name.split(' ');
    for (let retries = 0; ; retries++) {
      if (resource === 'events') await waitForEvents();
      else if (!heartbeat.has(resource)) await waitForApi();
      try {
        const result = (await json(method, path, body, contentType)) as T;
        options.counts?.add(verb, resource, verb === 'POST' ? 201 : 200);
        return result;
      } catch (err) {
        const error = apiError(name, err);
        options.counts?.add(verb, resource, error.status);
        const wait = retries < MAX_RETRIES ? retryAfterMs(err) : null;
        if (wait === null) throw error;
        await sleep(wait);
      }
    }
  };
  const { GET, POST, PUT, PATCH, DELETE } = HttpMethod;
  const { MergePatch, StrategicMergePatch } = PatchStrategy;

  return {
    createNode: (node) => call(`POST nodes ${node.metadata.name}`, POST, '/api/v1/nodes', node),
    getNode: (name) => call(`GET nodes ${name}`, GET, nodePath(name)),
    patchNode: (name, patch) => call(`PATCH nodes ${name}`, PATCH, nodePath(name), patch, MergePatch),
    patchNodeStatus: (name, patch) => call(`PATCH nodes/status ${name}`, PATCH, `${nodePath(name)}/status`, patch, StrategicMergePatch),

    getCSINode: (name) => call(`GET csinodes ${name}`, GET, csiNodePath(name)),
    createCSINode: (csiNode) => call(`POST csinodes ${csiNode.metadata.name}`, POST, CSI_NODES_PATH, { apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', ...csiNode }),
    updateCSINode: (csiNode) => call(`PUT csinodes ${csiNode.metadata.name}`, PUT, csiNodePath(csiNode.metadata.name), { apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', ...csiNode }),
    deleteCSINode: async (name) => {
      await call(`DELETE csinodes ${name}`, DELETE, csiNodePath(name));
    },

    getLease: (namespace, name) => call(`GET leases ${namespace}/${name}`, GET, `${leasesPath(namespace)}/${segment(name)}`),
    createLease: (lease) => call(`POST leases ${lease.metadata.namespace}/${lease.metadata.name}`, POST, leasesPath(lease.metadata.namespace), lease),
    updateLease: (lease) =>
      call(`PUT leases ${lease.metadata.namespace}/${lease.metadata.name}`, PUT, `${leasesPath(lease.metadata.namespace)}/${segment(lease.metadata.name)}`, lease),

    listPods: async (fieldSelector) => {
      const list = await call<{ items: Pod[]; metadata?: { resourceVersion?: string } }>(`LIST pods ${fieldSelector}`, GET, withQuery('/api/v1/pods', { fieldSelector }));
      return { items: list.items.map(nodePod), resourceVersion: list.metadata?.resourceVersion ?? '' } satisfies PodList;
    },
    watchPods: (fieldSelector, resourceVersion, handlers) =>
      limitedWatch('pods', () => watchOn('/api/v1/pods', { fieldSelector, resourceVersion }, `WATCH pods ${fieldSelector}`, handlers, (o) => nodePod(o as Pod))),
    getPod: (namespace, name) => call<Pod>(`GET pods ${namespace}/${name}`, GET, namespaced(namespace, 'pods', name)).then(nodePod),
    createPod: (pod) => call<Pod>(`POST pods ${pod.metadata.namespace}/${pod.metadata.name}`, POST, namespaced(pod.metadata.namespace, 'pods'), pod).then(nodePod),
    patchPodStatus: (namespace, name, patch) =>
      call<Pod>(`PATCH pods/status ${namespace}/${name}`, PATCH, `${namespaced(namespace, 'pods', name)}/status`, patch, StrategicMergePatch).then(nodePod),
    deletePod: async (namespace, name, deleteOptions: DeleteOptions) => {
      const body = {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        ...(deleteOptions.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: deleteOptions.gracePeriodSeconds } : {}),
        ...(deleteOptions.uid ? { preconditions: { uid: deleteOptions.uid } } : {}),
      };
      await call(`DELETE pods ${namespace}/${name}`, DELETE, namespaced(namespace, 'pods', name), body);
    },

    listServices: async () => {
      const list = await call<{ items: Service[]; metadata?: { resourceVersion?: string } }>('LIST services', GET, '/api/v1/services');
      return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    watchServices: (resourceVersion, handlers) =>
      limitedWatch('services', () => watchOn('/api/v1/services', { resourceVersion }, 'WATCH services', handlers, (o) => o as Service)),
    listRuntimeClasses: async () => {
      const list = await call<{ items: RuntimeClass[]; metadata?: { resourceVersion?: string } }>('LIST runtimeclasses', GET, RUNTIME_CLASSES_PATH);
      return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    watchRuntimeClasses: (resourceVersion, handlers) =>
      limitedWatch('runtimeclasses', () => watchOn(RUNTIME_CLASSES_PATH, { resourceVersion }, 'WATCH runtimeclasses', handlers, (o) => o as RuntimeClass)),
    getConfigMap: (namespace, name) => call(`GET configmaps ${namespace}/${name}`, GET, namespaced(namespace, 'configmaps', name)),
    getSecret: (namespace, name) => call(`GET secrets ${namespace}/${name}`, GET, namespaced(namespace, 'secrets', name)),
    getServiceAccount: (namespace, name) => call(`GET serviceaccounts ${namespace}/${name}`, GET, namespaced(namespace, 'serviceaccounts', name)),
    getPersistentVolumeClaim: (namespace, name) =>
      call(`GET persistentvolumeclaims ${namespace}/${name}`, GET, namespaced(namespace, 'persistentvolumeclaims', name)),
    getPersistentVolume: (name) => call(`GET persistentvolumes ${name}`, GET, `/api/v1/persistentvolumes/${segment(name)}`),
    patchPersistentVolumeClaimStatus: (namespace, name, patch) =>
      call(`PATCH persistentvolumeclaims/status ${namespace}/${name}`, PATCH, `${namespaced(namespace, 'persistentvolumeclaims', name)}/status`, patch, StrategicMergePatch),
    getCSIDriver: (name) => call(`GET csidrivers ${name}`, GET, `${CSI_DRIVERS_PATH}/${segment(name)}`),
    listCSIDrivers: async () => {
      const list = await call<{ items: CSIDriver[]; metadata?: { resourceVersion?: string } }>('LIST csidrivers', GET, CSI_DRIVERS_PATH);
      return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    watchCSIDrivers: (resourceVersion, handlers) =>
      limitedWatch('csidrivers', () => watchOn(CSI_DRIVERS_PATH, { resourceVersion }, 'WATCH csidrivers', handlers, (o) => o as CSIDriver)),
    getVolumeAttachment: (name) => call(`GET volumeattachments ${name}`, GET, `/apis/storage.k8s.io/v1/volumeattachments/${segment(name)}`),
    apiResources: async (groupVersion) => {
      const list = await call<{ resources?: { name: string }[] }>(`GET discovery ${groupVersion}`, GET, `/apis/${groupVersion}`);
      return (list.resources ?? []).map((resource) => resource.name);
    },
    listClusterTrustBundles: async (groupVersion) =>
      (await call<{ items: ClusterTrustBundle[] }>('LIST clustertrustbundles', GET, `/apis/${groupVersion}/clustertrustbundles`)).items,
    createServiceAccountToken: async (namespace, serviceAccount, spec) => {
      const issued = await call<{ spec: { expirationSeconds?: number }; status?: { token?: string; expirationTimestamp?: string } }>(
        `POST serviceaccounts/token ${namespace}/${serviceAccount}`,
        POST,
        `${namespaced(namespace, 'serviceaccounts', serviceAccount)}/token`,
        { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec },
      );
      return {
        token: issued.status?.token ?? '',
        expirationTimestamp: issued.status?.expirationTimestamp ?? '',
        expirationSeconds: issued.spec.expirationSeconds ?? spec.expirationSeconds,
      };
    },

    createTokenReview: async (token) => {
      const review = await call<{ status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }; error?: string } }>(
        'POST tokenreviews',
        POST,
        '/apis/authentication.k8s.io/v1/tokenreviews',
        { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      );
      const status = review.status ?? {};
      if (!status.authenticated || !status.user?.username) return { authenticated: false, ...(status.error ? { error: status.error } : {}) };
      const { username, uid, groups, extra } = status.user;
      return { authenticated: true, user: { username, groups: groups ?? [], ...(uid ? { uid } : {}), ...(extra ? { extra } : {}) } };
    },
    createSubjectAccessReview: async ({ user, verb, resource, subresource, name }) => {
      const review = await call<{ status?: { allowed?: boolean; reason?: string } }>('POST subjectaccessreviews', POST, '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: user.username,
          groups: user.groups,
          ...(user.uid ? { uid: user.uid } : {}),
          ...(user.extra ? { extra: user.extra } : {}),
          resourceAttributes: { verb, resource, subresource, name, version: 'v1' },
        },
      });
      return { allowed: review.status?.allowed === true, ...(review.status?.reason ? { reason: review.status.reason } : {}) };
    },

    createCertificateSigningRequest: (csr) => call(`POST certificatesigningrequests ${csr.metadata.name ?? csr.metadata.generateName ?? ''}`, POST, CSRS_PATH, csr),
    getCertificateSigningRequest: (name) => call(`GET certificatesigningrequests ${name}`, GET, `${CSRS_PATH}/${segment(name)}`),
    listCertificateSigningRequests: async (fieldSelector) => {
      const list = await call<{ items: CertificateSigningRequest[]; metadata?: { resourceVersion?: string } }>(`LIST certificatesigningrequests ${fieldSelector}`, GET, withQuery(CSRS_PATH, { fieldSelector }));
      return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    watchCertificateSigningRequests: (fieldSelector, resourceVersion, handlers) =>
      limitedWatch('certificatesigningrequests', () =>
        watchOn(CSRS_PATH, { fieldSelector, resourceVersion }, `WATCH certificatesigningrequests ${fieldSelector}`, handlers, (o) => o as CertificateSigningRequest),
      ),
    serverResponds: () =>
      json(GET, '/healthz').then(
        () => true,
        (err: unknown) => err instanceof ApiException && err.code > 0,
      ),

    createEvent: (event) => call<KubeEvent>(`POST events ${event.metadata.namespace}/${event.metadata.name}`, POST, namespaced(event.metadata.namespace, 'events'), event),
    patchEvent: (namespace, name, patch) => call<KubeEvent>(`PATCH events ${namespace}/${name}`, PATCH, namespaced(namespace, 'events', name), patch, MergePatch),
  };
}

/**
 * A pod as the node keeps it: with its kind (a watch's and a list's items have none), and without
 * `metadata.managedFields`, the server-side apply bookkeeping no node reads (client-go's informers
 * drop it the same way, TransformStripManagedFields): with a Deployment's pod and the node's own
 * status writes it is the largest part of the metadata, and the node holds every pod it runs.
 * Members that are null are left out, as the kubelet's decoder leaves such fields unset
 * (`lastProbeTime: null` in every condition): a node's copies of the pod then share them.
 */
function nodePod(pod: Pod): Pod {
  const { managedFields: _, ...metadata } = pod.metadata as Pod['metadata'] & { managedFields?: unknown };
  return withoutNullMembers({ apiVersion: 'v1', kind: 'Pod', ...pod, metadata }) as Pod;
}

/** One watch of `path` from `resourceVersion`, with bookmarks (passed on as their version alone); an ERROR event ends it with its status. */
function watchPath<T>(
  transport: Pick<Transport, 'watch' | 'connections'>,
  path: string,
  params: Record<string, string>,
  call: string,
  handlers: WatchHandlers<T>,
  shape: (object: unknown) => T,
): { stop(): void } {
  let ended = false;
  let controller: AbortController | undefined;
  const reconnect = () => end();
  const end = (err?: ApiError) => {
    if (ended) return;
    ended = true;
    transport.connections.watches.delete(reconnect);
    controller?.abort();
    handlers.onEnd(err);
  };
  // Its credentials retired (a new client certificate): it ends without an error, so the
  // reflector opens it again at once from its last resourceVersion, on the new credentials.
  transport.connections.watches.add(reconnect);
  transport.watch
    .watch(
      path,
      { ...params, allowWatchBookmarks: true },
      (phase: string, object: unknown) => {
        if (ended) return;
        if (phase === 'ERROR') {
          const status = (object ?? {}) as { code?: number; reason?: string; message?: string };
          end(new ApiError(status.code ?? 0, status.reason ?? '', status.message ?? 'watch error', call));
          return;
        }
        if (phase === 'BOOKMARK') {
          const version = (object as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
          if (typeof version === 'string' && version !== '') handlers.onBookmark(version);
          return;
        }
        handlers.onEvent(phase as WatchEventType, shape(object));
      },
      (err: unknown) => end(err ? apiError(call, err) : undefined),
    )
    .then(
      (c) => {
        controller = c;
        if (ended) c.abort();
      },
      (err: unknown) => end(apiError(call, err)),
    );
  return {
    stop: () => {
      ended = true;
      transport.connections.watches.delete(reconnect);
      controller?.abort();
    },
  };
}
