/**
 * A fault-injecting HTTPS proxy between an agent and a real API server (the API-server faults of
 * issue 13). It listens on loopback with the API server's own serving certificate (its chain and
 * key from the control plane's `--cert-dir`, whose names cover 127.0.0.1), so an agent given
 * `kubeconfig()` trusts it with the CA it already has; every request goes on to the API server
 * with the agent's own credentials (its bearer token), and answers, watch streams included, come
 * back as they are. Meanwhile it can:
 *
 * - cut every open watch (its connection dropped, as a load balancer or a network does);
 * - compact: from then on a watch from an older resourceVersion is answered `410 Gone`, by default
 *   as the API server does it (the watch cache answers a version it no longer holds with 200 and
 *   one ERROR event carrying a Status of code 410, reason Expired: k8s.io/apiserver
 *   pkg/storage/cacher/cacher.go Watch, newErrWatcher; watch_cache_history.go), or as an HTTP 410
 *   for the request, which client-go's reflector treats the same (tools/cache/reflector.go:
 *   apierrors.IsResourceExpired or IsGone);
 * - fail chosen requests (method and path) with 429, 500 or 503 for a while, with the bodies the
 *   API server gives: priority and fairness answers 429 in plain text with `Retry-After`
 *   (pkg/server/filters/priority-and-fairness.go tooManyRequests), 500 and 503 are Status objects;
 * - record every pod status write that reached the API server, in the order its answers came back.
 *
 * When the API server is away (stopped, restarting), a request's connection is dropped: to the
 * agent that is an API server that does not answer.
 */
import { readFile, writeFile } from 'node:fs/promises';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { PodStatus } from '../../src/api/types.ts';

/** A pod status write that reached the API server, with what the API holds after it. */
export interface StatusWrite {
  /** When the request came and when its answer went back, on one counter of the proxy's. */
  requested: number;
  answered: number;
  namespace: string;
  name: string;
  /** The HTTP status the API server answered. */
  code: number;
  /** Of the pod written (from the answer; from the patch's UID precondition when refused). */
  uid: string;
  /** The pod's resourceVersion after the write (successful writes). */
  resourceVersion?: string;
  /** The status the agent sent. */
  sent: PodStatus;
  /** The pod's status in the API after the write (successful writes). */
  stored?: PodStatus;
}

export type FailureCode = 429 | 500 | 503;

export interface FailRule {
  /** HTTP methods, upper case. */
  methods: readonly string[];
  path: RegExp;
  code: FailureCode;
}

export interface ApiFaultProxy {
  /** `https://127.0.0.1:<port>` */
  server: string;
  /** Writes a copy of `kubeconfig` whose server is this proxy; returns its path. */
  kubeconfig(kubeconfig: string, file: string): Promise<string>;
  /** Drops the connection of every open watch; returns how many there were. */
  cutWatches(): number;
  /**
   * As if etcd had compacted up to `resourceVersion`: from now on a watch from an older version is
   * answered 410 Gone (`as`: an ERROR event, or the request's own status).
   */
  compact(resourceVersion: string, as?: 'event' | 'http'): void;
  /** Requests matching `rule` fail until the returned function is called. */
  fail(rule: FailRule): () => void;
  openWatches(): number;
  /** Pod status writes the API server answered, in the order of its answers. */
  readonly statusWrites: StatusWrite[];
  /** What the proxy did: watches cut, watches expired, requests failed. */
  readonly injected: { watchesCut: number; watchesExpired: number; requestsFailed: number };
  close(): Promise<void>;
}

const STATUS_WRITE = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/status$/;

/** The Status object the API server sends for a failure (k8s.io/apimachinery pkg/api/errors). */
const status = (code: number, reason: string, message: string) => JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

/** Answers `res` as the API server would refuse a request with `code`. */
function refuse(res: ServerResponse, code: FailureCode, url: string): void {
  if (code === 429) {
    res.writeHead(429, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '1', 'x-content-type-options': 'nosniff' });
    res.end('Too many requests, please try again later.\n');
    return;
  }
  const body =
    code === 500
      ? status(500, 'InternalError', `Internal error occurred: injected by the test proxy for ${url}`)
      : status(503, 'ServiceUnavailable', `injected by the test proxy for ${url}`);
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(body);
}

const readBody = (stream: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });

const parse = (body: Buffer): Record<string, unknown> | null => {
  try {
    return JSON.parse(body.toString()) as Record<string, unknown>;
  } catch {
    return null;
  }
};

