/**
 * What each benchmark worker writes (its JSON result), as far as the driver reads it: each worker
 * checks its result against these with `satisfies`, and `run.ts` prints from them. Workers may
 * write more than is listed here; it goes into bench/results.json as is.
 */
import type { Summary } from './lib.ts';

export interface Memory {
  rssMB: number;
  heapUsedMB: number;
}

export interface Lag {
  p50: number;
  p99: number;
  max: number;
}

export interface SseCountsAt {
  bytes: number;
  batches: number;
}

export interface SimResult {
  scenario: 'sim';
  n: number;
  start: {
    startToFirstAddMs: number;
    addToRunningMs: Summary;
    timeToAllRunningMs: number;
    podsPerSecond: number;
    pullImageCalls: number;
    timeToAllActorsMs: number;
    eventLoopDelayDuringStartMs: Lag;
    cpuMsPerPod: number;
  };
  memory: { baseline: Memory; atN: Memory };
  idle: { settleS: number; windowS: number; cpuPercentOfOneCore: number; eventLoopDelayMs: Lag; relists: number; relistDurationMs: Summary | null; criCallsPerSecond: Record<string, number> } | null;
  delete: {
    removeToTerminatingMs: Summary;
    terminatingToTerminatedMs: Summary;
    terminatedToFinishedMs: Summary;
    deleteToContainersStoppedMs: Summary;
    timeToAllStoppedMs: number;
    timeToRuntimeEmptyMs: number;
  };
  visualizer: { atConnect: SseCountsAt | undefined; atAllRunning: SseCountsAt | undefined; atEnd: SseCountsAt } | null;
  statelyInspector: { atConnect: InspectorCountsAt | undefined; atAllRunning: InspectorCountsAt | undefined; atEnd: InspectorCountsAt } | null;
}

export interface InspectorCountsAt {
  bytes: number;
  messages: number;
}

export interface ActorMeasure {
  n: number;
  ms: number;
  heapMB: number;
}

export interface ActorsResult {
  scenario: 'actors';
  createActor: ActorMeasure[];
  podWorkers: ActorMeasure[];
  spawnChild: (ActorMeasure | { n: number; skipped: string })[];
}

export interface ContainerdResult {
  scenario: 'containerd';
  runtime: string;
  oneAtATime: { pods: number; addToRunningMs: Summary; writeToRunningMs: Summary; podsPerSecond: number };
  burst: {
    pods: number;
    addToRunningMs: Summary;
    timeToAllRunningMs: number;
    podsPerSecond: number;
    agentCpuMsPerPod: number;
    containerdDaemonCpuMsPerPod: number | null;
  };
  memoryAtBurst: Memory;
  idle: { cpuPercentOfOneCore: number; containerdDaemonCpuPercentOfOneCore: number | null } | null;
  delete: {
    pods: number;
    deleteToContainersStoppedMs: Summary;
    deleteToCriContainerStoppedMs: Summary;
    timeToAllStoppedMs: number;
    timeToRuntimeEmptyMs: number;
  };
}

/** Time from an input in the page to its result on screen. */
export interface InputLatency {
  syncMs: number;
  toScreenMs: number;
}

export interface Frames {
  frameGapMs: Summary;
  longTasks: number;
  longTaskMaxMs: number;
}

export interface PageResult {
  scenario: 'page';
  n: number;
  browser: string;
  start: Frames & { agentAllRunningMs: number; pageAllRunningMs: number };
  idle: {
    searchOnePod: InputLatency;
    clearSearch: InputLatency;
    phaseFilterPending: InputLatency;
    phaseFilterAll: InputLatency;
    selectPodToChartMs: number;
  };
  pageHeapMBAtN: number | null;
  stop: Frames & { agentAllForgottenMs: number; pageAllStoppedMs: number; typingDuringChurn: InputLatency[] };
}

/** A worker that could not run here (no containerd, no chromium), and says why. */
export interface Skipped {
  skipped: string;
}

/** A worker that failed (the driver writes this). */
export interface Failed {
  error: string;
}

/** bench/cluster.ts: pods created through a real API server, seen Running through a watch. */
export interface ClusterResult {
  n: number;
  /** none, or three per pod (a ConfigMap, a Secret, kube-api-access). */
  volumes: string;
  start: {
    createToRunningMs: Summary;
    /** The parts of it: the POST answered; then Running in the agent; then that status seen through the watch. */
    postMs: Summary;
    createdToRunningInAgentMs: Summary;
    runningInAgentToWatchMs: Summary;
    timeToAllRunningMs: number;
    podsPerSecond: number;
    /** This process: the agent, the simulator and the bench's client. */
    cpuMsPerPod: number;
    /** kube-apiserver and etcd (one process), the same window: what the API costs the machine the node shares. */
    controlPlaneCpuMsPerPod: number | null;
  };
  requests: { untilAllRunning: number; untilSettled: number; perPodStarted: number; byCall: Record<string, number> };
  memory: { atN: { rssMB: number; heapUsedMB: number; afterGc: boolean } };
  idle: { windowS: number; requestsPerMinute: number; byCall: Record<string, number>; cpuPercentOfOneCore: number };
}

