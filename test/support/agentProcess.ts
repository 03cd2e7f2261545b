/**
 * Runs the real `statelet` command in a child process, the way a user does, and observes it
 * through its HTTP endpoints and its log. Waiting is done on observations (log lines, `/pods`
 * answers), each bounded by a timeout, never on fixed sleeps.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, rm, rmdir, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { vi } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { removeAgentDir } from './removeAgentDir.ts';

const repoRoot = path.resolve(import.meta.dirname, '../..');

/**
 * How to start statelet: the executable, the arguments before statelet's own, and the environment
 * it adds. By default the checkout's sources through tsx; the package suite (test/package) runs an
 * installed `statelet` with a chosen Node first on the PATH.
 */
export interface StateletCommand {
  file: string;
  args: string[];
  env?: Record<string, string>;
}

export const sourceCommand: StateletCommand = { file: process.execPath, args: ['--import', 'tsx', path.join(repoRoot, 'src/main.ts')] };

/**
 * The `statelet` command as a user runs it from this checkout (bin/statelet.js: its shebang picks
 * the Node flags), in a copy without dist/ (`bin`, `package.json`, and links to `src` and
 * `node_modules`), so that it runs the checkout's sources whatever dist/ holds: the package suite
 * builds dist/ in the checkout while other suites run. Returns the command and the copy's removal.
 */
export async function checkoutBinCommand(): Promise<{ command: StateletCommand; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-checkout-'));
  await mkdir(path.join(dir, 'bin'));
  await copyFile(path.join(repoRoot, 'bin/statelet.js'), path.join(dir, 'bin/statelet.js'));
  await copyFile(path.join(repoRoot, 'package.json'), path.join(dir, 'package.json'));
  for (const name of ['src', 'node_modules']) await symlink(path.join(repoRoot, name), path.join(dir, name));
  return { command: { file: path.join(dir, 'bin/statelet.js'), args: [] }, remove: () => rm(dir, { recursive: true, force: true }) };
}

const spawnEnv = (command: StateletCommand) => (command.env ? { ...process.env, ...command.env } : process.env);

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface AgentProcess {
  child: ChildProcess;
  readOnlyPort: number;
  healthzPort: number;
  /** The authenticated API (HTTPS on loopback), unless the args gave another --port. */
  kubeletPort: number;
  rootDir: string;
  output(): string;
  /** Resolves with the first log line matching `pattern`. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
  pods(): Promise<Pod[]>;
  healthz(): Promise<{ status: number; body: string }>;
  /** Polls `/pods` until `predicate` holds: a static pod by its name in the manifest; with `namespace`, a pod from the API by its own name. */
  waitForPod(name: string, predicate: (pod: Pod) => boolean, timeoutMs?: number, namespace?: string): Promise<Pod>;
  waitForExit(timeoutMs?: number): Promise<number | null>;
  stop(): Promise<void>;
}

/**
 * `nodeAddresses`: the agent runs several nodes (--nodes), each serving at its own address, so no
 * --address is given; the ports given are every node's.
 */
