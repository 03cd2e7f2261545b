/**
 * Probe handlers: run one probe of a container once and say how it went (the kubelet's
 * pkg/kubelet/prober/prober.go runProbe and pkg/probe/{exec,http,tcp,grpc}).
 *
 *   exec       `ExecSync` in the container with the probe's timeoutSeconds; exit 0 succeeds, any
 *              other exit fails with the command's output; a timeout fails ("command timed out").
 *   httpGet    GET scheme://host:port/path (host defaults to the pod IP, a named port is looked up in
 *              the container's ports) with the probe's headers, `User-Agent: kube-probe/1.x` and
 *              `Accept: *\/*` unless given; 200–399 succeeds. Redirects are followed (at most 10) only
 *              while they stay on the same host name; a redirect elsewhere ends the probe with the
 *              3xx itself, a `Warning` ("Probe terminated redirects"), which counts as success.
 *              HTTPS does not verify certificates. The body is read up to 10 KiB (the output).
 *   tcpSocket  a TCP connection opened within the timeout succeeds; it is closed at once.
 *   grpc       `grpc.health.v1.Health/Check` with the probe's `service` on the pod IP; SERVING
 *              succeeds, any other answer or error fails.
 *
 * `Unknown` means the probe could not be run at all (e.g. the runtime refused the exec): the worker
 * discards it, as the kubelet does. No handler throws. The network sits in this module, never in
 * the machines or the decisions; the runtime comes in as a `RuntimeService`.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { GrpcChannel, GrpcStatusError, type GrpcMethod } from '../runtime/cri/channel.ts';
import type { Container, GRPCAction, HTTPGetAction, Pod, Probe, TCPSocketAction } from '../api/types.ts';
import { errorText } from '../kuberuntime/images.ts';
import { resolvePort } from '../kuberuntime/hooks.ts';
import { CriError, type RuntimeService } from '../runtime/types.ts';

/** The kubelet's probe results; Warning counts as Success, Unknown is discarded. */
export type ProbeOutcomeResult = 'Success' | 'Warning' | 'Failure' | 'Unknown';

export interface ProbeOutcome {
  result: ProbeOutcomeResult;
  /** The probe's output or the reason it failed (for the `Unhealthy` event). */
  output: string;
}

/** The container a probe runs against. */
export interface ProbeTarget {
  runtime: RuntimeService;
  pod: Pod;
  container: Container;
  containerId: string;
  /** The pod's IP as the status reports it; '' when it has none (yet). */
  podIP: string;
}

export const probeUserAgent = 'kube-probe/1.33';
/** The kubelet keeps at most this much of a probe's output. */
const maxOutputBytes = 10 * 1024;
const maxRedirects = 10;

const defaultTimeoutSeconds = 1;

function timeoutSecondsOf(probe: Probe): number {
  return probe.timeoutSeconds && probe.timeoutSeconds > 0 ? probe.timeoutSeconds : defaultTimeoutSeconds;
}

export async function runProbe(probe: Probe, target: ProbeTarget, signal: AbortSignal): Promise<ProbeOutcome> {
  const timeoutMs = timeoutSecondsOf(probe) * 1000;
  try {
    if (probe.exec) return await execProbe(target, probe.exec.command ?? [], timeoutSecondsOf(probe), signal);
    if (probe.httpGet) {
      const url = httpProbeUrl(probe.httpGet, target);
      if (!(url instanceof URL)) return url;
      return await httpProbe(url, httpProbeHeaders(probe.httpGet), timeoutMs, signal);
    }
    if (probe.tcpSocket) {
      const address = tcpAddress(probe.tcpSocket, target);
      if ('result' in address) return address;
      return await tcpProbe(address.host, address.port, timeoutMs, signal);
    }
    if (probe.grpc) {
      const host = target.podIP;
      if (!host) return { result: 'Unknown', output: 'the pod has no IP' };
      return await grpcProbe(host, probe.grpc, timeoutMs, signal);
    }
  } catch (err) {
    return { result: 'Unknown', output: errorText(err) };
  }
  return { result: 'Unknown', output: 'missing probe handler' };
}

// ------------------------------------------------------------------------------------------------ exec

