/**
 * The visualizer's HTTP server (`--visualizer-port`):
 *   GET /, /main.js    the page built into `visualizer/dist/` (`npm run build:visualizer`), or a
 *                      note saying to build it, linking to the API;
 *   GET /api/snapshot  the current picture as JSON (`WirePicture`);
 *   GET /api/stream    Server-Sent Events: first `event: picture` (a `WirePicture`), then one
 *                      `event: batch` (a `WireRecord[]`) per hub flush, at most every 100 ms;
 *                      a comment line every 15 s keeps proxies from closing the connection;
 *   GET /api/history?actor=<actorId>
 *                      the newest events and steps of one live actor (`WireRecord[]`, oldest
 *                      first): what a page that selects the actor shows of its past;
 *   GET /api/logs?namespace=<ns>&name=<pod>
 *                      the last 100 lines of each of the pod's containers, read as `kubectl
 *                      logs` reads them (src/server/containerLogs.ts), or why there are none;
 *   GET /api/nodes     the names of the nodes it shows (one, or each of `statelet --nodes`).
 * Each /api/ path takes `node=<name>` to pick one node (the first when absent; 404 for a node it
 * does not show), so one server serves every node of a process and the page picks.
 * Serializing happens here, once per batch for all clients, never on the agent's path.
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { packageFile } from '../packageFiles.ts';
import { type ListeningServer, type RouteHandler, listen } from '../server/http.ts';
import { type LogSource, podLogTails } from '../server/containerLogs.ts';
import type { VisualizerHub } from './stream.ts';

const reconnectMs = 1_000;
const keepAliveMs = 15_000;

/** The built page (`npm run build:visualizer`). */
const pageDir = `${packageFile('visualizer/dist')}/`;

/** The files of the built page, by URL path, with their content types. */
const pageFiles: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/main.js': { file: 'main.js', type: 'text/javascript; charset=utf-8' },
};

