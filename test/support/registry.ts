/**
 * A real image registry with authentication for the private-image tests: the CNCF Distribution
 * registry (test/registry, built once per machine by `scripts/controlplane/build.mjs --registry`,
 * cached like the control plane) as a process on 127.0.0.1 at a free port, over TLS with a CA of
 * its own, refusing anonymous access (htpasswd with one bcrypt user). Images go in with
 * go-containerregistry's crane, logged in through a DOCKER_CONFIG of the registry's own.
 *
 * A containerd trusts it with `instance.trustRegistry(registry.host, registry.caFile)`
 * (test/containerd/harness.ts): that gives containerd the CA, never the credentials.
 *
 * Where Go is missing the tests skip, loudly, outside CI; on CI (`CI=true`) they fail instead.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import forge from 'node-forge';
import { freePort } from './agentProcess.ts';
import { CA_EXTENSIONS, certificate, keyPair } from './testPki.ts';

export interface Registry {
  /** `127.0.0.1:<port>`: image references are `<host>/<repository>:<tag>`. */
  host: string;
  username: string;
  password: string;
  /** The PEM of the CA that signed the registry's serving certificate. */
  caFile: string;
  /** The registry's own directory (config, htpasswd, storage, certificates); gone after `stop()`. */
  dir: string;
  /**
   * Pushes an image as `<host>/<ref>` and resolves with its reference by digest
   * (`<host>/<repository>@sha256:…`). `image` is an OCI image layout (a directory, or a tarball
   * of one as scripts/containerd/build-images.sh writes) or a `docker save` tarball.
   */
  push(image: string, ref: string): Promise<string>;
  /** Pushes busybox (build-images.sh's private-busybox.tar, an image ID of its own) as `<host>/<ref>`. */
  pushBusybox(ref?: string): Promise<string>;
  /**
   * `{"auths":{"<host>":{"username","password","auth"}}}`: the registry's login as a Docker
   * config.json, the `.dockerconfigjson` of a `kubernetes.io/dockerconfigjson` Secret.
   */
  dockerConfigJson(): string;
  /** Runs crane with `args`, logged in through `dockerConfig` (a DOCKER_CONFIG directory; the registry's own unless given); resolves with its stdout. */
  crane(args: string[], dockerConfig?: string): Promise<string>;
  /** The registry's log so far (for failure messages). */
  output(): string;
  /** Stops the registry and removes its directory. Safe to call more than once. */
  stop(): Promise<void>;
}

/** Where the suites push busybox: a repository no anonymous client may read. */
export const PRIVATE_BUSYBOX = 'private/busybox:1';

const READY_TIMEOUT_MS = 30_000;
const COMMAND_TIMEOUT_MS = 120_000;
const BUILD_IMAGES = fileURLToPath(new URL('../../scripts/containerd/build-images.sh', import.meta.url));

interface RegistryBinaries {
  registry: string;
  crane: string;
}

/** The built binaries, or null (having said why) where Go is missing outside CI. */
async function binaries(): Promise<RegistryBinaries | null> {
  // @ts-expect-error: a plain ESM script without type declarations
  const build = (await import('../../scripts/controlplane/build.mjs')) as {
    registryBinaries(): Promise<RegistryBinaries | { skip: string }>;
  };
  const result = await build.registryBinaries();
  if (!('skip' in result)) return result;
  if (process.env.CI === 'true') throw new Error(`the registry tests cannot run on CI: ${result.skip}`);
  console.warn(`\n${'!'.repeat(78)}\n!! SKIPPING the registry tests: ${result.skip}.\n!! Install Go 1.26 (https://go.dev/dl) to run them; CI runs them.\n${'!'.repeat(78)}\n`);
  return null;
}

function exec(file: string, args: string[], options: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { env: { ...process.env, ...options.env }, timeout: COMMAND_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(file)} ${args.join(' ')} failed: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
    if (options.input !== undefined) child.stdin!.end(options.input);
  });
}

/** A CA and a serving certificate for 127.0.0.1 signed by it; returns the three files. */
async function writeServingPki(dir: string): Promise<{ caFile: string; certFile: string; keyFile: string }> {
  const ca = keyPair();
  const caName = [{ name: 'commonName', value: 'statelet-test-registry-ca' }];
  const caCert = certificate(caName, caName, ca.publicKey, ca.privateKey, '01', CA_EXTENSIONS);
  const server = keyPair();
  const serverCert = certificate([{ name: 'commonName', value: '127.0.0.1' }], caName, server.publicKey, ca.privateKey, '02', [
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', serverAuth: true },
    // Go checks the name against the subjectAltName only (crypto/x509 VerifyHostname).
    { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] },
  ]);
  const files = { caFile: path.join(dir, 'ca.crt'), certFile: path.join(dir, 'registry.crt'), keyFile: path.join(dir, 'registry.key') };
  await writeFile(files.caFile, forge.pki.certificateToPem(caCert));
  await writeFile(files.certFile, forge.pki.certificateToPem(serverCert));
  await writeFile(files.keyFile, server.privatePem, { mode: 0o600 });
  return files;
}

/**
 * The registry's configuration (docs/content/about/configuration.md of distribution v3): storage
 * on the filesystem, TLS, and the htpasswd access controller, which answers an anonymous request
 * with 401 and a Basic challenge of `realm`.
 */