/** The node agents bench/agent.ts compares: the built statelet and the upstream kubelet. */
export const AGENT_KINDS = ['statelet', 'kubelet'] as const;
export type AgentKind = (typeof AGENT_KINDS)[number];

/** bench/agent.ts: one run of a node agent, its own process, on containerd, node of a real API server. */
export interface AgentRun {
  agent: AgentKind;
  run: number;
  pods: number;
  /** From just before each POST to the watch event that shows the pod Ready. */
  createToReadyMs: Summary;
  podsPerSecond: number;
  agentCpuMsPerPodStart: number;
  containerdCpuMsPerPodStart: number;
  agentCpuMsPerPodDeletion: number;
  deleteToAllGoneMs: number;
  rssMBAtZeroPods: number;
  /** The mean of the samples taken each second over the idle window, and the highest. */
  rssMBAtNPods: number;
  rssMBAtNPodsHighest: number;
  idleCpuPercentOfOneCoreAtN: number;
  /** With `--count-cri`: the agent's CRI calls per pod by method, during the start burst and during the deletion. */
  criCallsPerPodStart?: Record<string, number>;
  criCallsPerPodDeletion?: Record<string, number>;
}

/** bench/agent.ts: the same burst sent straight to the runtime over CRI, no agent. */
export interface CriBurstRun {
  run: number;
  pods: number;
  /** Per pod, from its RunPodSandbox call to its StartContainer's answer. */
  startMs: Summary;
  podsPerSecond: number;
  containerdCpuMsPerPodStart: number;
  stopAndRemoveAllMs: number;
}

export interface AgentResult {
  apiServer: string;
  /** The upstream kubelet's version, when it ran. */
  kubelet?: string;
  runs: AgentRun[];
  cri?: CriBurstRun[];
}

export interface TokensResult {
  n: number;
  fetch: { wallMs: number };
  refresh: { wallMs: number; cpuMsPerToken: number; requests: number };
  write: { cpuMsPerVolume: number };
  heapBytesPerToken: number;
}

/** One way of running a command in a container (bench/exec.ts): latency and the client process's CPU. */
export interface ExecPath {
  count: number;
  p50: number;
  p99: number;
  max: number;
  cpuMsPerExec: number;
}

export interface ExecResult {
  n: number;
  /** CRI ExecSync: the command's output in the gRPC answer. */
  execSync: ExecPath;
  /** CRI Exec, then the runtime's streaming URL over SPDY. */
  rawCri: ExecPath;
  /** The agent's /exec over HTTPS with a client certificate, proxied to the runtime's URL. */
  agent: ExecPath;
}

export interface LogsResult {
  mb: number;
  rawReadMBps: number;
  wholeLogMBps: number;
  cpuMsPerMB: number;
  tail100Ms: number;
  tail100Bytes: number;
  followMBps: number;
}

/** One endpoint scraped again and again (bench/metrics.ts). */
export interface ScrapeCost {
  bytes: number;
  /** Samples in the exposition. */
  series: number;
  /** CPU per scrape less the agent's CPU at rest over the same time. */
  cpuMsPerScrape: number;
  rawCpuMsPerScrape: number;
  wallMsP50: number;
  wallMsP99: number;
}

export interface MetricsResult {
  scenario: 'metrics';
  n: number;
  scrapes: number;
  idleCpuPercentOfOneCore: number;
  metrics: ScrapeCost;
  probes: ScrapeCost;
}

/** bench/rotation.ts: a client certificate rotation under load. */
export interface RotationResult {
  pods: number;
  signingDuration: string;
  loadSeconds: number;
  renewals: number;
  replacementPods: number;
  replacementPodsNeverRunning: string[];
  statusWrites: number;
  retryPeriodMs: number;
  largestGapMs: number;
  gapMs: Summary;
  gapAcrossEachRenewalMs: (number | null)[];
  createToRunningAfterRenewalMs: Summary;
  createToRunningOtherwiseMs: Summary;
  leaseLongestIntervalMs: number;
  agentTroubleLines: number;
  agentTroubleSample: string[];
}
