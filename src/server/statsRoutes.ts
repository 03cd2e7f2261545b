/**
 * `/stats/summary` and `/metrics/resource` (pkg/kubelet/server/stats/handler.go,
 * pkg/kubelet/metrics/collectors/resource_metrics.go) on the authenticated API and, as the
 * kubelet, on the read-only port: the node's stats provider (src/stats) read at each request.
 */
import type { ServerResponse } from 'node:http';
import type { StatsProvider } from '../stats/provider.ts';
import { onlyCpuAndMemory, summaryJson } from '../stats/summary.ts';
import { type RouteHandler, TEXT_PLAIN, send } from './http.ts';

/** Answers `/stats/summary` and `/metrics/resource`; false for any other path. */
export async function serveStats(provider: StatsProvider, res: ServerResponse, pathname: string, params: URLSearchParams): Promise<boolean> {
  if (pathname === '/metrics/resource') {
    send(res, 200, 'text/plain; version=0.0.4; charset=utf-8', await provider.resourceMetrics());
    return true;
  }
  if (pathname !== '/stats/summary' && pathname !== '/stats/summary/') return false;
  try {
    send(res, 200, 'application/json', summaryJson(await provider.summary(onlyCpuAndMemory(params))));
  } catch (err) {
    // pkg/kubelet/server/stats/handler.go handleError.
    send(res, 500, TEXT_PLAIN, `Internal Error: ${err instanceof Error ? err.message : String(err)}`);
  }
  return true;
}

/** The same two paths on the read-only port (the kubelet serves its stats there too, unauthenticated). */
export function statsHandler(provider: StatsProvider): RouteHandler {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://node');
    if (!['/metrics/resource', '/stats/summary', '/stats/summary/'].includes(url.pathname)) return false;
    void serveStats(provider, res, url.pathname, url.searchParams).catch((err: unknown) => send(res, 500, TEXT_PLAIN, err instanceof Error ? err.message : String(err)));
    return true;
  };
}