function configYaml(dir: string, host: string, pki: { certFile: string; keyFile: string }): string {
  return [
    'version: 0.1',
    'log:',
    '  level: info',
    '  accesslog:',
    '    disabled: false',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${JSON.stringify(path.join(dir, 'data'))}`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: ${host}`,
    `  secret: ${randomBytes(16).toString('hex')}`,
    '  tls:',
    `    certificate: ${JSON.stringify(pki.certFile)}`,
    `    key: ${JSON.stringify(pki.keyFile)}`,
    'auth:',
    '  htpasswd:',
    '    realm: statelet-test',
    `    path: ${JSON.stringify(path.join(dir, 'htpasswd'))}`,
    '',
  ].join('\n');
}

/** GET /v2/ without credentials: a running registry with auth answers 401. */
function probe(host: string, ca: Buffer): Promise<number | string> {
  return new Promise((resolve) => {
    const req = https.request(`https://${host}/v2/`, { ca, timeout: 5_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 'no status');
    });
    req.on('error', (err) => resolve(String(err)));
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.end();
  });
}

/**
 * Starts a registry with one user (`username`, and a random password unless given), or returns
 * null (having said why) where Go is missing outside CI.
 */
export async function startRegistry(options: { username?: string; password?: string } = {}): Promise<Registry | null> {
  const bins = await binaries();
  if (!bins) return null;
  const username = options.username ?? 'statelet';
  const password = options.password ?? randomBytes(12).toString('hex');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-registry-'));
  let child: ChildProcess | undefined;
  let output = '';
  const onExit = (): void => {
    child?.kill('SIGKILL');
  };
  try {
    const host = `127.0.0.1:${await freePort()}`;
    const pki = await writeServingPki(dir);
    // bcrypt, the only hash the htpasswd access controller accepts, from the registry binary itself.
    await writeFile(path.join(dir, 'htpasswd'), await exec(bins.registry, ['htpasswd', username], { input: `${password}\n` }), { mode: 0o600 });
    await writeFile(path.join(dir, 'config.yml'), configYaml(dir, host, pki));
    const dockerConfig = path.join(dir, 'docker');
    await mkdir(dockerConfig);

    // Its OpenTelemetry tracing (distribution's tracing/tracing.go, autoexport) would send spans to
    // an OTLP collector at localhost:4318 by default: none here.
    const proc = spawn(bins.registry, ['serve', path.join(dir, 'config.yml')], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, OTEL_TRACES_EXPORTER: 'none' } });
    child = proc;
    process.once('exit', onExit);
    const keep = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.length > 1_000_000) output = output.slice(-500_000);
    };
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));

    const ca = await readFile(pki.caFile);
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (let last: number | string = ''; last !== 401; ) {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`the registry exited with ${proc.exitCode ?? proc.signalCode}:\n${output.slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`the registry did not answer 401 on /v2/ within ${READY_TIMEOUT_MS / 1000} s (last: ${last}):\n${output.slice(-4000)}`);
      last = await probe(host, ca);
      if (last !== 401) await new Promise((resolve) => setTimeout(resolve, 100));
    }

    // crane trusts the CA through Go's SSL_CERT_FILE and finds the login in DOCKER_CONFIG.
    const craneEnv = { DOCKER_CONFIG: dockerConfig, SSL_CERT_FILE: pki.caFile };
    await exec(bins.crane, ['auth', 'login', host, '--username', username, '--password-stdin'], { env: craneEnv, input: password });

    const push = async (image: string, ref: string): Promise<string> => {
      let source = image;
      let unpacked: string | undefined;
      if (!(await isDirectory(image)) && (await tarHolds(image, 'oci-layout'))) {
        // crane reads a directory as an OCI layout and any file as a `docker save` tarball.
        unpacked = await mkdtemp(path.join(dir, 'layout-'));
        await exec('tar', ['-xf', image, '-C', unpacked]);
        source = unpacked;
      }
      try {
        return (await exec(bins.crane, ['push', source, `${host}/${ref}`], { env: craneEnv })).trim();
      } finally {
        if (unpacked) await rm(unpacked, { recursive: true, force: true });
      }
    };

    let stopping: Promise<void> | undefined;
    return {
      host,
      username,
      password,
      caFile: pki.caFile,
      dir,
      push,
      async pushBusybox(ref = PRIVATE_BUSYBOX): Promise<string> {
        const images = await mkdtemp(path.join(dir, 'images-'));
        try {
          await exec(BUILD_IMAGES, [images]);
          return await push(path.join(images, 'private-busybox.tar'), ref);
        } finally {
          await rm(images, { recursive: true, force: true });
        }
      },
      dockerConfigJson: () => dockerConfigJson(host, username, password),
      crane: (args, config = dockerConfig) => exec(bins.crane, args, { env: { ...craneEnv, DOCKER_CONFIG: config } }),
      output: () => output,
      stop(): Promise<void> {
        stopping ??= (async () => {
          process.removeListener('exit', onExit);
          if (proc.exitCode === null && proc.signalCode === null) {
            proc.kill('SIGTERM');
            const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
            await exited;
            clearTimeout(timer);
          }
          await rm(dir, { recursive: true, force: true });
        })();
        return stopping;
      },
    };
  } catch (err) {
    process.removeListener('exit', onExit);
    child?.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** A Docker config.json with one login; `auth` is base64 of `user:password`, as `docker login` writes it. */
function dockerConfigJson(host: string, username: string, password: string): string {
  const auth = Buffer.from(`${username}:${password}`).toString('base64');
  return JSON.stringify({ auths: { [host]: { username, password, auth } } });
}

async function isDirectory(file: string): Promise<boolean> {
  return (await stat(file)).isDirectory();
}

/** Whether the tarball `file` has a top-level entry `entry` (an OCI layout has `oci-layout`). */
async function tarHolds(file: string, entry: string): Promise<boolean> {
  const names = (await exec('tar', ['-tf', file])).split('\n');
  return names.some((name) => name === entry || name === `./${entry}`);
}