export async function startApiFaultProxy(options: { upstream: string; certDir: string }): Promise<ApiFaultProxy> {
  const cert = await readFile(path.join(options.certDir, 'apiserver.crt'));
  const key = await readFile(path.join(options.certDir, 'apiserver.key'));
  const upstream = new URL(options.upstream);
  const agent = new https.Agent({ keepAlive: true, ca: cert });
  const watches = new Set<{ res: ServerResponse; upstream: ReturnType<typeof https.request> }>();
  const rules = new Set<FailRule>();
  let compacted: { resourceVersion: number; as: 'event' | 'http' } | null = null;
  const statusWrites: StatusWrite[] = [];
  const injected = { watchesCut: 0, watchesExpired: 0, requestsFailed: 0 };
  /** Orders the requests and answers the proxy sees. */
  let clock = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', options.upstream);
    const method = req.method ?? 'GET';
    const isWatch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
    const rule = [...rules].find((r) => r.methods.includes(method) && r.path.test(url.pathname));
    if (rule) {
      injected.requestsFailed++;
      req.resume();
      return refuse(res, rule.code, url.pathname);
    }
    const rv = url.searchParams.get('resourceVersion');
    if (isWatch && rv && rv !== '0' && compacted && Number(rv) < compacted.resourceVersion) {
      injected.watchesExpired++;
      req.resume();
      const expired = status(410, 'Expired', `too old resource version: ${rv} (${compacted.resourceVersion})`);
      if (compacted.as === 'http') {
        res.writeHead(410, { 'content-type': 'application/json' });
        res.end(expired);
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
        res.end(`{"type":"ERROR","object":${expired}}\n`);
      }
      return;
    }
    const requested = ++clock;
    const write = STATUS_WRITE.exec(url.pathname);
    const recorded = write && (method === 'PATCH' || method === 'PUT');
    const body = await readBody(req);
    const headers = { ...req.headers, host: upstream.host };
    delete headers.connection;
    // A recorded answer is read here: ask for it uncompressed.
    if (recorded) delete headers['accept-encoding'];
    const forward = https.request({ protocol: upstream.protocol, hostname: upstream.hostname, port: upstream.port, path: req.url, method, headers, agent }, (up) => {
      const responseHeaders = { ...up.headers };
      delete responseHeaders.connection;
      res.writeHead(up.statusCode ?? 502, responseHeaders);
      // The API server gone mid-answer (a watch when it stops): the agent's connection drops too.
      up.on('error', () => res.destroy());
      up.on('close', () => {
        if (!up.complete) res.destroy();
      });
      if (!recorded) {
        up.pipe(res);
        return;
      }
      void readBody(up).then(
        (answer) => {
          const sentPatch = parse(body) as { metadata?: { uid?: string }; status?: PodStatus } | null;
          const stored = up.statusCode === 200 ? (parse(answer) as { metadata?: { uid?: string; resourceVersion?: string }; status?: PodStatus } | null) : null;
          statusWrites.push({
            requested,
            answered: ++clock,
            namespace: write[1]!,
            name: write[2]!,
            code: up.statusCode ?? 0,
            uid: stored?.metadata?.uid ?? sentPatch?.metadata?.uid ?? '',
            ...(stored?.metadata?.resourceVersion ? { resourceVersion: stored.metadata.resourceVersion } : {}),
            sent: sentPatch?.status ?? {},
            ...(stored?.status ? { stored: stored.status } : {}),
          });
          res.end(answer);
        },
        () => res.destroy(),
      );
    });
    // The API server away: the agent's connection drops.
    forward.on('error', () => res.destroy());
    if (isWatch) {
      const entry = { res, upstream: forward };
      watches.add(entry);
      res.on('close', () => {
        watches.delete(entry);
        forward.destroy();
      });
    }
    forward.end(body);
  };

  const server = https.createServer({ cert, key }, (req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    server: address,
    kubeconfig: async (kubeconfig, file) => {
      const text = await readFile(kubeconfig, 'utf8');
      await writeFile(file, text.replace(/^(\s*server:\s*).*$/m, `$1${address}`));
      return file;
    },
    cutWatches: () => {
      const open = [...watches];
      for (const watch of open) {
        watch.upstream.destroy();
        watch.res.destroy();
      }
      injected.watchesCut += open.length;
      return open.length;
    },
    compact: (resourceVersion, as = 'event') => {
      compacted = { resourceVersion: Number(resourceVersion), as };
    },
    fail: (rule) => {
      rules.add(rule);
      return () => rules.delete(rule);
    },
    openWatches: () => watches.size,
    statusWrites,
    injected,
    close: async () => {
      for (const watch of watches) watch.res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
