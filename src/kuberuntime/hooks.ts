/**
 * Container lifecycle hooks, postStart and preStop (pkg/kubelet/lifecycle/handlers.go Run;
 * pkg/kubelet/kuberuntime/kuberuntime_container.go executePreStopHook). One handler runs at a time for one container:
 *
 *   exec      `ExecSync` in the container; a non-zero exit is a failure whose message carries the
 *             command's output.
 *   httpGet   one GET to scheme://host:port/path with the handler's headers; host defaults to the
 *             pod IP (127.0.0.1 for hostNetwork pods, see `hookHost`), a named port is looked up in
 *             the container's ports. 2xx and 3xx succeed; redirects are not followed; HTTPS does not
 *             verify certificates (as the kubelet's hook client).
 *   sleep     waits `seconds`; cut short by the signal, it fails ("container terminated before sleep
 *             hook finished", as the kubelet says).
 *   tcpSocket deprecated for hooks and never run: an error naming it.
 *
 * Every handler honours the AbortSignal it is given. A failure is a `HookError` whose message is the
 * kubelet's ("Exec lifecycle hook ([…]) for Container "c" in Pod "p_ns(uid)" failed - error: …");
 * callers turn it into `PostStartHookError` or a `FailedPreStopHook` log line. The network and the
 * clock sit behind `HookIO`, so tests can drive them.
 */
import http from 'node:http';
import https from 'node:https';
import type { Container, HTTPGetAction, LifecycleHandler, Pod } from '../api/types.ts';
import type { RuntimeService } from '../runtime/types.ts';
import { NamespaceMode } from '../runtime/types.ts';
import { type Clock, type Sleep, realClock, sleepOn } from '../clock.ts';
import { errorText } from './images.ts';
import type { SandboxSummary } from '../api/runtimeView.ts';

interface HttpGetRequest {
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
}

/** The hooks' ways out of the process: a sleep and one HTTP GET (resolving with the status code). */
export interface HookIO {
  sleep: Sleep;
  httpGet(request: HttpGetRequest, signal: AbortSignal): Promise<number>;
}

/** The container a hook runs for. */
export interface HookTarget {
  runtime: RuntimeService;
  pod: Pod;
  container: Container;
  containerId: string;
  /** Where an httpGet without a host goes; '' when the pod has no address (yet). */
  podIP(): Promise<string>;
}

interface HookOptions {
  signal: AbortSignal;
  /** The hook's deadline (exec timeout, HTTP timeout); 0 or absent: none of our own. */
  timeoutSeconds?: number;
}

export class HookError extends Error {
  override name = 'HookError';
}

/** Used when an httpGet hook has no deadline (postStart): long enough for any sane handler. */
const defaultHttpTimeoutMs = 30_000;

/** The kubelet's `format.Pod`: `name_namespace(uid)`. */
function podDescription(pod: Pod): string {
  const { name, namespace, uid } = pod.metadata;
  return `${name}_${namespace}(${uid})`;
}

/** The host an httpGet hook without `host` talks to: the sandbox's IP, or loopback for hostNetwork pods. */
export function hookHost(pod: Pod | undefined, sandbox: Pick<SandboxSummary, 'state' | 'ip' | 'networkMode'> | undefined): string {
  if (pod?.spec.hostNetwork || sandbox?.networkMode === NamespaceMode.NODE) return '127.0.0.1';
  return sandbox?.state === 'SANDBOX_READY' ? sandbox.ip : '';
}

