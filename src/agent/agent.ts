/**
 * The agent as a process: picks the real implementations (the gRPC CRI client, the embedded
 * simulated runtime for `sim://`, the pod sources, the HTTP servers, the inspectors), composes the
 * node's actors from them with `composeNode` (src/kubelet/composeNode.ts, the one composition the
 * tests use too) and serves what the node knows. Nothing else decides which implementation runs.
 *
 * Stopping the agent stops its actors and servers but leaves pods running, as the kubelet does:
 * on the next start, the same static pods get the same UIDs and their containers are adopted.
 */
import { dockerConfigCandidates, nodeDockerConfigSource, processDockerConfigDirs } from '../credentialprovider/nodeDockerConfig.ts';
import { readFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { Actor, InspectionEvent, Observer } from 'xstate';
import type { AgentConfig } from '../cli/config.ts';
import { type Clock, realClock } from '../clock.ts';
import { kubeletVersion } from '../cli/flags.ts';
import { featureEnabled } from '../cli/featureGates.ts';
import { configz } from '../cli/options.ts';
import type { KubeClientOptions } from '../client/kubeClient.ts';
import { type CertificateSigningRequests, type KubeApi, RequestCounts } from '../client/api.ts';
import { composeNode } from '../kubelet/composeNode.ts';
import type { ClusterDeps } from '../nodeloop/parts.ts';
import { readMachineInfo } from '../node/machineInfo.ts';
import { type MachineInfo, nodeSettings } from '../node/nodeObject.ts';
import type { SyncLoopMachine } from '../kubelet/syncLoop.ts';
import type { Logger } from '../log.ts';
import type { Node } from '../kubelet/composeNode.ts';
import { CriClient } from '../runtime/cri/client.ts';
import type { SimMemory } from '../runtime/sim/engine.ts';
import type { RegistryCredential } from '../runtime/sim/images.ts';
import { parseQuantity } from '../api/quantity.ts';
import { openNodeCgroups } from '../cm/open.ts';
import { cgroupV1Refusal, cgroupVersion } from '../cm/cgroupfs.ts';
import { hostHugePageSizes, hostMemoryFeatures, readProcSwaps, simMemoryFeatures, swapOnRefusal } from '../cm/memoryFeatures.ts';
import type { MemoryFeatures } from '../kuberuntime/resources.ts';
import { type KernelLog, hostKernelLog } from '../node/kernelLog.ts';
import { type AgentView, type ListeningServer, healthzHandler, listen, readOnlyHandler } from '../server/http.ts';
import { RequestAuth } from '../server/auth.ts';
import { openServingTls } from '../server/servingSources.ts';
import { servingCertificateMode } from '../server/servingMode.ts';
import { type ServingCertificateManager, prepareServingCertificateManager } from '../server/servingCertificateManager.ts';
import { servingTlsSettings } from '../server/servingTlsSettings.ts';
import { startKubeletServer } from '../server/kubeletServer.ts';
import { statsHandler } from '../server/statsRoutes.ts';
import { AgentMetrics } from '../server/metrics.ts';
import { instrumentedImages, instrumentedRuntime } from '../runtime/instrumented.ts';
import { type NodeDns, parseResolvConf } from '../kuberuntime/dns.ts';
import { type CredentialProviderPlugins, type PodPullContext, registerCredentialProviderPlugins } from '../credentialprovider/plugins.ts';
import type { DnsConfig } from '../runtime/types.ts';
import { configuredSources, createConfigSourcesLogic } from '../sources/configSources.ts';
import { type VisualizedNodes, startVisualizerServer } from '../visualizer/server.ts';
import { VisualizerHub } from '../visualizer/stream.ts';

export interface Agent {
  syncLoop: Actor<SyncLoopMachine>;
  podManager: Node['podManager'];
  statuses: Node['statuses'];
  view: AgentView;
  /** Where the authenticated API listens (`https://address:port`), when enabled. */
  kubeletUrl?: string;
  /** Where the read-only server listens (`http://address:port`), when enabled. */
  readOnlyUrl?: string;
  healthzUrl?: string;
  /** Where the live statechart visualizer listens (`--visualizer-port`), when enabled. */
  visualizerUrl?: string;
  /** The CRI endpoint in use (the embedded runtime's socket for `sim://`). */
  runtimeEndpoint: string;
  stop(): Promise<void>;
}

interface AgentHooks {
  /** Receives every actor inspection record (the visualizer subscribes here). */
  inspect?: Observer<InspectionEvent>;
  /**
   * The visualizer of a process with several nodes (`--nodes`): this node's statecharts are added
   * to it under the node's name (and taken out at stop) rather than served by a server of its own.
   */
  visualizerNodes?: VisualizedNodes;
  /**
   * Ends the process on a fatal condition (klog.Fatalf): the client certificate expired, or none for
   * 5 minutes, while the API server answers. Default: logs the message and exits with status 255.
   */
  fatal?(message: string): void;
  /** Aborted when the process is asked to stop during the start: a synchronous TLS bootstrap stops waiting. */
  signal?: AbortSignal;
}

/** A short socket path for the embedded runtime: unix socket paths are limited to ~107 bytes. */
export function simSocketPath(rootDir: string): string {
  const preferred = path.resolve(rootDir, 'sim.sock');
  return preferred.length < 100 ? preferred : path.join(os.tmpdir(), `statelet-sim-${process.pid}.sock`);
}

/** What sim:// takes in its endpoint's query. */
interface SimOptions {
  memoryBytes?: number;
  runtimeHandlers?: string[];
  registryAuth?: Record<string, RegistryCredential>;
  /** The CSI driver sim:// offers (`csi=<name>`), started beside it (src/simcsi). */
  csiDriver?: string;
}

/**
 * The simulated machine's settings from the endpoint's query: `sim://?memory=2Gi` gives it 2 GiB
 * of memory (for a test to fill); `handlers=runc,kata` the runtime handlers it has, its default
 * first (as containerd's configured runtimes); `registryAuth=/path/registries.json` makes the
 * registries that file names private, each taking the username and password it gives
 * (`{"registry.example.com": {"username": "…", "password": "…"}}`): the passwords stay in the
 * file, out of the endpoint that logs and /configz show. Anything else in the query is refused, named.
 */
export function simOptionsFromEndpoint(endpoint: string): SimOptions {
  const query = endpoint.includes('?') ? endpoint.slice(endpoint.indexOf('?') + 1) : '';
  const options: SimOptions = {};
  for (const [key, value] of new URLSearchParams(query)) {
    if (key === 'handlers') {
      const names = value.split(',');
      // A handler is a DNS label (RuntimeClass validation, ValidateRuntimeClassName).
      const bad = names.find((name) => !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name));
      if (bad !== undefined) throw new Error(`${endpoint}: handlers must be DNS labels separated by commas, not "${bad}"`);
      options.runtimeHandlers = names;
      continue;
    }
    if (key === 'registryAuth') {
      options.registryAuth = registryAuthFile(endpoint, value);
      continue;
    }
    if (key === 'csi') {
      // A driver name of at most 63 characters (pkg/apis/core/validation/validation.go ValidateCSIDriverName), lower-case
      // as the name of its CSIDriver object and its topology label's key prefix must be.
      if (value.length > 63 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(value)) {
        throw new Error(`${endpoint}: csi must name a CSI driver (a lower-case DNS subdomain of at most 63 characters, such as hostpath.csi.sim), not "${value}"`);
      }
      options.csiDriver = value;
      continue;
    }
    if (key !== 'memory') throw new Error(`${endpoint}: unknown setting "${key}" (sim:// takes memory=<quantity>, handlers=<name>,…, registryAuth=<file> and csi=<driver>)`);
    const bytes = parseQuantity(value);
    if (bytes instanceof Error || bytes <= 0) throw new Error(`${endpoint}: memory must be a positive quantity such as 2Gi, not "${value}"`);
    options.memoryBytes = Math.floor(bytes);
  }
  return options;
}