const notBuiltPage = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>statelet visualizer</title></head>
<body>
<h1>statelet — live statechart visualizer</h1>
<p>The page is not built: run <code>npm run build:visualizer</code> (<code>npm start</code> and <code>npm test</code> do it first).
The data is served anyway:</p>
<ul>
<li><a href="/api/stream">/api/stream</a> — Server-Sent Events: <code>picture</code> once, then <code>batch</code> (at most every 100 ms)</li>
<li><a href="/api/snapshot">/api/snapshot</a> — the current picture as JSON</li>
<li><code>/api/history?actor=&lt;actorId&gt;</code> — the newest events and steps of one actor</li>
</ul>
</body>
</html>
`;

/** Serves a file of the built page; read per request (the page is small and rarely loaded). */
function sendPageFile(res: ServerResponse, page: { file: string; type: string }, dir: string): void {
  readFile(path.join(dir, page.file)).then(
    (body) => {
      res.writeHead(200, { 'content-type': page.type, 'content-length': body.length, 'cache-control': 'no-cache' });
      res.end(body);
    },
    () => {
      if (page.file === 'index.html') sendText(res, 'text/html; charset=utf-8', notBuiltPage);
      else {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('visualizer page not built\n');
      }
    },
  );
}

function sendText(res: ServerResponse, contentType: string, body: string): void {
  res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
}

function sendStatus(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(message) });
  res.end(message);
}

function sseMessage(event: string, data: unknown): string {
  // JSON has no raw newlines, so one `data:` line per message.
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Streams, clients connected to /api/stream share one serialization per batch. */
class SseClients {
  private readonly clients = new Set<ServerResponse>();
  private unsubscribe: (() => void) | null = null;
  private keepAlive: NodeJS.Timeout | null = null;

  constructor(private readonly hub: VisualizerHub) {}

  add(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    // A page whose agent restarts tries again every second (browsers default to ~3 s).
    res.write(`retry: ${reconnectMs}\n\n`);
    res.write(sseMessage('picture', this.hub.picture()));
    this.clients.add(res);
    if (!this.unsubscribe) {
      this.unsubscribe = this.hub.subscribe((batch) => this.broadcast(sseMessage('batch', batch)));
      this.keepAlive = setInterval(() => this.broadcast(': keep-alive\n\n'), keepAliveMs);
      this.keepAlive.unref();
    }
    const remove = () => this.remove(res);
    req.on('close', remove);
    res.on('close', remove);
    res.on('error', remove);
  }

  close(): void {
    for (const res of this.clients) res.end();
    this.clients.clear();
    this.stop();
  }

  private broadcast(text: string): void {
    for (const res of this.clients) {
      // A client that cannot keep up is let go rather than buffered without bound.
      if (res.writableLength > 8 * 1024 * 1024) {
        res.destroy();
        this.remove(res);
        continue;
      }
      res.write(text);
    }
  }

  private remove(res: ServerResponse): void {
    if (!this.clients.delete(res)) return;
    if (this.clients.size === 0) this.stop();
  }

  private stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.keepAlive = null;
  }
}

/** Lines of each container the page's log tail shows. */
const LOG_TAIL_LINES = 100;

/** A node the visualizer shows: its actors' hub, and where its pods' logs are read. */
export interface VisualizedNode {
  hub: VisualizerHub;
  logs?: LogSource;
}

/** The nodes shown, by name, in the order the page lists them; nodes may come and go. */
export type VisualizedNodes = Map<string, VisualizedNode>;

function visualizerHandler(nodes: VisualizedNodes, streams: Map<VisualizerHub, SseClients>, dir = pageDir): RouteHandler {
  return (req, res) => {
    const urlPath = (req.url ?? '/').split('?')[0] ?? '/';
    const page = pageFiles[urlPath];
    if (page && Object.hasOwn(pageFiles, urlPath)) {
      sendPageFile(res, page, dir);
      return true;
    }
    if (!urlPath.startsWith('/api/')) return false;
    if (urlPath === '/api/nodes') {
      sendText(res, 'application/json', JSON.stringify([...nodes.keys()]));
      return true;
    }
    const wanted = new URL(req.url ?? '/', 'http://localhost').searchParams.get('node');
    const node = wanted === null ? nodes.values().next().value : nodes.get(wanted);
    if (!node) {
      sendStatus(res, 404, wanted === null ? 'no node is shown yet' : `node "${wanted}" is not shown here`);
      return true;
    }
    const { hub, logs } = node;
    switch (urlPath) {
      case '/api/snapshot':
        sendText(res, 'application/json', JSON.stringify(hub.picture()));
        return true;
      case '/api/stream': {
        let sse = streams.get(hub);
        if (!sse) streams.set(hub, (sse = new SseClients(hub)));
        sse.add(req, res);
        return true;
      }
      case '/api/history': {
        const actor = new URL(req.url ?? '/', 'http://localhost').searchParams.get('actor') ?? '';
        sendText(res, 'application/json', JSON.stringify(hub.history(actor)));
        return true;
      }
      case '/api/logs': {
        if (!logs) return false;
        const query = new URL(req.url ?? '/', 'http://localhost').searchParams;
        void podLogTails(logs, query.get('namespace') ?? '', query.get('name') ?? '', LOG_TAIL_LINES).then(
          (tails) => (tails ? sendText(res, 'application/json', JSON.stringify(tails)) : sendStatus(res, 404, `pod "${query.get('name') ?? ''}" does not exist`)),
          (err: unknown) => sendStatus(res, 500, err instanceof Error ? err.message : String(err)),
        );
        return true;
      }
      default:
        return false;
    }
  };
}

export interface VisualizerServer {
  port: number;
  close(): Promise<void>;
}

/** Serves the nodes' hubs on `address:port` (0: any free port). */
export async function startVisualizerServer(nodes: VisualizedNodes, address: string, port: number): Promise<VisualizerServer> {
  const streams = new Map<VisualizerHub, SseClients>();
  const server: ListeningServer = await listen(address, port, [visualizerHandler(nodes, streams, pageDir)]);
  return {
    port: server.port,
    close: async () => {
      for (const sse of streams.values()) sse.close();
      await server.close();
    },
  };
}
