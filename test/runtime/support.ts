/** Helpers shared by the runtime tests: sim:// over gRPC, config builders, error capture and event reading. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '../../src/runtime/cri/client.ts';
import type { CriArgs, CriMethod } from '../../src/runtime/criCalls.ts';
import { startSimRuntime, type SimRuntime, type SimRuntimeServerOptions } from '../../src/runtime/sim/server.ts';
import { ManualClock } from '../support/manualClock.ts';
import {
  CriError,
  NamespaceMode,
  type ContainerConfig,
  type ContainerEvent,
  type PodSandboxConfig,
} from '../../src/runtime/types.ts';

/** A sandbox config in namespace `default` with uid `uid-<name>`; `overrides` replace whole fields. */
export function podSandboxConfig(name: string, overrides: Partial<PodSandboxConfig> = {}): PodSandboxConfig {
  return {
    metadata: { name, uid: `uid-${name}`, namespace: 'default', attempt: 0 },
    // As the kubelet sends them: a host-network sandbox keeps the node's hostname.
    hostname: overrides.linux?.securityContext?.namespaceOptions?.network === NamespaceMode.NODE ? '' : name,
    logDirectory: '',
    portMappings: [],
    labels: {},
    annotations: {},
    ...overrides,
  };
}

/** `PodSandboxConfig.linux` that sets only the network namespace mode (NODE for hostNetwork). */
export function networkNamespace(network: NamespaceMode): NonNullable<PodSandboxConfig['linux']> {
  return { securityContext: { namespaceOptions: { network } } };
}

/** A container config with attempt 0, no command and log path `<name>/0.log`; `overrides` replace whole fields. */
export function containerConfig(name: string, overrides: Partial<ContainerConfig> = {}): ContainerConfig {
  return {
    metadata: { name, attempt: 0 },
    image: { image: 'busybox' },
    command: [],
    args: [],
    workingDir: '',
    envs: [],
    mounts: [],
    labels: {},
    annotations: {},
    logPath: `${name}/0.log`,
    stdin: false,
    tty: false,
    ...overrides,
  };
}

/** The CriError a call rejects with; fails the test if it resolves or rejects with anything else. */
export async function rejection(promise: Promise<unknown>): Promise<CriError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof CriError) return err;
    throw err;
  }
  throw new Error('expected the call to reject');
}

/** Reads up to `count` events, fewer if the stream ends first. */
export async function take(iterator: AsyncIterator<ContainerEvent>, count: number): Promise<ContainerEvent[]> {
  const events: ContainerEvent[] = [];
  for (let i = 0; i < count; i++) {
    const next = await iterator.next();
    if (next.done) break;
    events.push(next.value);
  }
  return events;
}

export interface SimOverGrpc {
  /** A fresh temp dir; the socket is in it, and tests may put files there. */
  dir: string;
  clock: ManualClock;
  sim: SimRuntime;
  client: CriClient;
  /** Closes the client and the runtime, and removes the dir. */
  close(): Promise<void>;
}

/**
 * sim:// on a manual clock, without pull delays, and the agent's CriClient talking to it;
 * `ownDir`: with a directory of its own (`<dir>/sim`), its image filesystem.
 */
export async function simOverGrpc(prefix: string, options: Pick<SimRuntimeServerOptions, 'intercept' | 'runtimeHandlers'> & { ownDir?: boolean } = {}): Promise<SimOverGrpc> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const clock = new ManualClock();
  const { ownDir, ...rest } = options;
  const sim = await startSimRuntime({ socketPath: join(dir, 'cri.sock'), clock, pullDelayMs: 0, ...(ownDir ? { stateDir: join(dir, 'sim') } : {}), ...rest });
  const client = new CriClient(sim.endpoint);
  return {
    dir,
    clock,
    sim,
    client,
    close: async () => {
      client.close();
      await sim.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export const SANDBOX = 'sandbox0123456789';
export const CONTAINER = 'abcdef0123456789abcdef';
const pod = podSandboxConfig('web');
const app = containerConfig('app');

/** Each CRI call with arguments as the agent passes them, about sandbox `SANDBOX`, container `CONTAINER`, pod `web` and image `busybox:1`. */
export const CALL_ARGS: { [M in CriMethod]: CriArgs<M> } = {
  version: [],
  status: [{ verbose: true }],
  updateRuntimeConfig: ['10.0.0.0/24'],
  runPodSandbox: [pod],
  stopPodSandbox: [SANDBOX],
  removePodSandbox: [SANDBOX],
  podSandboxStatus: [SANDBOX],
  listPodSandbox: [{ state: 'SANDBOX_READY' }],
  createContainer: [SANDBOX, app, pod],
  startContainer: [CONTAINER],
  stopContainer: [CONTAINER, 30],
  removeContainer: [CONTAINER],
  listContainers: [{ podSandboxId: SANDBOX }],
  containerStatus: [CONTAINER],
  updateContainerResources: [CONTAINER, { cpuPeriod: 100_000, cpuQuota: 0, cpuShares: 2, memoryLimitInBytes: 0, oomScoreAdj: 0 }],
  execSync: [CONTAINER, ['true'], 5],
  exec: [{ containerId: CONTAINER, cmd: ['sh'], tty: false, stdin: false, stdout: true, stderr: true }],
  attach: [{ containerId: CONTAINER, tty: false, stdin: false, stdout: true, stderr: true }],
  portForward: [{ podSandboxId: SANDBOX, port: [80] }],
  reopenContainerLog: [CONTAINER],
  containerStats: [CONTAINER],
  listContainerStats: [{}],
  podSandboxStats: [SANDBOX],
  listPodSandboxStats: [{}],
  pullImage: ['busybox:1', { username: 'reader', password: 's3cret' }, pod],
  imageStatus: ['busybox:1'],
  listImages: [],
  removeImage: ['busybox:1'],
  imageFsInfo: [],
};
