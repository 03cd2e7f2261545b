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
 *
 *   node scripts/controlplane/build.mjs --registry
 *                                              builds the test registry (test/registry: the CNCF
 *                                              Distribution registry with htpasswd and filesystem
 *                                              storage only) and go-containerregistry's crane, and
 *                                              prints `NAME PATH` lines
 *
 *   node scripts/controlplane/build.mjs --csi-mock
 *                                              builds the CSI mock driver (test/csimock: Kubernetes'
 *                                              own mock CSI driver with a registration socket) and
 *                                              prints `csimock PATH`
 *
 * `registryBinaries()` returns those paths for test/support/registry.ts, `csiMockBinaries()` the
 * mock's for test/support/csiMock.ts. The conformance binaries, the registry's, the CSI mock's and
 * kwok's share one way of building (`cachedBuilds`): a directory per module keyed by its files
 * and the Go version, one lock per binary.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
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

/**
 * `go build` (or, with `test`, `go test -c`) of `pkg` into `out`, in `cwd` (the control plane's
 * module unless given), with `tags` and `ldflags` (the Kubernetes release's by default).
 */
async function goBuild(go, pkg, out, { test = false, cwd = moduleDir, tags = TAGS, flags } = {}) {
  const args = test ? ['test', '-c'] : ['build'];
  const ld = flags ?? (await ldflags());
  await run(go, [...args, '-trimpath', ...(tags ? ['-tags', tags] : []), '-ldflags', ld, '-o', out, pkg], {
    cwd,
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

/**
 * Builds programs of one Go module once per machine into `cacheRoot()/<prefix><hash>`, the hash of
 * `salt`, the module's `keyFiles` and the Go version, and resolves with that directory. Each
 * program is a file named after it, built by `build(name, tmpFile)` under its own mkdir lock, so
 * concurrent builders (vitest workers, other checkouts) build it once and a test needing one
 * program does not wait for another.
 */
async function cachedBuilds({ prefix, salt = '', moduleDir: dirOfModule, keyFiles, goVersion, names, describe, build, log }) {
  const hash = createHash('sha256');
  hash.update(salt);
  for (const file of keyFiles) hash.update(await readFile(path.join(dirOfModule, file)));
  hash.update(goVersion);
  const dir = path.join(cacheRoot(), `${prefix}${hash.digest('hex').slice(0, 16)}`);
  for (const name of names) {
    const file = path.join(dir, name);
    if (existsSync(file)) continue;
    await mkdir(dir, { recursive: true });
    const lock = path.join(dir, `.${name}.lock`);
    if (!(await waitForLock(lock, file))) continue;
    try {
      if (existsSync(file)) continue;
      const tmp = `${file}.tmp-${process.pid}`;
      log(`building ${name} (${describe(name)}) — the first build takes minutes; ${goVersion}; cache ${dir}`);
      const started = Date.now();
      try {
        await build(name, tmp);
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
  return dir;
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
  const dir = await cachedBuilds({
    prefix: 'conformance-',
    salt: 'conformance\0',
    moduleDir,
    keyFiles: ['go.mod', 'go.sum'],
    goVersion: found.version,
    names: only,
    describe: (name) => `${CONFORMANCE[name].test ? 'go test -c ' : ''}${CONFORMANCE[name].pkg}`,
    build: (name, out) => goBuild(found.go, CONFORMANCE[name].pkg, out, { test: CONFORMANCE[name].test }),
    log,
  });
  const paths = { dir };
  for (const name of only) paths[CONFORMANCE[name].key] = path.join(dir, name);
  return paths;
}

const registryModuleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test/registry');

/** The test registry's programs: test/registry's main, and crane from the same module graph. */
export const REGISTRY = {
  registry: { key: 'registry', pkg: '.' },
  crane: { key: 'crane', pkg: 'github.com/google/go-containerregistry/cmd/crane' },
};

/**
 * The registry (test/registry: `registry serve CONFIG`, `registry htpasswd USER`) and crane at
 * the versions test/registry/go.mod pins, built once per machine into a directory keyed by that
 * module's go.mod, go.sum, main.go and the Go version. Resolves with `{ dir, registry, crane }`,
 * or `{ skip: reason }` when Go is not installed; a failing build rejects.
 */
export async function registryBinaries(log = (line) => console.error(`[registry] ${line}`)) {
  const found = await findGo();
  if (!found) return { skip: `Go is not installed (looked for ${GO_CANDIDATES.join(', ')})` };
  const dir = await cachedBuilds({
    prefix: 'registry-',
    moduleDir: registryModuleDir,
    keyFiles: ['go.mod', 'go.sum', 'main.go'],
    goVersion: found.version,
    names: Object.keys(REGISTRY),
    describe: (name) => REGISTRY[name].pkg,
    build: (name, out) => goBuild(found.go, REGISTRY[name].pkg, out, { cwd: registryModuleDir, tags: '', flags: '-s -w' }),
    log,
  });
  const paths = { dir };
  for (const [name, { key }] of Object.entries(REGISTRY)) paths[key] = path.join(dir, name);
  return paths;
}

const csiMockModuleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test/csimock');

/**
 * The CSI mock driver (test/csimock: k8s.io/kubernetes' test/e2e/storage/drivers/csi-test/mock
 * at the release test/csimock/go.mod pins, with a main that serves it and a registration socket),
 * built once per machine into a directory keyed by that module's go.mod, go.sum, its Go files and
 * the Go version. Resolves with `{ dir, csimock }`, or `{ skip: reason }` when Go is not
 * installed; a failing build rejects.
 */
export async function csiMockBinaries(log = (line) => console.error(`[csimock] ${line}`)) {
  const found = await findGo();
  if (!found) return { skip: `Go is not installed (looked for ${GO_CANDIDATES.join(', ')})` };
  const goFiles = (await readdir(csiMockModuleDir)).filter((name) => name.endsWith('.go')).sort();
  const dir = await cachedBuilds({
    prefix: 'csimock-',
    moduleDir: csiMockModuleDir,
    keyFiles: ['go.mod', 'go.sum', ...goFiles],
    goVersion: found.version,
    names: ['csimock'],
    describe: () => 'test/csimock',
    build: (_name, out) => goBuild(found.go, '.', out, { cwd: csiMockModuleDir, tags: '', flags: '-s -w' }),
    log,
  });
  return { dir, csimock: path.join(dir, 'csimock') };
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
  const pkg = 'sigs.k8s.io/kwok/cmd/kwok';
  const dir = await cachedBuilds({
    prefix: 'kwok-',
    moduleDir: kwokModuleDir,
    keyFiles: ['go.mod', 'go.sum'],
    goVersion: found.version,
    names: ['kwok'],
    describe: () => pkg,
    build: (_name, out) => goBuild(found.go, pkg, out, { cwd: kwokModuleDir, tags: '', flags: '-s -w' }),
    log,
  });
  const { stdout } = await run(found.go, ['list', '-m', '-f', '{{.Dir}}', 'sigs.k8s.io/kwok'], { cwd: kwokModuleDir, env: goEnv });
  return { binary: path.join(dir, 'kwok'), stages: KWOK_STAGES.map((stage) => path.join(stdout.trim(), 'kustomize/stage', stage)) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const flag = process.argv.slice(2).find((arg) => arg === '--conformance' || arg.startsWith('--conformance='));
  if (process.argv.includes('--csi-mock')) {
    const result = await csiMockBinaries();
    if ('skip' in result) {
      console.error(`cannot build the CSI mock driver: ${result.skip}`);
      process.exit(1);
    }
    console.log(`csimock ${result.csimock}`);
  } else if (process.argv.includes('--registry')) {
    const result = await registryBinaries();
    if ('skip' in result) {
      console.error(`cannot build the test registry: ${result.skip}`);
      process.exit(1);
    }
    for (const [name, { key }] of Object.entries(REGISTRY)) console.log(`${name} ${result[key]}`);
  } else if (flag) {
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
