/**
 * Kubernetes' own CSI mock driver as a plain process for a test (test/csimock, built once per
 * machine by `scripts/controlplane/build.mjs --csi-mock`, cached like the control plane): its
 * CSI socket at `<rootDir>/plugins/<driver>/csi.sock` and, as node-driver-registrar would, its
 * registration socket `<rootDir>/plugins_registry/<driver>-reg.sock`, where `rootDir` is the
 * agent's root directory (or a temporary one). Every RPC on either socket is a line of its call
 * log (`calls()`); `fail()` makes RPCs fail with a gRPC code through its fail file.
 *
 * `stop()` ends it with SIGTERM, which removes both sockets as the registrar removes its own;
 * `kill()` with SIGKILL, which leaves them behind, as a crashed driver and registrar do.
 *
 * Where Go is missing the tests skip, loudly, outside CI; on CI (`CI=true`) they fail instead.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { mountPointsUnder } from '../../src/volumes/mounter.ts';

/** The upstream mock's name (service.Name), the driver's unless a test names it. */
export const MOCK_DRIVER_NAME = 'io.kubernetes.storage.mock';

export type MockNodeCapability = 'STAGE_UNSTAGE_VOLUME' | 'GET_VOLUME_STATS' | 'EXPAND_VOLUME' | 'VOLUME_MOUNT_GROUP' | 'SINGLE_NODE_MULTI_WRITER';

export interface CsiMockOptions {
  /** The agent's --root-dir; a temporary directory (removed by `stop()`) when not given. */
  rootDir?: string;
  driverName?: string;
  /** NodeGetInfo's node_id. Default `csimock-node`. */
  nodeId?: string;
  /** Default: the upstream mock's own, STAGE_UNSTAGE_VOLUME and GET_VOLUME_STATS. */
  nodeCapabilities?: readonly MockNodeCapability[];
  /** The controller's PUBLISH_UNPUBLISH_VOLUME: stage and publish then want publish_context.device. */
  attach?: boolean;
  maxVolumesPerNode?: number;
  /** NodeGetInfo's accessible_topology segments. */
  topology?: Readonly<Record<string, string>>;
  /** The driver holds volumes "1" to N (at least the upstream's 3). */
  volumes?: number;
  /**
   * NodePublishVolume bind-mounts a directory of the mock's own (kept until `stop()`) onto the
   * target path. `stop()` unmounts what is still mounted under its temporary directory (the
   * default `rootDir`), not under a `rootDir` given.
   */
  bindMounts?: boolean;
}

/** One line of the call log (test/csimock/calllog.go). */
export interface CsiMockCall {
  time: string;
  /** The gRPC method, `/csi.v1.Node/NodeStageVolume`. */
  method: string;
  /** Its last part, `NodeStageVolume`. */
  rpc: string;
  /** protojson with the proto's field names: int64 as strings, fields at their default ("", 0, false, empty) left out. */
  request: Record<string, unknown>;
  response?: Record<string, unknown>;
  error?: { code: number; name: string; message: string; injected?: boolean };
  bindMount?: { source?: string; target: string; mounted: boolean; skipped?: string };
  exit?: string;
}

/** A rule of the fail file (test/csimock/faults.go). */
export interface CsiMockFault {
  /** `NodeStageVolume` or `/csi.v1.Node/NodeStageVolume`. */
  method: string;
  /** The gRPC status code, 1–16. */
  code: number;
  message?: string;
  /** How many calls fail; absent: every call. */
  times?: number;
  /** The driver carries the call out, then its caller hears the error. */
  after?: boolean;
}

export interface CsiMock {
  driverName: string;
  nodeId: string;
  rootDir: string;
  /** The socket of the Identity, Controller and Node services (the endpoint GetInfo names). */
  csiSocket: string;
  registrationSocket: string;
  /** With `bindMounts`: where each volume's directory is (`<stateDir>/<volume ID>`). */
  stateDir: string | null;
  /** The call log so far, oldest first. */
  calls(): Promise<CsiMockCall[]>;
  /** Replaces the fail file's rules. */
  fail(rules: readonly CsiMockFault[]): Promise<void>;
  /** The fail file's rules as the mock has left them (counted down). */
  faults(): Promise<CsiMockFault[]>;
  /** Resolves when the process exits, with its status or signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The process's stderr and stdout so far (for failure messages). */
  output(): string;
  /** SIGTERM: the mock removes both sockets and exits. Removes the temporary files too. Safe to call more than once. */
  stop(): Promise<void>;
  /** SIGKILL: the sockets stay behind. */
  kill(): Promise<void>;
}

const READY_TIMEOUT_MS = 30_000;

