/**
 * The composition root: picks the real implementations (gRPC CRI client, the embedded simulated
 * runtime for `sim://`, the file source, the HTTP servers), wires them into the actors and starts
 * the syncLoop. Nothing else in the agent decides which implementation runs.
 *
 * Stopping the agent stops its actors and servers but leaves pods running, as the kubelet does:
 * on the next start, the same static pods get the same UIDs and their containers are adopted.
 */
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Actor, type InspectionEvent, type Observer, createActor } from 'xstate';
import type { Pod } from '../api/types.ts';
import { type AgentConfig, containerGcPolicy, crashLoopBackOffPolicy } from '../cli/config.ts';
import { ImagePuller } from '../kuberuntime/images.ts';
import { killPodRuntime, removePodRuntime } from '../kuberuntime/execute.ts';
import { collectContainerGarbage } from '../kuberuntime/gc.ts';
import { readPodStatus } from '../kuberuntime/podStatus.ts';
import type { Logger } from '../log.ts';
import { createPlegMachine } from '../pleg/pleg.ts';
import { createPodMachine } from '../pod/pod.ts';
import { PodManager } from '../pod/podManager.ts';
import { createPodWorkersLogic } from '../podworkers/podWorkers.ts';
import { type SyncLoopMachine, createSyncLoopMachine } from '../kubelet/syncLoop.ts';
import { createProbeManagerLogic } from '../prober/manager.ts';
import { realClock } from '../prober/scheduler.ts';
import { CriClient } from '../runtime/cri/client.ts';
import { startSimRuntime } from '../runtime/sim/server.ts';
import { type AgentView, type ListeningServer, healthzHandler, listen, readOnlyHandler } from '../server/http.ts';
import { configuredSources, createConfigSourcesLogic } from '../sources/configSources.ts';
import { StatusManager } from '../status/manager.ts';
import { startVisualizerServer } from '../visualizer/server.ts';
import { VisualizerHub } from '../visualizer/stream.ts';
import { DEFAULT_STATELY_INSPECT_URL, startStatelyInspector } from './statelyInspector.ts';
import { renderMetrics } from '../server/metrics.ts';
import { createPodEffects } from '../pod/podEffects.ts';
import { createRelister } from '../pleg/relister.ts';

/** The PLEG is unhealthy when it has not relisted for this long (the kubelet's threshold). */
export const plegHealthThresholdMs = 3 * 60_000;
const syncTickMs = 1_000;
const housekeepingMs = 2_000;
const errorBackoffMs = 10_000;
/** Probes running at once, node-wide (the rest wait their turn in due order). */
const maxConcurrentProbes = 32;

export interface Agent {
  syncLoop: Actor<SyncLoopMachine>;
  podManager: PodManager;
  statuses: StatusManager;
  view: AgentView;
  /** Where the read-only server listens (`http://address:port`), when enabled. */
  readOnlyUrl?: string;
  healthzUrl?: string;
  /** Where the live statechart visualizer listens (`--visualizer-port`), when enabled. */
  visualizerUrl?: string;
  /** The CRI endpoint in use (the embedded runtime's socket for `sim://`). */
  runtimeEndpoint: string;
  stop(): Promise<void>;
}

export interface AgentHooks {
  /** Receives every actor inspection record (the visualizer subscribes here). */
  inspect?: Observer<InspectionEvent>;
}

/** A short socket path for the embedded runtime: unix socket paths are limited to ~107 bytes. */
function simSocketPath(rootDir: string): string {
  const preferred = path.resolve(rootDir, 'sim.sock');
  return preferred.length < 100 ? preferred : path.join(os.tmpdir(), `statelet-sim-${process.pid}.sock`);
}

