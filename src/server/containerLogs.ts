/**
 * Serving a container's log (pkg/kubelet/server/server.go getContainerLogs): the query decoded and
 * validated (logQuery.ts), the pod found among the agent's, the instance chosen (kuberuntime/logs/target.ts),
 * its file found through CRI ContainerStatus and read (kuberuntime/logs/reader.ts) — streamed to an HTTP
 * response for the authenticated API, or collected as a tail for the visualizer's page, the same
 * reader either way.
 */
import type { ServerResponse } from 'node:http';
import type { Pod } from '../api/types.ts';
import type { LogOptions } from '../kuberuntime/logs/format.ts';
import { readContainerLog } from '../kuberuntime/logs/reader.ts';
import { logTarget } from '../kuberuntime/logs/target.ts';
import type { RuntimeService } from '../runtime/types.ts';
import { parseLogQuery } from './logQuery.ts';
import { TEXT_PLAIN, send } from './http.ts';

export interface LogSource {
  /** The agent's pods, each with the status it reports. */
  pods(): Pod[];
  runtime: Pick<RuntimeService, 'containerStatus'>;
  now(): number;
}

type Found = { logPath: string; containerId: string } | { status: number; message: string };

async function findLog(source: LogSource, namespace: string, name: string, container: string, previous: boolean): Promise<Found> {
  const pod = source.pods().find((p) => p.metadata.namespace === namespace && p.metadata.name === name);
  if (!pod) return { status: 404, message: `pod "${name}" does not exist` };
  const target = logTarget(pod, pod.status, container, previous);
  if ('status' in target) return target;
  try {
    return { logPath: (await source.runtime.containerStatus(target.containerId)).logPath, containerId: target.containerId };
  } catch (err) {
    return { status: 400, message: `failed to get container status ${JSON.stringify(target.containerId)}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

function read(source: LogSource, found: { logPath: string; containerId: string }, options: LogOptions, write: (chunk: Buffer) => void, signal: AbortSignal): Promise<void> {
  return readContainerLog(found.logPath, options, (_, chunk) => write(chunk), {
    signal,
    isRunning: async () => {
      try {
        return (await source.runtime.containerStatus(found.containerId)).state === 'CONTAINER_RUNNING';
      } catch {
        return false;
      }
    },
  });
}


/** `GET /containerLogs/{namespace}/{pod}/{container}`: the log as text, streamed while `follow` lasts; a client that goes away ends the read. */
export async function streamContainerLogs(source: LogSource, res: ServerResponse, namespace: string, name: string, container: string, query: URLSearchParams): Promise<void> {
  const parsed = parseLogQuery(query, source.now());
  if ('status' in parsed) return send(res, parsed.status, 'application/json', parsed.body);
  const found = await findLog(source, namespace, name, container, parsed.previous);
  if ('status' in found) return send(res, found.status, TEXT_PLAIN, found.message);
  const client = new AbortController();
  res.on('close', () => client.abort());
  res.writeHead(200, { 'content-type': TEXT_PLAIN, 'transfer-encoding': 'chunked' });
  try {
    await read(source, found, parsed.options, (chunk) => res.write(chunk), client.signal);
  } catch (err) {
    // The file may be gone (the container removed): what was read stands; say why it ended.
    res.write(`failed to read the log of container "${container}": ${err instanceof Error ? err.message : String(err)}\n`);
  }
  res.end();
}

/** The last `lines` lines of each container of a pod (the visualizer's log tail), or why there are none. */
export async function podLogTails(source: LogSource, namespace: string, name: string, lines: number): Promise<{ container: string; text?: string; error?: string }[] | null> {
  const pod = source.pods().find((p) => p.metadata.namespace === namespace && p.metadata.name === name);
  if (!pod) return null;
  const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => c.name);
  return Promise.all(
    containers.map(async (container) => {
      const found = await findLog(source, namespace, name, container, false);
      if ('status' in found) return { container, error: found.message };
      const chunks: Buffer[] = [];
      try {
        await read(source, found, { tailLines: lines }, (chunk) => chunks.push(chunk), new AbortController().signal);
      } catch (err) {
        return { container, error: err instanceof Error ? err.message : String(err) };
      }
      return { container, text: Buffer.concat(chunks).toString('utf8') };
    }),
  );
}
