/**
 * Credential provider plugins (`--image-credential-provider-config`,
 * `--image-credential-provider-bin-dir`): executables that give image pull credentials, as on EKS,
 * GKE and AKS nodes. Registration reads and checks everything at startup, so a node with a broken
 * setup does not start (pkg/credentialprovider/plugin/plugin.go RegisterCredentialProviderPlugins,
 * config.go readCredentialProviderConfig); each provider then answers for the images its
 * `matchImages` cover, from its cache or by running its plugin once per image at a time
 * (plugin.go pluginProvider.provide, its singleflight group).
 *
 * `CredentialProviderPlugins.credentialsFor(image)` gives every provider's credentials for an image
 * with the keys the plugins gave them under; the keyring matches those keys against the image
 * (plugins.go externalCredentialProviderKeyring.Lookup adds them to a BasicDockerKeyring).
 */

import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { type Clock, realClock } from '../clock.ts';
import { type Logger, silentLogger } from '../log.ts';
import { aggregateErrors } from '../volumes/plan.ts';
import { CredentialCache, cacheExpiry, cacheKeyFor } from './pluginCache.ts';
import {
  type CredentialProvider,
  type CredentialProviderConfig,
  ConfigDecodeError,
  decodeCredentialProviderConfig,
  mergeCredentialProviderConfigs,
  unsupportedProviderSettings,
  validateCredentialProviderConfig,
} from './pluginConfig.ts';
import { PLUGIN_TIMEOUT_MS, execPlugin } from './pluginExec.ts';
import { type AuthEntry, type CredentialProviderResponse, cacheKeyTypeOf } from './pluginProtocol.ts';
import { urlsMatchStr } from './urlGlob.ts';

export type { AuthEntry } from './pluginProtocol.ts';

export interface PluginOptions {
  /** Reads the time for the cache and runs each exec's deadline. */
  clock?: Clock;
  log?: Logger;
  /** The deadline of one exec; the kubelet's one minute unless a test shortens it. */
  timeoutMs?: number;
  /** The environment plugins inherit; the agent's own by default. */
  environ?: NodeJS.ProcessEnv;
}

/** One configured provider: its matchImages, its cache, its plugin. */
export class PluginProvider {
  private readonly cache: CredentialCache;
  /** Execs under way by image: a second request for the image waits for the first's answer. */
  private readonly inFlight = new Map<string, Promise<CredentialProviderResponse>>();
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(
    readonly config: CredentialProvider,
    private readonly binDir: string,
    private readonly options: PluginOptions = {},
  ) {
    this.clock = options.clock ?? realClock;
    this.log = options.log ?? silentLogger;
    this.cache = new CredentialCache(() => this.clock.now());
  }

  /**
   * The credentials this provider gives for `image`: none unless a matchImages entry matches it;
   * else cached ones, else its plugin's (none when the plugin fails: the error is logged). Starts
   * the plugin before returning, so its deadline is already on the clock.
   */
  provide(image: string): Promise<AuthEntry[]> {
    if (!this.config.matchImages.some((matchImage) => urlsMatchStr(matchImage, image))) return Promise.resolve([]);
    const cached = this.cache.lookup(image);
    if (cached !== undefined) return Promise.resolve(cached);

    let flight = this.inFlight.get(image);
    if (flight === undefined) {
      const started = execPlugin(
        { name: this.config.name, binDir: this.binDir, apiVersion: this.config.apiVersion, args: this.config.args, env: this.config.env },
        image,
        { clock: this.clock, timeoutMs: this.options.timeoutMs ?? PLUGIN_TIMEOUT_MS, environ: this.options.environ ?? process.env },
      );
      flight = started;
      this.inFlight.set(image, started);
      const done = () => this.inFlight.delete(image);
      started.then(done, done);
    }
    return flight.then(
      (response) => this.accept(image, response),
      (error: unknown) => this.failed(image, error),
    );
  }

  /** A response's credentials, cached as it says (plugin.go provide after the exec). */
  private accept(image: string, response: CredentialProviderResponse): AuthEntry[] {
    let key: string;
    try {
      key = cacheKeyFor(cacheKeyTypeOf(response), image);
    } catch (error) {
      return this.failed(image, error);
    }
    const expiresAt = cacheExpiry(response, this.config.defaultCacheDurationMs ?? 0, this.clock.now());
    if (expiresAt !== null) this.cache.store(key, response.auth, expiresAt);
    return response.auth;
  }

  /** No credentials; the reason logged with the provider and the image, never a response's content. */
  private failed(image: string, error: unknown): AuthEntry[] {
    this.log('error', 'Failed getting credential from external registry credential provider', {
      provider: this.config.name,
      image,
      err: error instanceof Error ? error.message : String(error),
    });
    return [];
  }
}

