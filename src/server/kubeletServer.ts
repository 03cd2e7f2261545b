/**
 * The agent's authenticated API on `--port` (10250), what the API server and kubectl reach the
 * node through (pkg/kubelet/server/server.go): HTTPS with the serving certificate and client CA of
 * servingTls.ts (swapped live as they change), client certificates asked for (checked against
 * `--client-ca-file`), every
 * request authenticated and authorized (auth.ts) before its handler runs:
 *   `/healthz`, `/pods` (the PodList of `/pods` on the read-only port), `/metrics`, `/metrics/probes`,
 *   `/runningpods/` (the pods the runtime runs), `/configz` (the configuration in effect),
 *   `/stats/summary` and `/metrics/resource` (the node stats provider, src/stats: CPU and memory from CRI stats), and
 *   `/containerLogs/{namespace}/{pod}/{container}` (logQuery.ts, kuberuntime/logs/target.ts and reader.ts): the
 *   container's log as text, streamed while `follow` lasts; a client that goes away ends the read.
 */
import { type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../log.ts';
import { type AuthOutcome, type RequestAuth, certificateUser } from './auth.ts';
import { type StreamingSource, parseStreamingPath, serveStreaming } from './streaming.ts';
import { refuse } from '../runtime/streaming/upgrade.ts';
import type { Duplex } from 'node:stream';
import { type ServingTls, keepServingTlsCurrent, secureContextOptions } from './servingTls.ts';
import { type AgentView, type ListeningServer, TEXT_PLAIN, healthzResponse, send, serve } from './http.ts';
import { type LogSource, streamContainerLogs } from './containerLogs.ts';
import type { StatsProvider } from '../stats/provider.ts';
import { serveStats } from './statsRoutes.ts';
import type { Container } from '../runtime/types.ts';
import { Label } from '../kuberuntime/labels.ts';

/**
 * The pods the runtime runs, as `/runningpods/` lists them (the kubelet's runtime pods turned
 * into API pods): identity and running containers' names and images, nothing else.
 */
export function runningPods(containers: readonly Container[]): object[] {
  const pods = new Map<string, { metadata: { name: string; namespace: string; uid: string }; spec: { containers: { name: string; image: string }[] } }>();
  for (const c of containers) {
    const uid = c.labels[Label.podUid];
    if (!uid) continue;
    let pod = pods.get(uid);
    if (!pod) {
      pod = { metadata: { name: c.labels[Label.podName] ?? '', namespace: c.labels[Label.podNamespace] ?? '', uid }, spec: { containers: [] } };
      pods.set(uid, pod);
    }
    pod.spec.containers.push({ name: c.labels[Label.containerName] ?? c.metadata.name, image: c.image });
  }
  return [...pods.values()];
}

export interface KubeletServerDeps extends LogSource {
  view: AgentView;
  runtime: LogSource['runtime'] & StreamingSource['runtime'];
  /** The configuration in effect, as a KubeletConfiguration (`/configz`). */
  configz(): Record<string, unknown>;
  /** `/stats/summary` and `/metrics/resource`; without it those paths are 404 (a server for logs alone). */
  stats?: StatsProvider;
  auth: RequestAuth;
  /** The serving certificate, the CA of accepted client certificates (--client-ca-file), the cipher suites and lowest version. */
  tls: ServingTls;
  log: Logger;
}


export async function startKubeletServer(address: string, port: number, deps: KubeletServerDeps): Promise<ListeningServer> {
  const server = createServer(
    { ...secureContextOptions(deps.tls), requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      void handle(deps, req, res).catch((err: unknown) => {
        deps.log('error', 'The authenticated API failed a request', { path: req.url, err });
        if (!res.headersSent) send(res, 500, TEXT_PLAIN, err instanceof Error ? err.message : String(err));
        else res.destroy();
      });
    },
  );
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    void upgrade(deps, req, socket, head).catch((err: unknown) => {
      deps.log('error', 'The authenticated API failed a streaming request', { path: req.url, err });
      if (!socket.destroyed) refuse(socket, 500, err instanceof Error ? err.message : String(err));
    });
  });
  // Read and write timeouts of hours (a followed log), as the kubelet's.
  server.requestTimeout = 4 * 3_600_000;
  server.headersTimeout = 60_000;
  const stopSwapping = keepServingTlsCurrent(server, deps.tls, deps.log);
  const listening = await serve(server, address, port).catch((err: unknown) => {
    stopSwapping();
    throw err;
  });
  return {
    ...listening,
    close: async () => {
      stopSwapping();
      await listening.close();
    },
  };
}

/** Who is asking, and whether they may: the user, or the status and message to refuse with. */
async function admit(deps: KubeletServerDeps, req: IncomingMessage, url: URL): Promise<AuthOutcome> {
  const socket = req.socket as TLSSocket;
  const certificate = deps.tls.clientCA && socket.authorized ? certificateUser(socket.getPeerCertificate().subject as unknown as Record<string, string>) : null;
  const who = await deps.auth.authenticate(certificate, req.headers.authorization);
  if (!('user' in who)) return who;
  return deps.auth.authorize(who.user, req.method ?? 'GET', url.pathname);
}

/** An upgrade request: exec, attach or portForward, proxied to the runtime's streaming server. */
async function upgrade(deps: KubeletServerDeps, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
  const url = new URL(req.url ?? '/', 'https://node');
  const allowed = await admit(deps, req, url);
  if (!('user' in allowed)) return refuse(socket, allowed.status, allowed.message);
  const path = parseStreamingPath(url.pathname);
  if (!path) return refuse(socket, 404, '404 page not found');
  await serveStreaming(deps, path, req, socket, head, url.searchParams);
}

async function handle(deps: KubeletServerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'https://node');
  const allowed = await admit(deps, req, url);
  if (!('user' in allowed)) return send(res, allowed.status, TEXT_PLAIN, allowed.message);
  if (parseStreamingPath(url.pathname)) return send(res, 400, TEXT_PLAIN, 'Upgrade request required');
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, TEXT_PLAIN, 'method not allowed');

  const { pathname } = url;
  if (pathname === '/healthz') {
    const { status, body } = healthzResponse(deps.view, url.searchParams.has('verbose'));
    return send(res, status, TEXT_PLAIN, body);
  }
  if (pathname === '/pods' || pathname === '/pods/') {
    return send(res, 200, 'application/json', JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: deps.view.pods() }));
  }
  if (pathname === '/metrics') return send(res, 200, 'text/plain; version=0.0.4; charset=utf-8', await deps.view.metrics());
  if (pathname === '/metrics/probes') return send(res, 200, 'text/plain; version=0.0.4; charset=utf-8', await deps.view.probeMetrics());
  if (pathname === '/configz') return send(res, 200, 'application/json', JSON.stringify({ kubeletconfig: deps.configz() }));
  if (deps.stats && (await serveStats(deps.stats, res, pathname, url.searchParams))) return;
  if (pathname === '/runningpods/' || pathname === '/runningpods') {
    const items = runningPods(await deps.runtime.listContainers({ state: 'CONTAINER_RUNNING' }));
    return send(res, 200, 'application/json', JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items }));
  }
  const logs = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(pathname);
  if (logs) return streamContainerLogs(deps, res, decodeURIComponent(logs[1]!), decodeURIComponent(logs[2]!), decodeURIComponent(logs[3]!), url.searchParams);
  send(res, 404, TEXT_PLAIN, '404 page not found');
}

