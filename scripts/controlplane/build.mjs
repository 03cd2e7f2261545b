#!/usr/bin/env node
/**
 * Builds the test control plane (test/controlplane: etcd + kube-apiserver in one binary) and
 * kubectl from the same module graph, once per machine: the binaries go to a directory keyed by
 * the hash of go.mod, go.sum, main.go and the Go version, so a second run only checks that the
 * directory exists. Concurrent builders (vitest workers) serialise on a mkdir lock.
 *
 *   node scripts/controlplane/build.mjs        prints the directory holding controlplane and kubectl
 *   node scripts/controlplane/build.mjs --conformance[=NAME,…]
 *                                              builds (all, or the named of) kube-scheduler,
 *                                              kube-controller-manager, kubelet, e2e.test, agnhost
 *                                              and ginkgo, and prints `NAME PATH` lines
 *
 * Imported by the cluster test harness and `npm run cluster`: `controlPlaneBinaries()` returns
 * the paths, or a reason when Go is not installed. `conformanceBinaries()` does the same for the
 * second set, which only the node conformance suite and the controllers tests need, so it is
 * built on demand, one binary at a time, into its own directory (keyed by go.mod, go.sum and the
 * Go version: it does not involve main.go), never as part of the first.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const moduleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test/controlplane');
/** Where Go's own installer puts it; the machines have Go there without it being on PATH. */
const GO_CANDIDATES = ['go', '/usr/local/go/bin/go'];

const goEnv = {
  ...process.env,
  GOTOOLCHAIN: 'local', // never download another toolchain
  GOWORK: 'off',
  CGO_ENABLED: '0', // static binaries, as upstream builds kube-apiserver and etcd
  GOFLAGS: '-modcacherw', // a module cache that can be deleted
};

async function findGo() {
  for (const candidate of GO_CANDIDATES) {
    try {
      const { stdout } = await run(candidate, ['version'], { env: goEnv });
      return { go: candidate, version: stdout.trim() };
    } catch {
      // try the next one
    }
  }
  return null;
}

export function cacheRoot() {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'statelet-controlplane');
}

async function key(goVersion) {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) hash.update(await readFile(path.join(moduleDir, file)));
  hash.update(goVersion);
  return hash.digest('hex').slice(0, 16);
}

async function kubernetesVersion() {
  const mod = await readFile(path.join(moduleDir, 'go.mod'), 'utf8');
  const match = /^\s*(?:require\s+)?k8s\.io\/kubernetes (v1\.(\d+)\.\d+)$/m.exec(mod);
  if (!match) throw new Error('test/controlplane/go.mod does not require k8s.io/kubernetes at a v1.X.Y release');
  return { version: match[1], minor: match[2] };
}

/** Upstream's build tags (hack/lib/golang.sh) and version stamps, the same for every binary. */
const TAGS = 'selinux,notest,grpcnotrace';

async function ldflags() {
  const { version, minor } = await kubernetesVersion();
  return [
    '-s',
    '-w',
    `-X k8s.io/component-base/version.gitVersion=${version}`,
    '-X k8s.io/component-base/version.gitMajor=1',
    `-X k8s.io/component-base/version.gitMinor=${minor}`,
    '-X k8s.io/component-base/version.gitTreeState=clean',
    `-X k8s.io/client-go/pkg/version.gitVersion=${version}`,
  ].join(' ');
}

/** `go build` (or, with `test`, `go test -c`) of `pkg` into `out`. */
async function goBuild(go, pkg, out, { test = false } = {}) {
  const args = test ? ['test', '-c'] : ['build'];
  await run(go, [...args, '-trimpath', '-tags', TAGS, '-ldflags', await ldflags(), '-o', out, pkg], {
    cwd: moduleDir,
    env: goEnv,
    maxBuffer: 64 * 1024 * 1024,
  }).catch((err) => {
    throw new Error(`go ${args.join(' ')} ${pkg} failed:\n${err.stderr || err.message}`);
  });
}

async function build(go, outDir, log) {
  for (const [name, pkg] of [
    ['controlplane', '.'],
    ['kubectl', 'k8s.io/kubernetes/cmd/kubectl'],
  ]) {
    log(`building ${name} (${pkg}) — the first build takes several minutes`);
    const started = Date.now();
    await goBuild(go, pkg, path.join(outDir, name));
    log(`built ${name} in ${Math.round((Date.now() - started) / 1000)} s`);
  }
}

