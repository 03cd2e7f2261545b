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
import { CredentialCache, cacheExpiry, cacheKeyFor, withServiceAccountKey } from './pluginCache.ts';
import {
  type CredentialProvider,
  type CredentialProviderConfig,
  ConfigDecodeError,
  decodeCredentialProviderConfig,
  mergeCredentialProviderConfigs,
  validateCredentialProviderConfig,
} from './pluginConfig.ts';
import { PLUGIN_TIMEOUT_MS, execPlugin } from './pluginExec.ts';
import { type AuthEntry, type CredentialProviderResponse, cacheKeyTypeOf } from './pluginProtocol.ts';
import {
  type PodPullContext,
  type ServiceAccountCoordinates,
  RequiredAnnotationNotFoundError,
  requestAnnotations,
  serviceAccountCacheKey,
  singleFlightKey,
} from './pluginServiceAccount.ts';
import { urlsMatchStr } from './urlGlob.ts';

export type { AuthEntry } from './pluginProtocol.ts';
export type { PodPullContext, ServiceAccountCoordinates } from './pluginServiceAccount.ts';

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
   * else cached ones, else its plugin's (none when the plugin fails: the error is logged). A
   * provider in service-account token mode reads the pod's ServiceAccount and requests its token
   * first (plugin.go pluginProvider.provide); its credentials carry the account's coordinates.
   */
  provide(image: string, pod?: PodPullContext): Promise<AuthEntry[]> {
    if (!this.config.matchImages.some((matchImage) => urlsMatchStr(matchImage, image))) return Promise.resolve([]);
    // Without token mode the plugin starts before this returns, so its deadline is already on the clock.
    const answer = this.config.tokenAttributes === null ? this.credentials(image, null) : this.credentialsForPod(image, pod);
    return answer.catch((error: unknown) => this.failed(image, error, pod));
  }

  private async credentialsForPod(image: string, pod: PodPullContext | undefined): Promise<AuthEntry[]> {
    const account = await this.serviceAccountRequest(pod);
    if (account === 'skip') return [];
    const auth = await this.credentials(image, account);
    return account === null ? auth : auth.map((entry) => ({ ...entry, serviceAccount: account.coordinates }));
  }

  /**
   * What token mode adds for this pod (plugin.go provide, before the cache): null when the provider
   * is not in token mode, or the pod has no service account and the provider runs without one;
   * 'skip' when it requires one the pod lacks, or the account lacks a required annotation.
   */
  private async serviceAccountRequest(pod: PodPullContext | undefined): Promise<ServiceAccountRequest | null | 'skip'> {
    const attributes = this.config.tokenAttributes;
    if (attributes === null) return null;
    const name = pod?.serviceAccountName ?? '';
    if (pod === undefined || name === '') return attributes.requireServiceAccount === true ? 'skip' : null;
    const account = await pod.serviceAccount(pod.namespace, name);
    if (account === null) throw new Error(`failed to get service account: serviceaccounts ${JSON.stringify(name)} not found`);
    let annotations: Record<string, string>;
    try {
      annotations = requestAnnotations(attributes, account.annotations);
    } catch (error) {
      // A required annotation is how a workload opts in: without it the plugin is not run, quietly.
      if (error instanceof RequiredAnnotationNotFoundError) return 'skip';
      throw error;
    }
    let token: string;
    try {
      token = await pod.token({ namespace: pod.namespace, serviceAccount: name, audience: attributes.serviceAccountTokenAudience, podName: pod.name, podUid: pod.uid });
    } catch (error) {
      throw new Error(`failed to get service account token: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    const coordinates = { uid: account.uid, namespace: pod.namespace, name };
    return { coordinates, token, annotations, cacheKey: serviceAccountCacheKey(attributes.cacheType, coordinates, annotations, token) };
  }

  /** From the cache, else from the plugin: one exec at a time per image (and token and annotations). */
  private async credentials(image: string, account: ServiceAccountRequest | null): Promise<AuthEntry[]> {
    const serviceAccountKey = account?.cacheKey ?? '';
    const cached = this.cache.lookup(image, serviceAccountKey);
    if (cached !== undefined) return cached;
    const flightKey = account === null ? image : singleFlightKey(image, account.token, account.annotations);
    let flight = this.inFlight.get(flightKey);
    if (flight === undefined) {
      const started = execPlugin(
        { name: this.config.name, binDir: this.binDir, apiVersion: this.config.apiVersion, args: this.config.args, env: this.config.env },
        image,
        { clock: this.clock, timeoutMs: this.options.timeoutMs ?? PLUGIN_TIMEOUT_MS, environ: this.options.environ ?? process.env },
        account === null ? undefined : { token: account.token, annotations: account.annotations },
      );
      flight = started;
      this.inFlight.set(flightKey, started);
      const done = () => this.inFlight.delete(flightKey);
      started.then(done, done);
    }
    let response: CredentialProviderResponse;
    try {
      response = await flight;
    } catch (error) {
      throw new Error(`failed to get credential from external registry credential provider: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    return this.accept(image, response, account);
  }

  /** A response's credentials, cached as it says (plugin.go provide after the exec). */
  private accept(image: string, response: CredentialProviderResponse, account: ServiceAccountRequest | null): AuthEntry[] {
    if (account !== null && account.token !== '' && this.config.tokenAttributes?.cacheType !== 'Token' && response.auth.some((entry) => entry.password === account.token)) {
      throw new Error("credential provider plugin returned the service account token as the password which is not allowed when service account cache type is not set to 'Token'");
    }
    const key = withServiceAccountKey(cacheKeyFor(cacheKeyTypeOf(response), image), account?.cacheKey ?? '');
    const expiresAt = cacheExpiry(response, this.config.defaultCacheDurationMs ?? 0, this.clock.now());
    if (expiresAt !== null) this.cache.store(key, response.auth, expiresAt);
    return response.auth;
  }

  /**
   * No credentials; the reason logged with the provider and the image (and the pod, in token
   * mode), never a token or a response's content (plugin.go perPodPluginProvider.provideWithCoordinates).
   */
  private failed(image: string, error: unknown, pod: PodPullContext | undefined): AuthEntry[] {
    const podFields = this.config.tokenAttributes !== null && pod !== undefined
      ? { pod: `${pod.namespace}/${pod.name}`, podUID: pod.uid, serviceAccount: `${pod.namespace}/${pod.serviceAccountName}` }
      : {};
    this.log('error', 'Failed to provide credentials for image', {
      provider: this.config.name,
      image,
      ...podFields,
      err: error instanceof Error ? error.message : String(error),
    });
    return [];
  }
}

/** What a provider in token mode sends and caches under for one pod. */
interface ServiceAccountRequest {
  coordinates: ServiceAccountCoordinates;
  token: string;
  annotations: Record<string, string>;
  cacheKey: string;
}

/** The registered providers, asked in their config order. */
export class CredentialProviderPlugins {
  constructor(readonly providers: readonly PluginProvider[]) {}

  /**
   * Every provider's credentials for `image` (the normalized repository the keyring looks up,
   * e.g. `docker.io/library/busybox`), in config order, each with the key the plugin gave it under.
   */
  async credentialsFor(image: string, pod?: PodPullContext): Promise<AuthEntry[]> {
    const answers = await Promise.all(this.providers.map((provider) => provider.provide(image, pod)));
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