/** The private registries a `registryAuth` file names; a file that is not such a map is refused, named (never its contents). */
function registryAuthFile(endpoint: string, file: string): Record<string, RegistryCredential> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${endpoint}: cannot read registryAuth file ${file}: ${err instanceof SyntaxError ? 'not valid JSON' : ((err as NodeJS.ErrnoException).code ?? String(err))}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${endpoint}: registryAuth file ${file} must be a JSON object of registry host to {"username", "password"}`);
  const registries: Record<string, RegistryCredential> = {};
  for (const [host, entry] of Object.entries(parsed)) {
    const { username, password } = (typeof entry === 'object' && entry !== null ? entry : {}) as { username?: unknown; password?: unknown };
    if (typeof username !== 'string' || typeof password !== 'string' || !username || !password) {
      throw new Error(`${endpoint}: registryAuth file ${file}: the entry for "${host}" needs a username and a password (strings)`);
    }
    registries[host] = { username, password };
  }
  return registries;
}

export async function startAgent(config: AgentConfig, log: Logger, hooks: AgentHooks = {}): Promise<Agent> {
  await mkdir(config.rootDir, { recursive: true });
  // Registered and checked before anything starts; their credentials are tried after a pod's pull secrets'.
  const credentialProviders = await credentialProviderPlugins(config, log);
  const memoryFeatures = await machineMemoryFeatures(config, log);
  const closers: (() => Promise<void> | void)[] = [];

  let endpoint = config.containerRuntimeEndpoint;
  // sim:// simulates its machine's memory: the node reports it, and the eviction manager watches it.
  let simMemory: (() => SimMemory) | undefined;
  // The machine's kernel log for the OOM watcher: sim://'s simulated one, else the host's.
  let kernelLog: KernelLog = hostKernelLog;
  if (endpoint.startsWith('sim://')) {
    // Its own directory under --root-dir is its image filesystem (ImageFsInfo): on nodefs's disk, as a one-disk node's runtime is.
    // Loaded only for sim://: the simulator, and grpc-js with which it serves, stay out of a node on a real runtime.
    const { startSimRuntime } = await import('../runtime/sim/server.ts');
    const { csiDriver, ...simOptions } = simOptionsFromEndpoint(endpoint);
    const sim = await startSimRuntime({
      socketPath: simSocketPath(config.rootDir),
      stateDir: path.resolve(config.rootDir, 'sim'),
      log: (level, message, fields) => log(level, message, { runtime: 'sim://', ...fields }),
      ...simOptions,
    });
    // Pod addresses the API server accepts as endpoints, until the node has a pod CIDR of its own.
    if (!config.podCidr) await sim.engine.usePodCidr((await import('../runtime/sim/podAddresses.ts')).DEFAULT_POD_CIDR, { removeAtClose: false });
    simMemory = () => sim.engine.memory();
    kernelLog = { follow: (onLine) => sim.engine.followKernelLog(onLine) };
    closers.push(() => sim.close());
    endpoint = sim.endpoint;
    log('info', 'Started the embedded simulated runtime', { endpoint });
    if (csiDriver) {
      // The CSI driver sim:// offers: a node plugin in the plugin registry, registered by the plugin manager as any driver.
      const { startSimCsiDriver } = await import('../simcsi/server.ts');
      const csi = await startSimCsiDriver({ driverName: csiDriver, nodeName: config.nodeName, rootDir: config.rootDir, log: (level, message, fields) => log(level, message, { runtime: 'sim://', ...fields }) });
      closers.push(() => csi.close());
      log('info', 'Started the simulated CSI driver', { driver: csiDriver, endpoint: csi.socketPath, registration: csi.registrationSocketPath });
    }
  }
  const client = new CriClient(endpoint, { requestTimeoutMs: config.runtimeRequestTimeoutMs });
  const imageClient =
    config.imageServiceEndpoint && config.imageServiceEndpoint !== config.containerRuntimeEndpoint
      ? new CriClient(config.imageServiceEndpoint, { requestTimeoutMs: config.runtimeRequestTimeoutMs })
      : client;
  closers.push(() => client.close());
  if (imageClient !== client) closers.push(() => imageClient.close());
  // Every CRI call counted and timed for /metrics (kubelet_runtime_operations_*), and what the node
  // tells as it happens; what is read from the node when scraped is added once it is built.
  const metrics = new AgentMetrics(config.nodeName);
  metrics.collectProcessMetrics();
  const runtime = instrumentedRuntime(client, metrics);
  const images = instrumentedImages(imageClient, metrics);

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

  // As the kubelet at start (kubelet.go NewMainKubelet → updatePodCIDR): the runtime learns the
  // configured pod CIDR; a failure is logged, and the Node's podCIDRs are told later all the same.
  if (config.podCidr) {
    await runtime
      .updateRuntimeConfig(config.podCidr, { timeoutMs: 10_000 })
      .then(() => log('info', 'Updating Pod CIDR', { originalPodCIDR: '', newPodCIDR: config.podCidr }))
      .catch((err: unknown) => log('error', 'Pod CIDR update failed', { podCIDR: config.podCidr, err }));
  }

  // The one clock of the process: the actors, the sources, the visualizer's batches.
  const clock = realClock;
  const sourceOptions = {
    nodeName: config.nodeName,
    fileCheckFrequencyMs: config.fileCheckFrequencyMs,
    httpCheckFrequencyMs: config.httpCheckFrequencyMs,
    clock,
    log,
    ...(config.podManifestPath ? { podManifestPath: config.podManifestPath } : {}),
    ...(config.manifestUrl ? { manifestUrl: config.manifestUrl, manifestUrlHeaders: config.manifestUrlHeaders } : {}),
  };
  // The visualizer sees the actor system from its first record; the server starts further down.
  const visualizer = config.visualizerPort > 0 || hooks.visualizerNodes ? new VisualizerHub({ clock }) : undefined;
  if (visualizer) closers.push(() => visualizer.close());
  // --inspect=stately: the same records, to Stately's inspector over a WebSocket.
  // The inspector's library is loaded only when asked for.
  const stately = config.inspect === 'stately' ? (await import('./statelyInspector.ts')).startStatelyInspector(config.inspectUrl) : undefined;
  if (stately) {
    closers.push(() => stately.stop());
    log('info', 'Sending statechart inspection records to the Stately inspector', { url: stately.url });
  }
  const inspect = [hooks.inspect, visualizer?.inspect, stately?.inspect].reduce<Observer<InspectionEvent> | undefined>(
    (all, one) => (!one ? all : all ? teeInspect(all, one) : one),
    undefined,
  );
  // In a cluster the pods report the node's address as hostIP, --node-ip or the machine's own.
  if (config.kubeconfig && !config.nodeIp) config = { ...config, nodeIp: defaultInternalIp() };
  const apiRequests = new RequestCounts();
  const limits = {
    api: { qps: config.kubeApiQps, burst: config.kubeApiBurst },
    events: { qps: config.eventQps, burst: config.eventBurst },
    clock,
  };
  // The machine as the Node reports it (sim://'s memory where it simulates one), read once: the
  // registered Node's status, and what admission checks pods against until there is a Node.
  const machine = await readMachine(config.rootDir, simMemory);
  const fatal = hooks.fatal ?? ((message: string) => {
    log('error', message);
    process.exit(255);
  });
  const apiClient = config.kubeconfig ? await loadKubeApi(config, config.kubeconfig, { counts: apiRequests, limits, clock, log, fatal, metrics, ...(hooks.signal ? { signal: hooks.signal } : {}) }) : undefined;
  if (apiClient?.stop) closers.push(apiClient.stop);
  const cluster = apiClient ? clusterDeps(apiClient, machine) : undefined;
  if (cluster) log('info', 'Joining the cluster', { server: cluster.server, node: config.nodeName });
  const sources = { ...sourceOptions, ...(cluster ? { api: cluster.deps.api } : {}) };
  const runtimeConfig = await runtime.status({ verbose: true, timeoutMs: 5_000 }).catch(() => undefined);
  // The node's cgroup tree (kubepods, QoS), before any pod starts; the node keeps its pods' cgroups under it.
  const nodeCgroups = await openNodeCgroups({
    config,
    simulated: simMemory !== undefined,
    capacity: await machineCapacity(simMemory),
    hugePageSizes: memoryFeatures.hugePageSizes,
    ...(runtimeConfig?.systemdCgroup !== undefined ? { runtimeSystemdCgroup: runtimeConfig.systemdCgroup } : {}),
    log,
  });
  // What the port presents, decided before the node starts: with serverTLSBootstrap its certificate
  // manager is one of the node's loops, and its store the port's source.
  const certDir = config.certDir ?? path.join(config.rootDir, 'pki');
  const servingMode = servingCertificateMode({
    serverTLSBootstrap: config.serverTLSBootstrap,
    rotateKubeletServerCertificate: featureEnabled(config.featureGates, 'RotateKubeletServerCertificate'),
    ...(config.tlsCertFile ? { tlsCertFile: config.tlsCertFile } : {}),
    ...(config.tlsPrivateKeyFile ? { tlsPrivateKeyFile: config.tlsPrivateKeyFile } : {}),
  });
  let servingManager: ServingCertificateManager | undefined;
  if (config.port > 0 && servingMode === 'manager') {
    if (!apiClient) throw new Error('serverTLSBootstrap (--rotate-server-certificates) requests the serving certificate from the API server: it needs --kubeconfig');
    const csrApi = apiClient.api;
    servingManager = await prepareServingCertificateManager({ certDir, nodeName: config.nodeName, addresses: nodeSettings(config, kubeletVersion()).addresses, csrApi: () => csrApi, metrics, clock, log });
  }
  const clusterParts = cluster && servingManager ? { ...cluster.deps, servingCertificateManager: { logic: servingManager.logic, input: servingManager.input } } : cluster?.deps;
  const node = composeNode({
    config,
    runtime,
    images,
    runtimeName,
    clock,
    log,
    sources: { logic: createConfigSourcesLogic(sources), expected: configuredSources(sources) },
    ...(inspect ? { inspect } : {}),
    ...(clusterParts ? { cluster: clusterParts } : {}),
    machine,
    dns: await nodeDns(config, log),
    metrics,
    ...(simMemory ? { machineMemory: simMemory, imageFsSimulated: true } : {}),
    memoryFeatures,
    ...(nodeCgroups ? { nodeCgroups } : {}),
    kernelLog,
    ...(runtimeConfig ? { runtimeFeatures: { supplementalGroupsPolicy: runtimeConfig.features?.supplementalGroupsPolicy ?? false } } : {}),
    // The network state and the handlers pods are synced against until the syncLoop's own first Status answers.
    ...(runtimeConfig ? { runtimeConditions: runtimeConfig.conditions, runtimeHandlers: runtimeConfig.runtimeHandlers ?? [] } : {}),
    ...(runtimeConfig?.sandboxImage ? { sandboxImage: runtimeConfig.sandboxImage } : {}),
    // The node's keyrings after the pods' secrets, in the kubelet's order: its docker config files, then its plugins.
    nodeCredentials: [
      nodeDockerConfigSource({ candidates: dockerConfigCandidates(processDockerConfigDirs(config.rootDir)), now: () => clock.now(), log }),
      ...(credentialProviders ? [(repository: string, pod?: PodPullContext) => credentialProviders.credentialsFor(repository, pod)] : []),
    ],
  });
  const { syncLoop, podManager, statuses, stats } = node;
  const view: AgentView = {
    pods: () => [...podManager.all()].map((pod) => ({ ...pod, status: statuses.reported(pod) })),
    unhealthyReason: node.unhealthyReason,
    hangingCalls: node.hangingCalls,
    metrics: () => metrics.render(),
    probeMetrics: () => metrics.renderProbes(),
  };
  metrics.addNodeGauges({
    pods: view.pods,
    workerStages: () => Array.from(node.stages.entries(), ([, worker]) => worker.stage),
    relist: () => ({ lastRelistAt: node.facts.health().lastRelistAt, durationMs: node.facts.lastRelistDurationMs() }),
    ...(cluster ? { apiRequests } : {}),
    ...(node.recorder.stats ? { events: () => node.recorder.stats! } : {}),
    volumeStats: async () => stats.allPodVolumeStats(),
  });
  node.start();
  closers.unshift(() => node.stop());

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
    if (config.port > 0) {
      const tlsSettings = servingTlsSettings(config.tlsCipherSuites, config.tlsMinVersion, tls.DEFAULT_CIPHERS);
      for (const warning of tlsSettings.warnings) log('warn', warning.message, warning.fields);
      const serving = await openServingTls({
        mode: servingMode,
        ...(servingManager ? { manager: servingManager.source } : {}),
        ...(config.tlsCertFile ? { tlsCertFile: config.tlsCertFile } : {}),
        ...(config.tlsPrivateKeyFile ? { tlsPrivateKeyFile: config.tlsPrivateKeyFile } : {}),
        certDir,
        host: config.nodeName,
        addresses: [...(config.nodeIp?.split(',') ?? []), ...(config.address === '0.0.0.0' ? [] : [config.address])],
        ...(config.clientCaFile ? { clientCaFile: config.clientCaFile } : {}),
        reloadServingFiles: featureEnabled(config.featureGates, 'ReloadKubeletServerCertificateFile'),
        reloadClientCa: featureEnabled(config.featureGates, 'ReloadKubeletClientCAFile'),
        settings: tlsSettings.settings,
        clock,
        log,
      });
      closers.push(() => serving.close());
      const server = await startKubeletServer(config.address, config.port, {
        view,
        pods: view.pods,
        runtime,
        configz: () => configz(config),
        stats,
        auth: new RequestAuth({
          anonymous: config.anonymousAuth,
          nodeName: config.nodeName,
          now: () => clock.now(),
          ...(cluster && (config.authenticationTokenWebhook ?? true) ? { tokenReview: cluster.deps.api } : {}),
          ...(cluster && (config.authorizationMode ?? 'Webhook') === 'Webhook' ? { accessReview: cluster.deps.api } : {}),
        }),
        tls: serving.tls,
        now: () => clock.now(),
        log,
      });
      agent.kubeletUrl = urlOf(config.address === '0.0.0.0' ? '127.0.0.1' : config.address, server).replace(/^http:/, 'https:');
      closers.push(() => server.close());
    }
    if (config.readOnlyPort > 0) {
      const server = await listen(config.readOnlyAddress, config.readOnlyPort, [readOnlyHandler(view), statsHandler(stats)]);
      agent.readOnlyUrl = urlOf(config.readOnlyAddress, server);
      closers.push(() => server.close());
    }
    if (config.healthzPort > 0) {
      const server = await listen(config.healthzBindAddress, config.healthzPort, [healthzHandler(view)]);
      agent.healthzUrl = urlOf(config.healthzBindAddress, server);
      closers.push(() => server.close());
    }
    const visualized = visualizer && { hub: visualizer, logs: { pods: view.pods, runtime, now: () => clock.now() } };
    if (visualized && hooks.visualizerNodes) {
      const shown = hooks.visualizerNodes;
      shown.set(config.nodeName, visualized);
      closers.unshift(() => void shown.delete(config.nodeName));
    } else if (visualized) {
      // The visualizer, unauthenticated like the read-only port, binds where that does.
      const server = await startVisualizerServer(new Map([[config.nodeName, visualized]]), config.readOnlyAddress, config.visualizerPort);
      agent.visualizerUrl = urlOf(config.readOnlyAddress, server);
      closers.push(() => server.close());
    }
  } catch (err) {
    await agent.stop();
    throw err;
  }
  return agent;
}

/** What the node talks to the API server with: the client, and with rotateCertificates the client certificate manager it runs. */
interface ClusterClient {
  /** Also the CSR API of the serving certificate manager (under the node's current identity). */
  api: KubeApi & CertificateSigningRequests;
  server: string;
  clientCertificateManager?: ClusterDeps['clientCertificateManager'];
  stop?(): void;
}

/**
 * The API client of the node (server.go buildKubeletClientConfig): the kubeconfig as it is, or
 * after the TLS bootstrap (--bootstrap-kubeconfig); with rotateCertificates, presenting the client
 * certificate the certificate manager keeps in --cert-dir, whose expiry ends the process as the
 * kubelet's transport does. A file that cannot be read stops the agent at start. The client
 * library is loaded only here, as a standalone node (without --kubeconfig) never needs it.
 */
async function loadKubeApi(
  config: AgentConfig,
  kubeconfig: string,
  context: { counts: RequestCounts; limits: KubeClientOptions['limits']; clock: Clock; log: Logger; fatal(message: string): void; metrics: AgentMetrics; signal?: AbortSignal },
): Promise<ClusterClient> {
  const { kubeClientFromFile } = await import('../client/kubeClient.ts');
  const { clock, log } = context;
  const options: KubeClientOptions = { requestTimeoutMs: 10_000, userAgent: `statelet/${kubeletVersion()}`, counts: context.counts, ...(context.limits ? { limits: context.limits } : {}) };
  if (!config.bootstrapKubeconfig && !config.rotateCertificates) return kubeClientFromFile(kubeconfig, options);

  const certificate = await import('../certificate/index.ts');
  const store = await certificate.CertificateFileStore.open(config.certDir ?? path.join(config.rootDir, 'pki'), 'kubelet-client', () => clock.now());
  const bootstrapClient = config.bootstrapKubeconfig ? (): CertificateSigningRequests => kubeClientFromFile(config.bootstrapKubeconfig!, options).api : undefined;
  const identity = await certificate.loadClientIdentity({
    kubeconfig,
    ...(config.bootstrapKubeconfig ? { bootstrapKubeconfig: config.bootstrapKubeconfig } : {}),
    nodeName: config.nodeName,
    store,
    rotateCertificates: config.rotateCertificates,
    bootstrapApi: () => bootstrapClient!(),
    clock,
    log,
    ...(context.signal ? { signal: context.signal } : {}),
  });
  if (!config.rotateCertificates) return kubeClientFromFile(identity.kubeconfig, options);

  // A kubeconfig of its own credentials seeds an empty store: its files as the store's pair, its
  // embedded data as the bootstrap pair, which is rotated out at once (kubelet.go
  // NewKubeletClientCertificateManager; certificate_manager.go getCurrentCertificateOrBootstrap).
  let forceRotation = false;
  if (!store.current() && !identity.bootstrapKubeconfig) {
    const own = await certificate.kubeconfigClientPair(certificate.loadKubeconfig(identity.kubeconfig)).catch(() => null);
    if (own) {
      await store.update(own.cert, own.key);
      forceRotation = own.embedded;
    }
  }
  const main = kubeClientFromFile(identity.kubeconfig, {
    ...options,
    clientCertificate: store,
    onCertificateRotation: () => log('info', 'certificate rotation detected, shutting down client connections to start using new credentials'),
  });
  const bootstrap = identity.bootstrapKubeconfig ? bootstrapClient!() : undefined;
  const effects = certificate.createCertificateManagerEffects({
    signerName: certificate.CLIENT_SIGNER,
    usages: certificate.ROTATION_USAGES.client,
    // The current certificate's identity once there is one, the bootstrap credentials until then (server.go newClientsetFn).
    csrApi: () => (store.current() || !bootstrap ? main.api : bootstrap),
    store,
    clock,
    log,
    forceRotation,
    onRenewFailure: context.metrics.addClientCertificateManager(store, () => clock.now()).renewFailed,
  });
  const expiry = certificate.startExpiryCheck({ source: store, clock, log, serverResponds: () => main.api.serverResponds(), exit: context.fatal });
  log('info', 'Client rotation is on, will bootstrap in background', { certificate: store.currentPath });
  return {
    ...main,
    clientCertificateManager: { logic: certificate.certificateManagerWith(effects), input: { kind: 'client', template: certificate.clientTemplate(config.nodeName) } },
    stop: () => expiry.stop(),
  };
}

/**
 * The machine's swap and memory cgroup features, once at start: with swap on and --fail-swap-on
 * the agent refuses to start with the kubelet's message, and so it does on a cgroup v1 host with
 * --fail-cgroupv1; otherwise containers get NoSwap where the kernel can enforce it. sim://
 * simulates a machine of its own, on cgroup v2 and without swap.
 */
async function machineMemoryFeatures(config: AgentConfig, log: Logger): Promise<MemoryFeatures> {
  if (config.containerRuntimeEndpoint.startsWith('sim://')) return simMemoryFeatures(await hostHugePageSizes());
  const cgroupRefusal = cgroupV1Refusal(config.failCgroupV1, await cgroupVersion('/sys/fs/cgroup'));
  if (cgroupRefusal) throw new Error(cgroupRefusal);
  const swaps = await readProcSwaps();
  const refusal = swapOnRefusal(config.failSwapOn, swaps);
  if (refusal) throw new Error(refusal);
  const features = await hostMemoryFeatures();
  const swapOn = swapOnRefusal(true, swaps) !== null;
  if (swapOn && !features.swapController) log('warn', 'Swap is on and the kernel does not account it per cgroup: containers may swap (NoSwap cannot be enforced)', { ...features });
  else if (swapOn) log('info', 'Swap is on (--fail-swap-on=false): containers get none (NoSwap)', { ...features });
  else log('info', 'The machine\'s memory cgroups', { ...features });
  return features;
}

/** The machine as the kubepods cgroup is sized from it: cores, memory (sim://'s own), pid_max. */
async function machineCapacity(simMemory?: () => SimMemory): Promise<{ milliCpu: number; memoryBytes: number; pids?: number }> {
  const pidMax = Number((await readFile('/proc/sys/kernel/pid_max', 'utf8').catch(() => '')).trim());
  return {
    milliCpu: os.availableParallelism() * 1000,
    memoryBytes: simMemory ? simMemory().totalBytes : os.totalmem(),
    ...(pidMax > 0 ? { pids: pidMax } : {}),
  };
}

/** The machine as the Node reports it; sim:// reports the memory of the machine it simulates. */
async function readMachine(rootDir: string, simMemory?: () => SimMemory): Promise<MachineInfo> {
  const info = await readMachineInfo(rootDir);
  return simMemory ? { ...info, memoryBytes: simMemory().totalBytes } : info;
}

function clusterDeps(client: ClusterClient, machine: MachineInfo): { deps: ClusterDeps; server: string } {
  return {
    server: client.server,
    deps: { api: client.api, machine: () => Promise.resolve(machine), ...(client.clientCertificateManager ? { clientCertificateManager: client.clientCertificateManager } : {}) },
  };
}

/**
 * The credential provider plugins, registered before anything starts as the kubelet registers
 * them while building its runtime manager (kuberuntime_manager.go NewKubeGenericRuntimeManager):
 * a setup that does not register stops the start with the kubelet's message.
 */
async function credentialProviderPlugins(config: AgentConfig, log: Logger): Promise<CredentialProviderPlugins | undefined> {
  const { imageCredentialProviderConfig: configPath, imageCredentialProviderBinDir: binDir } = config;
  if (configPath === undefined && binDir === undefined) return undefined;
  try {
    const plugins = await registerCredentialProviderPlugins(configPath ?? '', binDir ?? '', { log });
    log('info', 'Registered credential provider plugins', { providers: plugins.providers.map((provider) => provider.config.name) });
    return plugins;
  } catch (err) {
    throw new Error(`Failed to register CRI auth plugins: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The node's DNS settings, with the host resolver file read once (a missing file: no host resolver). */
async function nodeDns(config: AgentConfig, log: Logger): Promise<NodeDns> {
  let host: DnsConfig | null = null;
  if (config.resolvConf !== '') {
    try {
      host = parseResolvConf(await readFile(config.resolvConf, 'utf8'));
    } catch (err) {
      log('warn', 'Could not read the resolver file; pods with dnsPolicy Default get no nameservers from it', { file: config.resolvConf, err });
      host = { servers: [], searches: [], options: [] };
    }
  }
  return { clusterDns: config.clusterDns, clusterDomain: config.clusterDomain, host };
}

/**
 * Without --node-ip the kubelet takes the address its hostname resolves to; statelet takes the
 * machine's first non-loopback IPv4 address (loopback when it has none).
 */
function defaultInternalIp(): string {
  for (const list of Object.values(os.networkInterfaces())) {
    const address = list?.find((a) => a.family === 'IPv4' && !a.internal);
    if (address) return address.address;
  }
  return '127.0.0.1';
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

