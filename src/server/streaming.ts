/**
 * `exec`, `attach` and `portForward` on the authenticated API (pkg/kubelet/server/server.go
 * getExec, getAttach, getPortForward and proxyStream): the pod and container are found, the
 * runtime is asked (CRI Exec/Attach/PortForward) for a streaming URL, and the client's upgraded
 * connection is spliced to that URL (the upgrade-aware proxy of k8s.io/apimachinery proxy): the
 * runtime's answer, 101 or an error, goes back to the client as it came, then bytes flow both
 * ways until either side closes. The agent reads none of the SPDY traffic.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import type { Pod } from '../api/types.ts';
import { Label } from '../kuberuntime/labels.ts';
import { CriError, type RuntimeService } from '../runtime/types.ts';
import { refuse } from '../runtime/streaming/upgrade.ts';

export interface StreamingSource {
  pods(): Pod[];
  runtime: Pick<RuntimeService, 'exec' | 'attach' | 'portForward' | 'listContainers' | 'listPodSandbox'>;
}

/** The path of a streaming request: `/exec|attach/{ns}/{pod}[/{uid}]/{container}` or `/portForward/{ns}/{pod}[/{uid}]`. */
type StreamingPath =
  | { kind: 'exec' | 'attach'; namespace: string; pod: string; uid: string | null; container: string }
  | { kind: 'portForward'; namespace: string; pod: string; uid: string | null };

export function parseStreamingPath(pathname: string): StreamingPath | null {
  const parts = pathname.split('/').slice(1).map(decodeURIComponent);
  const [kind, namespace, pod, ...rest] = parts;
  if (!namespace || !pod) return null;
  if (kind === 'exec' || kind === 'attach') {
    if (rest.length === 1) return { kind, namespace, pod, uid: null, container: rest[0]! };
    if (rest.length === 2) return { kind, namespace, pod, uid: rest[0]!, container: rest[1]! };
    return null;
  }
  if (kind === 'portForward' && rest.length <= 1) return { kind, namespace, pod, uid: rest[0] ?? null };
  return null;
}

/** remotecommand NewOptions: `input`, `output`, `error`, `tty` set with "1"; no stderr with a TTY. */
function streamOptions(query: URLSearchParams): { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean } | null {
  const on = (name: string) => query.get(name) === '1';
  const tty = on('tty');
  const options = { stdin: on('input'), stdout: on('output'), stderr: on('error') && !tty, tty };
  return options.stdin || options.stdout || options.stderr ? options : null;
}

/** The HTTP status a failed CRI call is answered with (kubelet/pkg/cri/streaming errors.go WriteError). */
function statusOf(error: unknown): number {
  if (!(error instanceof CriError)) return 500;
  return { NOT_FOUND: 404, INVALID_ARGUMENT: 400, RESOURCE_EXHAUSTED: 429, UNAVAILABLE: 503 }[error.code as string] ?? 500;
}

/** Serves an upgrade request on a streaming path, once authorized. */
export async function serveStreaming(source: StreamingSource, path: StreamingPath, req: IncomingMessage, socket: Duplex, head: Buffer, query: URLSearchParams): Promise<void> {
  if (req.method !== 'POST' && req.method !== 'GET') return refuse(socket, 405, 'method not allowed');
  const pod = source.pods().find((p) => p.metadata.namespace === path.namespace && p.metadata.name === path.pod && (path.uid === null || p.metadata.uid === path.uid));
  if (!pod) return refuse(socket, 404, `pod "${path.pod}" does not exist`);
  const uid = pod.metadata.uid;
  let url: string;
  try {
    if (path.kind === 'portForward') {
      const [sandbox] = await source.runtime.listPodSandbox({ state: 'SANDBOX_READY', labelSelector: { [Label.podUid]: uid } });
      if (!sandbox) return refuse(socket, 404, `pod not found ("${path.namespace}/${path.pod}")`);
      const ports = query.getAll('port').map(Number).filter((port) => Number.isInteger(port));
      url = await source.runtime.portForward({ podSandboxId: sandbox.id, port: ports });
    } else {
      const options = streamOptions(query);
      if (!options) return refuse(socket, 400, 'you must specify at least 1 of stdin, stdout, stderr');
      const containers = await source.runtime.listContainers({ labelSelector: { [Label.podUid]: uid, [Label.containerName]: path.container } });
      const container = containers.find((c) => c.state === 'CONTAINER_RUNNING') ?? containers.sort((a, b) => b.createdAt - a.createdAt)[0];
      if (!container) return refuse(socket, 404, `container not found ("${path.container}")`);
      if (path.kind === 'exec') {
        const cmd = query.getAll('command');
        url = await source.runtime.exec({ containerId: container.id, cmd, ...options });
      } else {
        url = await source.runtime.attach({ containerId: container.id, ...options });
      }
    }
  } catch (error) {
    return refuse(socket, statusOf(error), error instanceof Error ? error.message : String(error));
  }
  proxyUpgrade(req, socket, head, url);
}

/** Headers the runtime has no business seeing: the client's credentials. */
const NOT_FORWARDED = new Set(['authorization', 'cookie', 'host']);

/** Splices the client's upgrade request to `url` (upgradeaware.go tryUpgrade). */
function proxyUpgrade(req: IncomingMessage, client: Duplex, head: Buffer, url: string): void {
  const target = new URL(url);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headersDistinct)) if (value && !NOT_FORWARDED.has(name)) headers[name] = value;
  const forwardedFor = req.socket.remoteAddress;
  if (forwardedFor) headers['x-forwarded-for'] = [...(headers['x-forwarded-for'] ?? []), forwardedFor].join(', ');
  const backendRequest = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, { method: req.method, headers, agent: false });
  const fail = (message: string) => {
    if (!client.destroyed) refuse(client, 502, message);
  };
  client.once('close', () => backendRequest.destroy());
  backendRequest.once('error', (error) => fail(`error dialing backend: ${error.message}`));
  backendRequest.once('upgrade', (res, backend: Duplex, backendHead: Buffer) => {
    client.write(statusLine(res) + rawHeaders(res) + '\r\n');
    if (backendHead.length > 0) client.write(backendHead);
    if (head.length > 0) backend.write(head);
    backend.pipe(client);
    client.pipe(backend);
    backend.once('close', () => client.destroy());
    client.once('close', () => backend.destroy());
    backend.on('error', () => backend.destroy());
    client.on('error', () => client.destroy());
  });
  backendRequest.once('response', (res) => {
    // The runtime refused the upgrade: its answer goes back as it is, and the connection ends.
    client.write(statusLine(res) + rawHeaders(res, ['connection', 'transfer-encoding']) + 'Connection: close\r\n\r\n');
    res.pipe(client);
  });
  backendRequest.end();
}

function statusLine(res: IncomingMessage): string {
  return `HTTP/${res.httpVersion} ${res.statusCode} ${res.statusMessage}\r\n`;
}

function rawHeaders(res: IncomingMessage, leaveOut: string[] = []): string {
  let text = '';
  for (let i = 0; i < res.rawHeaders.length; i += 2) {
    if (!leaveOut.includes(res.rawHeaders[i]!.toLowerCase())) text += `${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}\r\n`;
  }
  return text;
}