export async function runLifecycleHandler(
  io: HookIO,
  target: HookTarget,
  handler: LifecycleHandler,
  options: HookOptions,
): Promise<void> {
  const where = `for Container ${JSON.stringify(target.container.name)} in Pod ${JSON.stringify(podDescription(target.pod))}`;
  if (handler.exec) {
    const command = handler.exec.command ?? [];
    const failure = await runExec(target, command, options);
    if (failure) {
      throw new HookError(`Exec lifecycle hook ([${command.join(' ')}]) ${where} failed - error: ${failure.error}, message: ${JSON.stringify(failure.output)}`);
    }
    return;
  }
  if (handler.httpGet) {
    const error = await runHttpGet(io, target, handler.httpGet, options);
    if (error) throw new HookError(`HTTP lifecycle hook (${handler.httpGet.path ?? ''}) ${where} failed - error: ${error}`);
    return;
  }
  if (handler.sleep) {
    try {
      await io.sleep(handler.sleep.seconds * 1000, options.signal);
    } catch {
      throw new HookError(`Sleep lifecycle hook (${handler.sleep.seconds}) ${where} failed - error: container terminated before sleep hook finished`);
    }
    return;
  }
  if (handler.tcpSocket) {
    throw new HookError(`Cannot run handler: tcpSocket is deprecated for lifecycle hooks and is not supported (${where})`);
  }
  throw new HookError(`Cannot run handler: invalid handler: ${JSON.stringify(handler)}`);
}

async function runExec(
  target: HookTarget,
  command: string[],
  options: HookOptions,
): Promise<{ error: string; output: string } | undefined> {
  try {
    const result = await target.runtime.execSync(target.containerId, command, options.timeoutSeconds ?? 0, { signal: options.signal });
    if (result.exitCode === 0) return undefined;
    const output = result.stdout.toString() + result.stderr.toString();
    return { error: `command '${command.join(' ')}' exited with ${result.exitCode}: ${result.stderr.toString()}`, output };
  } catch (err) {
    return { error: errorText(err), output: '' };
  }
}

/** Returns an error text, or undefined on success. */
async function runHttpGet(io: HookIO, target: HookTarget, action: HTTPGetAction, options: HookOptions): Promise<string | undefined> {
  const host = action.host || (await target.podIP());
  if (!host) return 'failed to find networking container: the pod has no IP';
  const port = resolvePort(action.port, target.container);
  if (typeof port === 'string') return port;
  const scheme = (action.scheme ?? 'HTTP').toLowerCase();
  const path = action.path ?? '';
  const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${path.startsWith('/') ? '' : '/'}${path}`;
  const headers: Record<string, string> = { 'User-Agent': 'kube-lifecycle/statelet', Accept: '*/*' };
  for (const header of action.httpHeaders ?? []) headers[header.name] = header.value;
  const timeoutSeconds = options.timeoutSeconds ?? 0;
  try {
    const statusCode = await io.httpGet({ url, headers, timeoutMs: timeoutSeconds > 0 ? timeoutSeconds * 1000 : defaultHttpTimeoutMs }, options.signal);
    return statusCode >= 200 && statusCode < 400 ? undefined : `HTTP lifecycle hook got status code ${statusCode}`;
  } catch (err) {
    return errorText(err);
  }
}

/** A port by number, by numeric string, or by the name of one of the container's ports ('' is 80). */
export function resolvePort(port: number | string, container: Container): number | string {
  if (typeof port === 'number') return port;
  if (port === '') return 80;
  if (/^\d+$/.test(port)) return Number(port);
  const named = container.ports?.find((p) => p.name === port);
  return named ? named.containerPort : `couldn't find port: ${port} in container ${container.name}`;
}

/** One GET with Node's http/https; the body is discarded; redirects are not followed. */
export function nodeHttpGet(request: HttpGetRequest, signal: AbortSignal): Promise<number> {
  const url = new URL(request.url);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<number>((resolve, reject) => {
    const req = client.get(url, { headers: request.headers, signal, agent: false, rejectUnauthorized: false }, (res) => {
      clearTimeout(timer);
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    const timer = setTimeout(() => req.destroy(new Error(`timeout after ${request.timeoutMs}ms`)), request.timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** The hooks' I/O: HTTP from Node, sleeps on `clock`. */
export function hookIOOn(clock: Clock): HookIO {
  return { sleep: sleepOn(clock), httpGet: nodeHttpGet };
}

export const realHookIO: HookIO = hookIOOn(realClock);