/** The registered providers, asked in their config order. */
export class CredentialProviderPlugins {
  constructor(readonly providers: readonly PluginProvider[]) {}

  /**
   * Every provider's credentials for `image` (the normalized repository the keyring looks up,
   * e.g. `docker.io/library/busybox`), in config order, each with the key the plugin gave it under.
   */
  async credentialsFor(image: string): Promise<AuthEntry[]> {
    const answers = await Promise.all(this.providers.map((provider) => provider.provide(image)));
    return answers.flat();
  }
}

/**
 * Reads, checks and registers the providers (plugin.go RegisterCredentialProviderPlugins). Throws
 * with the kubelet's message when the bin directory, the config or a provider's executable is
 * missing or wrong; the kubelet exits then, and so does statelet.
 */
export async function registerCredentialProviderPlugins(configPath: string, binDir: string, options: PluginOptions = {}): Promise<CredentialProviderPlugins> {
  try {
    await stat(binDir);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') throw new Error(`plugin binary directory ${binDir} did not exist`);
    throw new Error(`error inspecting binary directory ${binDir}: ${pathError('stat', binDir, error)}`);
  }
  const config = await readCredentialProviderConfig(configPath);
  const errors = validateCredentialProviderConfig(config);
  if (errors.length > 0) throw new Error(`failed to validate credential provider config: ${aggregateErrors(errors)}`);
  const unsupported = unsupportedProviderSettings(config);
  if (unsupported.length > 0) throw new Error(`statelet cannot run this credential provider config: ${aggregateErrors(unsupported)}`);

  for (const provider of config.providers) await checkExecutable(path.join(binDir, provider.name));
  return new CredentialProviderPlugins(config.providers.map((provider) => new PluginProvider(provider, binDir, options)));
}

/**
 * config.go readCredentialProviderConfig: one file, or every `*.json`, `*.yaml`, `*.yml` file of a
 * directory in name order, their providers merged.
 */
export async function readCredentialProviderConfig(configPath: string): Promise<CredentialProviderConfig> {
  if (configPath === '') throw new Error('credential provider config path is empty');
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(configPath)).isDirectory();
  } catch (error) {
    throw new Error(`unable to access path ${JSON.stringify(configPath)}: ${pathError('stat', configPath, error)}`);
  }
  const files = isDirectory ? await configFilesIn(configPath) : [configPath];
  const configs: CredentialProviderConfig[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new Error(`unable to read file ${JSON.stringify(file)}: ${pathError('open', file, error)}`);
    }
    try {
      configs.push(decodeCredentialProviderConfig(text));
    } catch (error) {
      if (error instanceof ConfigDecodeError) throw new Error(`error decoding config ${JSON.stringify(file)}: ${error.message}`);
      throw error;
    }
  }
  return mergeCredentialProviderConfigs(configs);
}

async function configFilesIn(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    throw new Error(`unable to read directory ${JSON.stringify(dir)}: ${pathError('open', dir, error)}`);
  }
  const files = entries
    .filter((entry) => !entry.isDirectory() && ['.json', '.yaml', '.yml'].includes(path.extname(entry.name)))
    .map((entry) => path.join(dir, entry.name))
    .sort();
  if (files.length === 0) throw new Error(`no configuration files found in directory ${JSON.stringify(dir)}`);
  return files;
}

/**
 * exec.LookPath on the provider's path: it must exist and be an executable file. The kubelet's
 * message prints the path LookPath returned, which is empty on failure; statelet prints the path.
 */
async function checkExecutable(binary: string): Promise<void> {
  let info;
  try {
    info = await stat(binary);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') throw new Error(`plugin binary executable ${binary} did not exist`);
    throw new Error(`error inspecting binary executable ${binary}: exec: ${JSON.stringify(binary)}: ${pathError('stat', binary, error)}`);
  }
  if (info.isDirectory() || (info.mode & 0o111) === 0) {
    throw new Error(`error inspecting binary executable ${binary}: exec: ${JSON.stringify(binary)}: permission denied`);
  }
}

function errnoCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/** Go's *fs.PathError text (`stat /x: no such file or directory`) for a Node filesystem error. */
function pathError(op: string, file: string, error: unknown): string {
  const code = errnoCode(error);
  const reason =
    code === 'ENOENT' ? 'no such file or directory' : code === 'EACCES' ? 'permission denied' : code === 'ENOTDIR' ? 'not a directory' : error instanceof Error ? error.message : String(error);
  return `${op} ${file}: ${reason}`;
}