export async function startAgent(config: AgentConfig, log: Logger, hooks: AgentHooks = {}): Promise<Agent> {
  await mkdir(config.rootDir, { recursive: true });
  const closers: (() => Promise<void> | void)[] = [];

  let endpoint = config.containerRuntimeEndpoint;
  if (endpoint.startsWith('sim://')) {
    const sim = await startSimRuntime({ socketPath: simSocketPath(config.rootDir) });
    closers.push(() => sim.close());
    endpoint = sim.endpoint;
    log('info', 'Started the embedded simulated runtime', { endpoint });
  }
  const runtime = new CriClient(endpoint);
  const images =
    config.imageServiceEndpoint && config.imageServiceEndpoint !== config.containerRuntimeEndpoint
      ? new CriClient(config.imageServiceEndpoint)
      : runtime;
  closers.push(() => runtime.close());
  if (images !== runtime) closers.push(() => images.close());

  // Learned from the runtime when it answers; containerd's name until then.
  let runtimeName = 'containerd';
  try {
    const version = await runtime.version({ timeoutMs: 5_000 });
    runtimeName = version.runtimeName;
    log('info', 'Connected to the container runtime', { endpoint, runtime: version.runtimeName, version: version.runtimeVersion, apiVersion: version.runtimeApiVersion });
  } catch (err) {
    // The agent keeps running: the PLEG retries every period and /healthz reports the failure.
    log('error', 'Container runtime is not reachable; will keep retrying', { endpoint, err });
  }

  const now = () => Date.now();
  const statuses = new StatusManager();
  const podManager = new PodManager();
  const runtimeDeps = {
    runtime,
    images,
    puller: new ImagePuller(images, config.serializeImagePulls ? 1 : (config.maxParallelImagePulls ?? Infinity)),
    podLogsRoot: config.podLogsDir,
    crashLoop: crashLoopBackOffPolicy(config),
    now,
    log,
  };
  const podMachine = createPodMachine(
    createPodEffects({ ...runtimeDeps, statuses, runtimeName, ...(config.nodeIp ? { hostIP: config.nodeIp.split(',')[0] } : {}) }),
  );
  const relister = createRelister(runtime, now, log);
  const gcPolicy = containerGcPolicy(config);
  const podWorkers = createPodWorkersLogic({
    podMachine,
    podManager,
    statuses,
    node: { name: config.nodeName, maxPods: config.maxPods, labels: nodeLabels(config.nodeName), os: 'linux' },
    syncFrequencyMs: config.syncFrequencyMs,
    errorBackoffMs,
    now,
    random: Math.random,
    log,
    listRuntimePodUids: async () => relister.runningPodUids(),
    killOrphanPod: async (uid) => {
      const status = await readPodStatus(runtime, uid);
      const orphan: Pod = { metadata: { name: uid, namespace: '', uid }, spec: { containers: [] } };
      await killPodRuntime(runtimeDeps, orphan, status, 1, {});
      await removePodRuntime(runtimeDeps, await readPodStatus(runtime, uid), {});
    },
    // Housekeeping runs only once every source has been seen: the kubelet's allSourcesReady.
    collectGarbage: async (isPodDeleted) => void (await collectContainerGarbage({ runtime, now, log }, gcPolicy, isPodDeleted, true)),
    containerGcPeriodMs: config.containerGcPeriodMs,
  });
  const sourceOptions = {
    nodeName: config.nodeName,
    fileCheckFrequencyMs: config.fileCheckFrequencyMs,
    log,
    ...(config.podManifestPath ? { podManifestPath: config.podManifestPath } : {}),
  };
  const syncLoopMachine = createSyncLoopMachine({
    sources: createConfigSourcesLogic(sourceOptions),
    pods: podWorkers,
    // Evented PLEG where the runtime streams container events (sim://, containerd 1.7+); relisting
    // every --pleg-relist-period otherwise (containerd 1.6 answers UNIMPLEMENTED).
    pleg: createPlegMachine(relister, config.eventedPleg ? { evented: { relistPeriodMs: config.eventedPlegRelistPeriodMs } } : {}),
    probes: createProbeManagerLogic({
      statuses,
      podManager,
      runtime,
      scheduler: {
        clock: realClock,
        random: Math.random,
        maxConcurrent: maxConcurrentProbes,
        onError: (worker, err) => log('error', 'Probe worker failed', { worker, err }),
      },
      now,
      log,
    }),
  });
  // The visualizer sees the actor system from its first record; the server starts further down.
  const visualizer = config.visualizerPort > 0 ? new VisualizerHub() : undefined;
  if (visualizer) closers.push(() => visualizer.close());
  // --inspect=stately: the same records, to Stately's inspector over a WebSocket.
  const stately = config.inspect === 'stately' ? startStatelyInspector(config.inspectUrl) : undefined;
  if (stately) {
    closers.push(() => stately.stop());
    log('info', 'Sending statechart inspection records to the Stately inspector', { url: config.inspectUrl ?? DEFAULT_STATELY_INSPECT_URL });
  }
  const inspect = [hooks.inspect, visualizer?.inspect, stately?.inspect].reduce<Observer<InspectionEvent> | undefined>(
    (all, one) => (!one ? all : all ? teeInspect(all, one) : one),
    undefined,
  );
  const syncLoop = createActor(syncLoopMachine, {
    systemId: 'syncLoop',
    input: {
      expectedSources: configuredSources(sourceOptions),
      syncTickMs,
      housekeepingMs,
      plegPeriodMs: config.plegRelistPeriodMs,
    },
    ...(inspect ? { inspect } : {}),
  });
  syncLoop.subscribe({ error: (err) => log('error', 'syncLoop failed', { err }) });
  syncLoop.start();
  closers.unshift(() => {
    syncLoop.stop();
  });

  const view: AgentView = {
    pods: () => [...podManager.all()].map((pod) => ({ ...pod, status: statuses.get(pod.metadata.uid) ?? pod.status ?? {} })),
    unhealthyReason: () => {
      const { lastRelistAt, lastRuntimeError } = syncLoop.getSnapshot().context;
      if (lastRuntimeError) return `runtime: ${lastRuntimeError}`;
      if (lastRelistAt === null) return 'pleg: pleg has yet to be successful';
      const age = now() - lastRelistAt;
      if (age > plegHealthThresholdMs) return `pleg: pleg was last seen active ${Math.round(age / 1000)}s ago; threshold is 180s`;
      return null;
    },
    metrics: () => renderMetrics({ pods: view.pods(), syncLoop: syncLoop.getSnapshot().context }),
  };

  const agent: Agent = {
    syncLoop,
    podManager,
    statuses,
    view,
    runtimeEndpoint: endpoint,
    stop: async () => {
      for (const close of closers) await close();
    },
  };
  try {
    if (config.readOnlyPort > 0) {
      const server = await listen(config.address, config.readOnlyPort, [readOnlyHandler(view)]);
      agent.readOnlyUrl = urlOf(config.address, server);
      closers.push(() => server.close());
    }
    if (config.healthzPort > 0) {
      const server = await listen(config.healthzBindAddress, config.healthzPort, [healthzHandler(view)]);
      agent.healthzUrl = urlOf(config.healthzBindAddress, server);
      closers.push(() => server.close());
    }
    if (visualizer) {
      const server = await startVisualizerServer(visualizer, config.address, config.visualizerPort);
      agent.visualizerUrl = urlOf(config.address, server);
      closers.push(() => server.close());
    }
  } catch (err) {
    await agent.stop();
    throw err;
  }
  return agent;
}

function teeInspect(first: Observer<InspectionEvent> | undefined, second: Observer<InspectionEvent>): Observer<InspectionEvent> {
  if (!first) return second;
  return {
    next: (event) => {
      first.next?.(event);
      second.next?.(event);
    },
  };
}

function urlOf(address: string, server: Pick<ListeningServer, 'port'>): string {
  const host = address.includes(':') ? `[${address}]` : address;
  return `http://${host}:${server.port}`;
}

function nodeLabels(nodeName: string): Record<string, string> {
  return { 'kubernetes.io/hostname': nodeName, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': os.arch() === 'x64' ? 'amd64' : os.arch() };
}