async function waitForLock(lock, ready) {
  for (;;) {
    try {
      await mkdir(lock);
      return true;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    if (existsSync(ready)) return false;
    // A lock left by a builder that died is older than any build takes.
    const age = Date.now() - (await stat(lock).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
    if (age > 60 * 60 * 1000) await rm(lock, { recursive: true, force: true });
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

/**
 * The control plane's binaries, built if needed. Resolves with `{ dir, controlplane, kubectl }`,
 * or `{ skip: reason }` when Go is not installed; a failing build rejects.
 */
export async function controlPlaneBinaries(log = (line) => console.error(`[controlplane] ${line}`)) {
  const found = await findGo();
  if (!found) return { skip: `Go is not installed (looked for ${GO_CANDIDATES.join(', ')})` };
  const dir = path.join(cacheRoot(), await key(found.version));
  const paths = { dir, controlplane: path.join(dir, 'controlplane'), kubectl: path.join(dir, 'kubectl') };
  if (existsSync(dir)) return paths;
  await mkdir(cacheRoot(), { recursive: true });
  const lock = `${dir}.lock`;
  if (!(await waitForLock(lock, dir))) return paths;
  try {
    if (existsSync(dir)) return paths;
    const tmp = `${dir}.tmp-${process.pid}`;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true });
    log(`${found.version}; cache ${dir}`);
    try {
      await build(found.go, tmp, log);
      await rename(tmp, dir);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
    return paths;
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

/**
 * The node conformance suite's upstream programs, from the same module graph (go.mod's `tool`
 * lines and conformance_tools.go keep them in it). `e2e.test` is `go test -c`; agnhost is
 * static (CGO_ENABLED=0, as everything here) because it runs in a busybox image.
 */
export const CONFORMANCE = {
  'kube-scheduler': { key: 'kubeScheduler', pkg: 'k8s.io/kubernetes/cmd/kube-scheduler' },
  'kube-controller-manager': { key: 'kubeControllerManager', pkg: 'k8s.io/kubernetes/cmd/kube-controller-manager' },
  kubelet: { key: 'kubelet', pkg: 'k8s.io/kubernetes/cmd/kubelet' },
  'e2e.test': { key: 'e2eTest', pkg: 'k8s.io/kubernetes/test/e2e', test: true },
  agnhost: { key: 'agnhost', pkg: 'k8s.io/kubernetes/test/images/agnhost' },
  ginkgo: { key: 'ginkgo', pkg: 'github.com/onsi/ginkgo/v2/ginkgo' },
};

async function conformanceKey(goVersion) {
  const hash = createHash('sha256');
  hash.update('conformance\0');
  for (const file of ['go.mod', 'go.sum']) hash.update(await readFile(path.join(moduleDir, file)));
  hash.update(goVersion);
  return hash.digest('hex').slice(0, 16);
}

/**
 * The conformance binaries named in `only` (file names, default: all of `CONFORMANCE`), each
 * built if its file is not in the cache yet. Resolves with `{ dir, kubeScheduler,
 * kubeControllerManager, kubelet, e2eTest, agnhost, ginkgo }` (the paths of those asked for; the
 * file in `dir` has the binary's own name), or `{ skip: reason }` when
 * Go is not installed; a failing build rejects. Each binary has its own lock, so a test needing
 * the scheduler does not wait for e2e.test.
 */
export async function conformanceBinaries({ only = Object.keys(CONFORMANCE), log = (line) => console.error(`[conformance] ${line}`) } = {}) {
  for (const name of only) if (!(name in CONFORMANCE)) throw new Error(`unknown conformance binary ${name} (known: ${Object.keys(CONFORMANCE).join(', ')})`);
  const found = await findGo();
  if (!found) return { skip: `Go is not installed (looked for ${GO_CANDIDATES.join(', ')})` };
  const dir = path.join(cacheRoot(), `conformance-${await conformanceKey(found.version)}`);
  const paths = { dir };
  for (const name of only) {
    const file = path.join(dir, name);
    paths[CONFORMANCE[name].key] = file;
    if (existsSync(file)) continue;
    await mkdir(dir, { recursive: true });
    const lock = path.join(dir, `.${name}.lock`);
    if (!(await waitForLock(lock, file))) continue;
    try {
      if (existsSync(file)) continue;
      const tmp = `${file}.tmp-${process.pid}`;
      const { pkg, test } = CONFORMANCE[name];
      log(`building ${name} (${test ? 'go test -c ' : ''}${pkg}) — the first build takes minutes; ${found.version}; cache ${dir}`);
      const started = Date.now();
      try {
        await goBuild(found.go, pkg, tmp, { test });
        await rename(tmp, file);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
      log(`built ${name} in ${Math.round((Date.now() - started) / 1000)} s`);
    } finally {
      await rm(lock, { recursive: true, force: true });
    }
  }
  return paths;
}

const kwokModuleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bench/kwok');

/**
 * The stage files kwok's own default setup (kwokctl) gives it, from the module's source: nodes
 * initialized and kept Ready with a Lease, pods made Ready at once, completed and deleted.
 */
const KWOK_STAGES = ['node/fast/node-initialize.yaml', 'node/heartbeat-with-lease/node-heartbeat-with-lease.yaml', 'pod/fast/pod-ready.yaml', 'pod/fast/pod-complete.yaml', 'pod/fast/pod-delete.yaml'];

/**
 * kwok (sigs.k8s.io/kwok) at the release bench/kwok/go.mod pins, for the scale bench: built once
 * per machine into a directory keyed by that module's go.mod, go.sum and the Go version. Resolves
 * with `{ binary, stages }` (the stage files to give it with --config); rejects when Go is missing
 * or the build fails.
 */
export async function kwokBinary(log = (line) => console.error(`[kwok] ${line}`)) {
  const found = await findGo();
  if (!found) throw new Error(`Go is not installed (looked for ${GO_CANDIDATES.join(', ')})`);
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum']) hash.update(await readFile(path.join(kwokModuleDir, file)));
  hash.update(found.version);
  const dir = path.join(cacheRoot(), `kwok-${hash.digest('hex').slice(0, 16)}`);
  const file = path.join(dir, 'kwok');
  const { stdout } = await run(found.go, ['list', '-m', '-f', '{{.Dir}}', 'sigs.k8s.io/kwok'], { cwd: kwokModuleDir, env: goEnv });
  const built = { binary: file, stages: KWOK_STAGES.map((stage) => path.join(stdout.trim(), 'kustomize/stage', stage)) };
  if (existsSync(file)) return built;
  await mkdir(dir, { recursive: true });
  const lock = path.join(dir, '.kwok.lock');
  if (!(await waitForLock(lock, file))) return built;
  try {
    if (existsSync(file)) return built;
    log(`building kwok (sigs.k8s.io/kwok/cmd/kwok) — the first build takes minutes; ${found.version}; cache ${dir}`);
    const tmp = `${file}.tmp-${process.pid}`;
    await run(found.go, ['build', '-trimpath', '-ldflags', '-s -w', '-o', tmp, 'sigs.k8s.io/kwok/cmd/kwok'], { cwd: kwokModuleDir, env: goEnv, maxBuffer: 64 * 1024 * 1024 }).catch((err) => {
      throw new Error(`go build sigs.k8s.io/kwok/cmd/kwok failed:\n${err.stderr || err.message}`);
    });
    await rename(tmp, file);
    return built;
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const flag = process.argv.slice(2).find((arg) => arg === '--conformance' || arg.startsWith('--conformance='));
  if (flag) {
    const only = flag.includes('=') ? flag.slice(flag.indexOf('=') + 1).split(',').filter(Boolean) : undefined;
    const result = await conformanceBinaries({ only });
    if ('skip' in result) {
      console.error(`cannot build the conformance binaries: ${result.skip}`);
      process.exit(1);
    }
    for (const [name, { key }] of Object.entries(CONFORMANCE)) if (result[key]) console.log(`${name} ${result[key]}`);
  } else {
    const result = await controlPlaneBinaries();
    if ('skip' in result) {
      console.error(`cannot build the control plane: ${result.skip}`);
      process.exit(1);
    }
    console.log(result.dir);
  }
}