/** The built binary, or null (having said why) where Go is missing outside CI. */
async function binary(): Promise<string | null> {
  // @ts-expect-error: a plain ESM script without type declarations
  const build = (await import('../../scripts/controlplane/build.mjs')) as {
    csiMockBinaries(): Promise<{ csimock: string } | { skip: string }>;
  };
  const result = await build.csiMockBinaries();
  if (!('skip' in result)) return result.csimock;
  if (process.env.CI === 'true') throw new Error(`the CSI mock driver tests cannot run on CI: ${result.skip}`);
  console.warn(`\n${'!'.repeat(78)}\n!! SKIPPING the CSI mock driver tests: ${result.skip}.\n!! Install Go 1.26 (https://go.dev/dl) to run them; CI runs them.\n${'!'.repeat(78)}\n`);
  return null;
}

/** Starts the mock and resolves once both sockets listen, or with null (having said why) where Go is missing outside CI. */
export async function startCsiMock(options: CsiMockOptions = {}): Promise<CsiMock | null> {
  const bin = await binary();
  if (!bin) return null;
  const driverName = options.driverName ?? MOCK_DRIVER_NAME;
  const nodeId = options.nodeId ?? 'csimock-node';
  const own = await mkdtemp(path.join(os.tmpdir(), 'statelet-csimock-'));
  const rootDir = options.rootDir ?? path.join(own, 'root');
  const csiSocket = path.join(rootDir, 'plugins', driverName, 'csi.sock');
  const registrationDir = path.join(rootDir, 'plugins_registry');
  const callLog = path.join(own, 'calls.jsonl');
  const failFile = path.join(own, 'fail.json');
  const stateDir = options.bindMounts ? path.join(own, 'state') : null;
  await mkdir(path.dirname(csiSocket), { recursive: true });
  await mkdir(registrationDir, { recursive: true, mode: 0o755 });

  const args = [
    `--csi-socket=${csiSocket}`,
    `--registration-dir=${registrationDir}`,
    `--driver-name=${driverName}`,
    `--node-id=${nodeId}`,
    `--node-capabilities=${(options.nodeCapabilities ?? ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS']).join(',')}`,
    `--attach=${options.attach ?? false}`,
    `--max-volumes-per-node=${options.maxVolumesPerNode ?? 0}`,
    `--volumes=${options.volumes ?? 3}`,
    `--call-log=${callLog}`,
    `--fail-file=${failFile}`,
    ...Object.entries(options.topology ?? {}).map(([key, value]) => `--topology=${key}=${value}`),
    ...(stateDir ? ['--bind-mounts', `--state-dir=${stateDir}`] : []),
  ];
  let output = '';
  let proc: ChildProcess | undefined;
  const onExit = (): void => {
    proc?.kill('SIGKILL');
  };
  try {
    proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const child = proc;
    process.once('exit', onExit);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const keep = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.length > 1_000_000) output = output.slice(-500_000);
    };
    child.stderr!.on('data', keep);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the CSI mock did not print "ready" within ${READY_TIMEOUT_MS / 1000} s:\n${output}`)), READY_TIMEOUT_MS);
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        keep(chunk);
        stdout += chunk.toString();
        if (stdout.split('\n').includes('ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`the CSI mock exited with ${code ?? signal} before it was ready:\n${output}`));
      });
    });

    const removeOwn = async (): Promise<void> => {
      process.removeListener('exit', onExit);
      // A bind mount a test left (it failed before unpublishing) would make the removal fail.
      if (stateDir) {
        const points = mountPointsUnder(await readFile('/proc/self/mountinfo', 'utf8'), own);
        for (const point of points.sort().reverse()) await promisify(execFile)('umount', [point]);
      }
      await rm(own, { recursive: true, force: true });
    };
    const end = async (signal: NodeJS.Signals): Promise<void> => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    };
    let stopping: Promise<void> | undefined;
    return {
      driverName,
      nodeId,
      rootDir,
      csiSocket,
      registrationSocket: path.join(registrationDir, `${driverName}-reg.sock`),
      stateDir,
      calls: async () => parseCallLog(await readFile(callLog, 'utf8').catch(() => '')),
      fail: async (rules) => {
        // Whole or not at all: the mock re-reads it at every RPC.
        const tmp = `${failFile}.tmp`;
        await writeFile(tmp, JSON.stringify(rules));
        await rename(tmp, failFile);
      },
      faults: async () => JSON.parse(await readFile(failFile, 'utf8').catch(() => '[]')) as CsiMockFault[],
      exited,
      output: () => output,
      stop(): Promise<void> {
        stopping ??= (async () => {
          await end('SIGTERM');
          await removeOwn();
        })();
        return stopping;
      },
      async kill(): Promise<void> {
        await end('SIGKILL');
      },
    };
  } catch (err) {
    process.removeListener('exit', onExit);
    proc?.kill('SIGKILL');
    await rm(own, { recursive: true, force: true });
    throw err;
  }
}

function parseCallLog(text: string): CsiMockCall[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const call = JSON.parse(line) as Omit<CsiMockCall, 'rpc'>;
      return { ...call, rpc: call.method.slice(call.method.lastIndexOf('/') + 1) };
    });
}