async function execProbe(target: ProbeTarget, command: string[], timeoutSeconds: number, signal: AbortSignal): Promise<ProbeOutcome> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new Error('command timed out')), timeoutSeconds * 1000 + 1000);
  const onAbort = () => timeout.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await target.runtime.execSync(target.containerId, command, timeoutSeconds, { signal: timeout.signal });
    const output = truncate(result.stdout.toString() + result.stderr.toString());
    if (result.exitCode === 0) return { result: 'Success', output };
    return { result: 'Failure', output: output || `command ${JSON.stringify(command.join(' '))} exited with ${result.exitCode}` };
  } catch (err) {
    if (signal.aborted) return { result: 'Unknown', output: 'probe cancelled' };
    if (timeout.signal.aborted || (err instanceof CriError && err.code === 'DEADLINE_EXCEEDED')) {
      return { result: 'Failure', output: `command ${JSON.stringify(command.join(' '))} timed out` };
    }
    return { result: 'Unknown', output: errorText(err) };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}

// ------------------------------------------------------------------------------------------------ httpGet

/** The URL an httpGet probe requests, or a Failure/Unknown outcome when it cannot be built. */
function httpProbeUrl(action: HTTPGetAction, target: Pick<ProbeTarget, 'container' | 'podIP'>): URL | ProbeOutcome {
  const host = action.host || target.podIP;
  if (!host) return { result: 'Unknown', output: 'the pod has no IP' };
  const port = resolvePort(action.port, target.container);
  if (typeof port === 'string') return { result: 'Unknown', output: port };
  const scheme = (action.scheme ?? 'HTTP').toLowerCase();
  const path = action.path ?? '';
  return new URL(`${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${path.startsWith('/') ? '' : '/'}${path}`);
}

function httpProbeHeaders(action: HTTPGetAction): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const header of action.httpHeaders ?? []) headers[header.name.toLowerCase()] = header.value;
  headers['user-agent'] ??= probeUserAgent;
  headers['accept'] ??= '*/*';
  return headers;
}

interface HttpAnswer {
  status: number;
  location: string | undefined;
  body: string;
}

/** One GET, keep-alive off, certificates not verified; resolves with the status, Location and up to 10 KiB of body. */
function getOnce(url: URL, headers: Record<string, string>, signal: AbortSignal): Promise<HttpAnswer> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<HttpAnswer>((resolve, reject) => {
    const req = client.get(url, { headers, signal, agent: false, rejectUnauthorized: false }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = () =>
        resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks).toString('utf8') });
      res.on('data', (chunk: Buffer) => {
        if (size >= maxOutputBytes) return;
        chunks.push(chunk.subarray(0, maxOutputBytes - size));
        size += chunk.length;
        if (size >= maxOutputBytes) {
          res.destroy();
          finish();
        }
      });
      res.on('end', finish);
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

async function httpProbe(url: URL, headers: Record<string, string>, timeoutMs: number, signal: AbortSignal): Promise<ProbeOutcome> {
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
  const firstHost = url.hostname;
  let current = url;
  try {
    for (let redirects = 0; ; redirects++) {
      const answer = await getOnce(current, headers, deadline);
      const isRedirect = answer.status >= 300 && answer.status < 400 && answer.location !== undefined;
      if (isRedirect) {
        const next = new URL(answer.location ?? '', current);
        if (next.hostname === firstHost && (next.protocol === 'http:' || next.protocol === 'https:')) {
          if (redirects + 1 >= maxRedirects) return { result: 'Failure', output: `Get "${next}": stopped after ${maxRedirects} redirects` };
          current = next;
          continue;
        }
      }
      if (answer.status >= 200 && answer.status < 400) {
        if (answer.status >= 300) return { result: 'Warning', output: `Probe terminated redirects, Response body: ${answer.body}` };
        return { result: 'Success', output: answer.body };
      }
      return { result: 'Failure', output: `HTTP probe failed with statuscode: ${answer.status}` };
    }
  } catch (err) {
    if (signal.aborted) return { result: 'Unknown', output: 'probe cancelled' };
    if (deadline.aborted) return { result: 'Failure', output: `Get "${current}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)` };
    return { result: 'Failure', output: `Get "${current}": ${errorText(err)}` };
  }
}

// ------------------------------------------------------------------------------------------------ tcpSocket

function tcpAddress(action: TCPSocketAction, target: ProbeTarget): { host: string; port: number } | ProbeOutcome {
  const host = action.host || target.podIP;
  if (!host) return { result: 'Unknown', output: 'the pod has no IP' };
  const port = resolvePort(action.port, target.container);
  if (typeof port === 'string') return { result: 'Unknown', output: port };
  return { host, port };
}

