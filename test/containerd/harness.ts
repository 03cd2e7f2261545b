/**
 * A private containerd for tests: `startContainerd()` runs `scripts/containerd/up.sh` in a fresh
 * temp dir and hands back the CRI endpoint; `stop()` runs `down.sh`, which stops exactly that
 * instance (by PID and by its socket, never by name) and removes the dir. The instance has the
 * images `statelet.local/busybox:1` (BUSYBOX_IMAGE) and `statelet.local/pause:1` (the sandbox
 * image) already imported and visible to CRI, and a CNI bridge network of its own. It reaches no
 * registry until a test names one with `trustRegistry()` (the registry of test/support/registry.ts).
 *
 * A containerd needs root and the Debian packages that `.ci/run` installs. Where they are missing
 * the harness returns null after saying so loudly, so that a developer's `npm test` still runs
 * everything else; on CI (`CI=true`) a missing prerequisite is an error, so the suite can never
 * silently stop running where it matters.
 */
import { execFile, execFileSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentCgroupRoots, removeCgroupTree } from '../support/agentProcess.ts';

export const BUSYBOX_IMAGE = 'statelet.local/busybox:1';
export const PAUSE_IMAGE = 'statelet.local/pause:1';

export interface ContainerdInstance {
  /** `unix:///…/containerd.sock`, for `new CriClient(endpoint)`. */
  endpoint: string;
  /** The instance's work dir; gone after `stop()`. Pod log dirs may live under it. */
  workDir: string;
  /** Stops the instance and removes everything it made. Safe to call more than once. */
  stop(): Promise<void>;
  /** Kills the daemon (SIGKILL) and starts it again `downSeconds` later; containers run on under their shims. */
  restart(downSeconds: number): Promise<void>;
  /** Imports an image nothing uses, of one layer of `bytes` random bytes (filler-image.sh). */
  importFillerImage(name: string, bytes: number): Promise<void>;
  /**
   * Makes the instance pull `host` (`127.0.0.1:<port>`) over HTTPS trusting `caFile`: a
   * `hosts.toml` in its registry `config_path` (up.sh), which containerd reads at each pull, so a
   * running instance needs no restart. It holds no credentials: each pull must bring its own.
   */
  trustRegistry(host: string, caFile: string): Promise<void>;
}

export interface ContainerdOptions {
  /** containerd's root (its images and snapshots) on a tmpfs of this size (`128m`); the host's disk by default. */
  rootSize?: string;
}

const scriptsDir = fileURLToPath(new URL('../../scripts/containerd/', import.meta.url));
const UP = join(scriptsDir, 'up.sh');
const DOWN = join(scriptsDir, 'down.sh');
const RESTART = join(scriptsDir, 'restart.sh');
const FILLER = join(scriptsDir, 'filler-image.sh');
/** Startup is about 2 s on the 2-vCPU VMs; the margin is for a loaded CI machine. */
const UP_TIMEOUT_MS = 180_000;
const DOWN_TIMEOUT_MS = 180_000;

/** Tools and files up.sh needs, looked up where Debian's packages put them. */
const PREREQUISITES: { what: string; paths: string[]; pkg: string }[] = [
  { what: 'containerd', paths: ['/usr/bin/containerd', '/usr/local/bin/containerd'], pkg: 'containerd' },
  { what: 'runc', paths: ['/usr/sbin/runc', '/usr/bin/runc', '/usr/local/sbin/runc'], pkg: 'runc' },
  { what: 'static busybox', paths: ['/bin/busybox', '/usr/bin/busybox'], pkg: 'busybox-static' },
  { what: 'CNI bridge plugin', paths: ['/usr/lib/cni/bridge'], pkg: 'containernetworking-plugins' },
  { what: 'iptables', paths: ['/usr/sbin/iptables', '/sbin/iptables'], pkg: 'iptables' },
];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Why a private containerd cannot run here, or null if it can. */
export function containerdUnavailableReason(): string | null {
  if (process.platform !== 'linux') return `needs Linux, this is ${process.platform}`;
  if (process.getuid?.() !== 0) return 'needs root (run the tests as root, as CI does)';
  const missing = PREREQUISITES.filter((p) => !p.paths.some(executable));
  if (missing.length > 0) {
    const names = missing.map((p) => p.what).join(', ');
    const pkgs = missing.map((p) => p.pkg).join(' ');
    return `${names} not installed (apt-get install ${pkgs})`;
  }
  return null;
}

/** The scripts' PATH: node's may lack the sbin dirs where runc and iptables live. */
function scriptEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const path = `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${process.env.PATH ?? ''}`;
  return { ...process.env, PATH: path, ...extra };
}