export async function runStatelet(args: string[], options: { rootDir?: string; command?: StateletCommand; nodeAddresses?: boolean } = {}): Promise<AgentProcess> {
  const command = options.command ?? sourceCommand;
  const rootDir = options.rootDir ?? (await mkdtemp(path.join(os.tmpdir(), 'statelet-e2e-')));
  // Each agent keeps its cgroups under a root of its own, named after its --root-dir (a restarted
  // agent on the same directory finds its own again), so that agents running side by side never
  // take each other's pod cgroups for orphans.
  const cgroupRoot = args.some((a) => a.startsWith('--cgroup-root') || a.startsWith('--cgroups-per-qos')) ? undefined : agentCgroupRoot(rootDir);
  if (cgroupRoot) agentCgroupRoots.add(cgroupRoot);
  const readOnlyPort = await freePort();
  const healthzPort = await freePort();
  // Each agent's authenticated API on a port of its own, on loopback (tests listen there only).
  const kubeletPort = await freePort();
  const child = spawn(
    command.file,
    [
      ...command.args,
      '--root-dir',
      rootDir,
      '--pod-logs-dir',
      path.join(rootDir, 'logs'),
      '--read-only-port',
      String(readOnlyPort),
      '--healthz-port',
      String(healthzPort),
      ...(options.nodeAddresses ? [] : ['--address', '127.0.0.1']),
      '--port',
      String(kubeletPort),
      '--hostname-override',
      'e2e-node',
      ...(cgroupRoot ? [`--cgroup-root=${cgroupRoot}`] : []),
      ...args,
    ],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'], env: spawnEnv(command) },
  );
  let output = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const wake of waiters) wake();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const base = `http://127.0.0.1:${readOnlyPort}`;
  const agent: AgentProcess = {
    child,
    readOnlyPort,
    healthzPort,
    kubeletPort,
    rootDir,
    output: () => output,
    waitForLog(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = output.split('\n').find((l) => pattern.test(l));
          if (line === undefined) return;
          cleanup();
          resolve(line);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`no log line matching ${pattern} within ${timeoutMs} ms; output:\n${output}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async pods() {
      const res = await fetch(`${base}/pods`);
      const list = (await res.json()) as { items: Pod[] };
      return list.items;
    },
    async healthz() {
      const res = await fetch(`http://127.0.0.1:${healthzPort}/healthz`);
      return { status: res.status, body: await res.text() };
    },
    async waitForPod(name, predicate, timeoutMs = 30_000, namespace?: string) {
      // A static pod is named after the node: the last --hostname-override given wins.
      const override = [...args].reverse().find((a) => a.startsWith('--hostname-override='));
      const fullName = namespace ? name : `${name}-${override ? override.slice('--hostname-override='.length) : 'e2e-node'}`;
      return vi.waitFor(
        async () => {
          const pod = (await agent.pods()).find((p) => p.metadata.name === fullName && (!namespace || p.metadata.namespace === namespace));
          if (!pod || !predicate(pod)) {
            throw new Error(`pod ${fullName} not as expected yet: ${JSON.stringify(pod?.status ?? null)}`);
          }
          return pod;
        },
        { timeout: timeoutMs, interval: 100 },
      );
    },
    waitForExit(timeoutMs = 15_000) {
      return Promise.race([
        exited,
        new Promise<null>((_, reject) => setTimeout(() => reject(new Error('agent did not exit')), timeoutMs).unref()),
      ]);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await agent.waitForExit().catch(() => child.kill('SIGKILL'));
      }
      if (!options.rootDir) await removeAgentDir(rootDir);
      if (cgroupRoot) await removeCgroupTree(cgroupRoot);
    },
  };
  await agent.waitForLog(/statelet is running|statelet: /);
  return agent;
}

/** Runs statelet for a command that is expected to end by itself (bad flags, --help). */
export async function runStateletOnce(args: string[], command: StateletCommand = sourceCommand): Promise<{ code: number | null; output: string }> {
  const child = spawn(command.file, [...command.args, ...args], {
    cwd: repoRoot,
    env: spawnEnv(command),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output };
}

export function containerStatus(pod: Pod, name: string) {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find((s) => s.name === name);
}

/** Removes what the agent left of its cgroups on the host (empty ones; a cgroup that still holds processes stays). */
/** The --cgroup-root runStatelet gives an agent on `rootDir`. */
export function agentCgroupRoot(rootDir: string): string {
  return `/statelet-e2e-${createHash('sha256').update(path.resolve(rootDir)).digest('hex').slice(0, 12)}`;
}

/** The cgroup roots of the agents this process started: a containerd harness removes them once its containers are gone. */
export const agentCgroupRoots = new Set<string>();

export async function removeCgroupTree(cgroupRoot: string): Promise<void> {
  const hierarchies = await readdir('/sys/fs/cgroup').catch(() => [] as string[]);
  const remove = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => null);
    if (!entries) return;
    for (const entry of entries) if (entry.isDirectory()) await remove(path.join(dir, entry.name));
    await rmdir(dir).catch(() => undefined);
  };
  for (const hierarchy of ['', ...hierarchies]) await remove(path.join('/sys/fs/cgroup', hierarchy, cgroupRoot));
}