function tcpProbe(host: string, port: number, timeoutMs: number, signal: AbortSignal): Promise<ProbeOutcome> {
  return new Promise<ProbeOutcome>((resolve) => {
    const socket = net.connect({ host, port });
    const done = (outcome: ProbeOutcome) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(outcome);
    };
    const onAbort = () => done({ result: 'Unknown', output: 'probe cancelled' });
    const timer = setTimeout(() => done({ result: 'Failure', output: `dial tcp ${host}:${port}: i/o timeout` }), timeoutMs);
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => done({ result: 'Success', output: '' }));
    socket.once('error', (err) => done({ result: 'Failure', output: `dial tcp ${host}:${port}: ${errorText(err)}` }));
  });
}

// ------------------------------------------------------------------------------------------------ grpc

/** grpc.health.v1.HealthCheckResponse.ServingStatus */
const servingStatuses = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'] as const;

/**
 * HealthCheckRequest { string service = 1; } in protobuf wire form. An empty service is still
 * written out (as an empty field 1): grpc-js does not deliver a zero-length message to a server.
 */
export function encodeHealthCheckRequest(service: string): Buffer {
  const bytes = Buffer.from(service, 'utf8');
  return Buffer.concat([Buffer.from([0x0a]), encodeVarint(bytes.length), bytes]);
}

/** HealthCheckResponse { ServingStatus status = 1; }: the status number (0 when absent). */
export function decodeHealthCheckResponse(buffer: Buffer): number {
  let offset = 0;
  let status = 0;
  while (offset < buffer.length) {
    const [key, afterKey] = decodeVarint(buffer, offset);
    const wireType = key & 7;
    offset = afterKey;
    if (wireType === 0) {
      const [value, next] = decodeVarint(buffer, offset);
      if (key >>> 3 === 1) status = value;
      offset = next;
    } else if (wireType === 2) {
      const [length, next] = decodeVarint(buffer, offset);
      offset = next + length;
    } else if (wireType === 5) offset += 4;
    else if (wireType === 1) offset += 8;
    else break;
  }
  return status;
}

function encodeVarint(value: number): Buffer {
  const bytes: number[] = [];
  let v = value;
  while (v >= 0x80) {
    bytes.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  bytes.push(v);
  return Buffer.from(bytes);
}

function decodeVarint(buffer: Buffer, start: number): [number, number] {
  let value = 0;
  let shift = 0;
  let offset = start;
  while (offset < buffer.length) {
    const byte = buffer[offset++] ?? 0;
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) break;
    shift += 7;
  }
  return [value, offset];
}

/** grpc.health.v1.Health/Check, its request the service's name. */
const HEALTH_CHECK: GrpcMethod<number, string> = { path: '/grpc.health.v1.Health/Check', serialize: encodeHealthCheckRequest, deserialize: decodeHealthCheckResponse };

/** A connection of its own per probe, as the kubelet dials one (pkg/probe/grpc/grpc.go Probe). */
async function grpcProbe(host: string, action: GRPCAction, timeoutMs: number, signal: AbortSignal): Promise<ProbeOutcome> {
  const channel = new GrpcChannel({ host, port: action.port }, { maxReceiveMessageBytes: 4 * 1024 * 1024 });
  try {
    const status = await channel.unary(HEALTH_CHECK, action.service ?? '', { timeoutMs, signal });
    const name = servingStatuses[status] ?? String(status);
    return name === 'SERVING' ? { result: 'Success', output: '' } : { result: 'Failure', output: `service unhealthy (responded with "${name}")` };
  } catch (error) {
    if (signal.aborted) return { result: 'Unknown', output: 'probe cancelled' };
    if (!(error instanceof GrpcStatusError)) throw error;
    if (error.code === 'UNIMPLEMENTED') return { result: 'Failure', output: `this server doesn't implement the grpc health protocol (grpc.health.v1.Health): ${error.details}` };
    if (error.code === 'DEADLINE_EXCEEDED') return { result: 'Failure', output: `timeout: health rpc did not complete within ${timeoutMs / 1000}s` };
    return { result: 'Failure', output: `error: health rpc probe failed: ${error.details}` };
  } finally {
    channel.close();
  }
}

function truncate(text: string): string {
  return text.length > maxOutputBytes ? text.slice(0, maxOutputBytes) : text;
}