function run(script: string, argv: string[], timeoutMs: number, env: NodeJS.ProcessEnv = {}): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      script,
      argv,
      { env: scriptEnv(env), timeout: timeoutMs, killSignal: 'SIGTERM', maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) {
          reject(new Error(`${script} ${argv.join(' ')} failed: ${err.message}\n--- stderr ---\n${stderr}`));
        } else {
          resolve({ stdout, stderr });
        }
      },
    );
  });
}

/**
 * Starts a private containerd, or returns null (having printed why) where it cannot run. On CI
 * (`CI=true`) it throws instead of returning null. A failing up.sh always throws: when the
 * prerequisites are there, a containerd that does not come up is a bug to see, not to skip.
 */
export async function startContainerd(options: ContainerdOptions = {}): Promise<ContainerdInstance | null> {
  const reason = containerdUnavailableReason();
  if (reason !== null) {
    if (process.env.CI === 'true') {
      throw new Error(`containerd suite cannot run on CI: ${reason}`);
    }
    const bar = '!'.repeat(78);
    process.stderr.write(`\n${bar}\n!!! SKIPPING containerd suite: ${reason}\n${bar}\n\n`);
    return null;
  }

  // Short prefix: the socket path under it must stay below the 107-byte unix socket limit.
  const workDir = mkdtempSync(join(tmpdir(), 'statelet-ctd-'));
  const startedAt = Date.now();
  let up: { stdout: string; stderr: string };
  try {
    up = await run(UP, [workDir], UP_TIMEOUT_MS, options.rootSize ? { STATELET_CONTAINERD_ROOT_SIZE: options.rootSize } : {});
  } catch (err) {
    // up.sh undoes itself on failure; the dir is left only if it never got going.
    rmSync(workDir, { recursive: true, force: true });
    throw err;
  }
  const endpoint = up.stdout.trim().split('\n').at(-1) ?? '';
  if (!endpoint.startsWith('unix://')) {
    await run(DOWN, [workDir], DOWN_TIMEOUT_MS).catch(() => undefined);
    throw new Error(`up.sh printed no endpoint (stdout: ${JSON.stringify(up.stdout)})\n${up.stderr}`);
  }
  process.stderr.write(`containerd harness: ${endpoint} up in ${Date.now() - startedAt} ms\n`);

  let stopping: Promise<void> | undefined;
  // If the test process exits without calling stop() (a crash, a forgotten afterAll), still take
  // the instance down: a leaked containerd keeps its shims, mounts and bridge on the machine.
  const onExit = (): void => {
    try {
      execFileSync(DOWN, [workDir], { env: scriptEnv(), stdio: 'ignore', timeout: DOWN_TIMEOUT_MS });
    } catch {
      // Nothing more can be done while the process exits.
    }
  };
  process.once('exit', onExit);

  return {
    endpoint,
    workDir,
    stop(): Promise<void> {
      stopping ??= (async () => {
        process.removeListener('exit', onExit);
        await run(DOWN, [workDir], DOWN_TIMEOUT_MS);
        // Its containers gone, the cgroups the test agents kept for them are empty: remove them too.
        await removeAgentCgroups();
      })();
      return stopping;
    },
    async restart(downSeconds: number): Promise<void> {
      await run(RESTART, [workDir, String(downSeconds)], UP_TIMEOUT_MS);
    },
    async importFillerImage(name: string, bytes: number): Promise<void> {
      await run(FILLER, [workDir, name, String(bytes)], UP_TIMEOUT_MS);
    },
    async trustRegistry(host: string, caFile: string): Promise<void> {
      const dir = join(workDir, 'certs.d', host);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'hosts.toml'), registryHostsToml(host, caFile));
    },
  };
}

/**
 * A registry's hosts.toml for containerd's `config_path` (containerd 1.6 docs/hosts.md; parsed by
 * remotes/docker/config/hosts.go): the registry itself as the only host, pull and resolve, over
 * HTTPS with its own CA. Deliberately no `[header]` with credentials.
 */
export function registryHostsToml(host: string, caFile: string): string {
  if (!/^[A-Za-z0-9.-]+(:\d+)?$/.test(host)) throw new Error(`trustRegistry: ${JSON.stringify(host)} is not a host[:port]`);
  return [`server = "https://${host}"`, '', `[host."https://${host}"]`, '  capabilities = ["pull", "resolve"]', `  ca = ${JSON.stringify(caFile)}`, ''].join('\n');
}

/** Removes the cgroup trees the agents of this test file kept (see runStatelet), now empty. */
async function removeAgentCgroups(): Promise<void> {
  for (const root of agentCgroupRoots) await removeCgroupTree(root);
}
