/**
 * The agent's HTTP endpoints: `/healthz` on the healthz port, and on the read-only port `/pods`
 * (a v1 PodList of the pods the agent manages, each with the status it would report to the API
 * server), `/healthz`, `/metrics` and `/metrics/probes` (Prometheus text; the kubelet's read-only
 * port serves its default handlers, probes' included). Handlers read snapshots; they never block
 * the actors.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Pod } from '../api/types.ts';

export interface AgentView {
  /** The managed pods with their current statuses. */
  pods(): Pod[];
  /** `null` when healthy, else why not. */
  unhealthyReason(): string | null;
  /** Runtime calls that hang, named (they hold their pods, not the node's health). */
  hangingCalls(): string[];
  metrics(): Promise<string>;
  /** `/metrics/probes`: the prober metrics alone. */
  probeMetrics(): Promise<string>;
}

export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

export const TEXT_PLAIN = 'text/plain; charset=utf-8';

export function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * `/healthz`: `ok`, or 500 and why. With `?verbose`, each check on a line as the kubelet's healthz
 * lists them (k8s.io/apiserver/pkg/server/healthz handleRootHealth), and after them the runtime
 * calls that hang: they hold their own pods only, so they do not fail the check, but an operator
 * asking why a pod is stuck finds the call here.
 */
export function healthzResponse(view: AgentView, verbose: boolean): { status: number; body: string } {
  const reason = view.unhealthyReason();
  if (!verbose) return reason === null ? { status: 200, body: 'ok' } : { status: 500, body: `[-]${reason}\nhealthz check failed` };
  const hanging = view.hangingCalls();
  const lines = ['[+]ping ok', reason === null ? '[+]syncloop ok' : `[-]syncloop failed: ${reason}`];
  if (hanging.length > 0) lines.push('runtime calls not returning (each holds its pod only):', ...hanging.map((call) => `  ${call}`));
  lines.push(reason === null ? 'healthz check passed' : 'healthz check failed');
  return { status: reason === null ? 200 : 500, body: `${lines.join('\n')}\n` };
}

export function healthzHandler(view: AgentView): RouteHandler {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://node');
    if (url.pathname !== '/healthz') return false;
    const { status, body } = healthzResponse(view, url.searchParams.has('verbose'));
    send(res, status, TEXT_PLAIN, body);
    return true;
  };
}

export function readOnlyHandler(view: AgentView): RouteHandler {
  const healthz = healthzHandler(view);
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/pods' || path === '/pods/') {
      const list = { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: view.pods() };
      send(res, 200, 'application/json', JSON.stringify(list));
      return true;
    }
    if (path === '/metrics' || path === '/metrics/probes') {
      void (path === '/metrics' ? view.metrics() : view.probeMetrics()).then(
        (text) => send(res, 200, 'text/plain; version=0.0.4; charset=utf-8', text),
        (err: unknown) => send(res, 500, 'text/plain', err instanceof Error ? err.message : String(err)),
      );
      return true;
    }
    return healthz(req, res);
  };
}

export interface ListeningServer {
  server: Server | HttpsServer;
  port: number;
  close(): Promise<void>;
}

/** Serves the handlers in order; the first that answers wins, otherwise 404. */
export async function listen(address: string, port: number, handlers: RouteHandler[]): Promise<ListeningServer> {
  const server = createServer((req, res) => {
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        send(res, 405, 'text/plain', 'method not allowed');
        return;
      }
      for (const handler of handlers) if (handler(req, res)) return;
      send(res, 404, 'text/plain', '404 page not found');
    } catch (err) {
      send(res, 500, 'text/plain', err instanceof Error ? err.message : String(err));
    }
  });
  return serve(server, address, port);
}

/** Starts `server` on `address:port` (0: any free port); closing it drops its connections too. */
export async function serve(server: Server | HttpsServer, address: string, port: number): Promise<ListeningServer> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
