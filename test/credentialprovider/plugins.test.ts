/**
 * Credential provider plugins end to end (src/credentialprovider/plugins.ts;
 * pkg/credentialprovider/plugin/plugin.go RegisterCredentialProviderPlugins, pluginProvider.provide,
 * execPlugin.ExecPlugin): a small provider executable written for each test into a temporary bin
 * directory, registered from a config file, run through the exec protocol. Time is a simulated
 * clock: cache expiry and the exec deadline are driven by it, never waited for.
 */
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SimulatedClock } from 'xstate';
import { afterEach, describe, expect, it } from 'vitest';
import { PLUGIN_TIMEOUT_MS } from '../../src/credentialprovider/pluginExec.ts';
import { CACHE_PURGE_INTERVAL_MS, CredentialCache } from '../../src/credentialprovider/pluginCache.ts';
import { type CredentialProviderPlugins, registerCredentialProviderPlugins } from '../../src/credentialprovider/plugins.ts';
import type { LogFields, LogLevel } from '../../src/log.ts';
import { ApiError } from '../../src/client/api.ts';
import { apiObjectReader } from '../../src/client/objects.ts';
import { TokenManager } from '../../src/volumes/tokens.ts';
import type { PodPullContext } from '../../src/credentialprovider/plugins.ts';
import type { Pod } from '../../src/api/types.ts';
import { podPullContext } from '../../src/kuberuntime/pullSecrets.ts';
import { MemoryApi } from '../support/memoryApi.ts';

const V1 = 'credentialprovider.kubelet.k8s.io/v1';
const MIN = 60_000;

/**
 * The test's plugin: records each request in $CALLS with its args, a variable from the config's
 * env, one inherited from the agent and one both set; then acts as $MODE says: answer $RESPONSE,
 * fail with stderr, print garbage, or hang.
 */
const PLUGIN = `#!${process.execPath}
const fs = require('node:fs');
let input = '';
process.stdin.on('data', (chunk) => (input += chunk));
process.stdin.on('end', () => {
  fs.appendFileSync(process.env.CALLS, JSON.stringify({ request: JSON.parse(input), args: process.argv.slice(2), fromConfig: process.env.FROM_CONFIG, inherited: process.env.INHERITED, overridden: process.env.OVERRIDDEN }) + '\\n');
  switch (process.env.MODE) {
    case 'fail': process.stderr.write('registry said no'); process.exit(3);
    case 'garbage': process.stdout.write('{"apiVersion": "${V1}", "kind": "CredentialProviderResponse", "auth": {'); return;
    case 'hang': setInterval(() => {}, 1000); return;
    default: process.stdout.write(process.env.RESPONSE);
  }
});
`;

interface ProviderSetup {
  name?: string;
  matchImages?: string[];
  defaultCacheDuration?: string;
  mode?: 'answer' | 'fail' | 'garbage' | 'hang';
  response?: Record<string, unknown>;
  /** Service-account token mode. */
  tokenAttributes?: Record<string, unknown>;
}

function response(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: V1,
    kind: 'CredentialProviderResponse',
    cacheKeyType: 'Image',
    auth: { 'registry.io': { username: 'robot', password: 'hunter2' } },
    ...fields,
  };
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-credprov-'));
  dirs.push(dir);
  return dir;
}

interface Harness {
  plugins: CredentialProviderPlugins;
  clock: SimulatedClock;
  /** The requests each provider's plugin was run with, in order. */
  calls(name?: string): { request: Record<string, unknown>; args: string[]; fromConfig: string; inherited: string; overridden: string }[];
  logs: { level: LogLevel; message: string; fields?: LogFields }[];
  /** Where a provider's executable is. */
  binary(name: string): string;
}

/** Writes the plugins and their config, and registers them on a simulated clock. */
async function setup(providers: ProviderSetup[], options: { timeoutMs?: number } = {}): Promise<Harness> {
  const dir = tempDir();
  const binDir = path.join(dir, 'bin');
  mkdirSync(binDir);
  const config = {
    apiVersion: 'kubelet.config.k8s.io/v1',
    kind: 'CredentialProviderConfig',
    providers: providers.map((provider) => {
      const name = provider.name ?? 'test-provider';
      writeFileSync(path.join(binDir, name), PLUGIN, { mode: 0o755 });
      return {
        name,
        matchImages: provider.matchImages ?? ['registry.io', '*.registry.io'],
        defaultCacheDuration: provider.defaultCacheDuration ?? '10m',
        apiVersion: V1,
        args: ['get-credentials', '--verbose'],
        ...(provider.tokenAttributes ? { tokenAttributes: provider.tokenAttributes } : {}),
        env: [
          { name: 'CALLS', value: path.join(dir, `${name}.calls`) },
          { name: 'MODE', value: provider.mode ?? 'answer' },
          { name: 'RESPONSE', value: JSON.stringify(provider.response ?? response()) },
          { name: 'FROM_CONFIG', value: 'config' },
          // The config's env overrides the inherited environment (plugin.go mergeEnvVars).
          { name: 'OVERRIDDEN', value: 'by-config' },
        ],
      };
    }),
  };
  const configPath = path.join(dir, 'config.yaml');
  writeFileSync(configPath, JSON.stringify(config));
  const clock = new SimulatedClock();
  const logs: Harness['logs'] = [];
  const plugins = await registerCredentialProviderPlugins(configPath, binDir, {
    clock,
    log: (level, message, fields) => logs.push({ level, message, ...(fields ? { fields } : {}) }),
    environ: { PATH: process.env.PATH, INHERITED: 'agent', OVERRIDDEN: 'agent' },
    ...options,
  });
  return {
    plugins,
    clock,
    logs,
    binary: (name) => path.join(binDir, name),
    calls: (name = 'test-provider') => {
      const file = path.join(dir, `${name}.calls`);
      if (!existsSync(file)) return [];
      return readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    },
  };
}

const robot = { matchKey: 'registry.io', username: 'robot', password: 'hunter2' };

describe('the exec protocol', () => {
  it('sends the request with the config args and env on top of the agent environment, and gives the auth entries with their keys', async () => {
    const h = await setup([{ response: response({ auth: { 'registry.io': { username: 'robot', password: 'hunter2' }, '*.registry.io': { username: 'r2', password: 'p2' } } }) }]);
    expect(await h.plugins.credentialsFor('registry.io/team/app')).toEqual([robot, { matchKey: '*.registry.io', username: 'r2', password: 'p2' }]);
    expect(h.calls()).toEqual([
      { request: { apiVersion: V1, kind: 'CredentialProviderRequest', image: 'registry.io/team/app' }, args: ['get-credentials', '--verbose'], fromConfig: 'config', inherited: 'agent', overridden: 'by-config' },
    ]);
  });

  it('does not run a plugin for an image its matchImages do not cover', async () => {
    const h = await setup([{ matchImages: ['registry.io:5000'] }]);
    expect(await h.plugins.credentialsFor('registry.io/app')).toEqual([]);
    expect(await h.plugins.credentialsFor('other.io/app')).toEqual([]);
    expect(h.calls()).toEqual([]);
    expect(await h.plugins.credentialsFor('registry.io:5000/app')).toEqual([robot]);
    expect(h.calls()).toHaveLength(1);
  });

  it('asks every provider in config order', async () => {
    const h = await setup([
      { name: 'first', response: response({ auth: { 'registry.io': { username: 'one', password: 'p1' } } }) },
      { name: 'second', response: response({ auth: { 'registry.io': { username: 'two', password: 'p2' } } }) },
    ]);
    expect((await h.plugins.credentialsFor('registry.io/app')).map((entry) => entry.username)).toEqual(['one', 'two']);
  });

  it('runs one exec for concurrent requests of the same image', async () => {
    const h = await setup([{}]);
    const answers = await Promise.all([h.plugins.credentialsFor('registry.io/app'), h.plugins.credentialsFor('registry.io/app'), h.plugins.credentialsFor('registry.io/other')]);
    expect(answers).toEqual([[robot], [robot], [robot]]);
    expect(h.calls().map((call) => call.request.image).sort()).toEqual(['registry.io/app', 'registry.io/other']);
  });

  it.each<[string, ProviderSetup, string]>([
    ['a response of another apiVersion', { response: response({ apiVersion: 'credentialprovider.kubelet.k8s.io/v1beta1' }) }, `failed to get credential from external registry credential provider: apiVersion from credential plugin response did not match expected apiVersion:${V1}, actual apiVersion:credentialprovider.kubelet.k8s.io/v1beta1`],
    ['malformed JSON', { mode: 'garbage' }, 'failed to get credential from external registry credential provider: error reading GVK from response: not valid JSON'],
    ['a response with an unknown field', { response: response({ extra: true }) }, 'failed to get credential from external registry credential provider: error decoding credential provider plugin response from stdout'],
    ['a response of another kind', { response: response({ kind: 'CredentialProviderRequest' }) }, 'failed to get credential from external registry credential provider: error decoding credential provider plugin response from stdout'],
    ['an invalid cacheKeyType', { response: response({ cacheKeyType: 'Pod' }) }, 'credential provider plugin did not return a valid cacheKeyType: "Pod"'],
    ['a failing plugin', { mode: 'fail' }, 'failed to get credential from external registry credential provider: error execing credential provider plugin test-provider for image registry.io/app: exit status 3: registry said no'],
  ])('gives no credentials for %s, and logs why with the provider and image but no credentials', async (_what, provider, message) => {
    const h = await setup([provider]);
    expect(await h.plugins.credentialsFor('registry.io/app')).toEqual([]);
    expect(h.logs).toEqual([
      { level: 'error', message: 'Failed to provide credentials for image', fields: { provider: 'test-provider', image: 'registry.io/app', err: message } },
    ]);
    expect(JSON.stringify(h.logs)).not.toContain('hunter2');
  });

  it('gives no credentials when the executable went away after registration', async () => {
    const h = await setup([{}]);
    rmSync(h.binary('test-provider'));
    expect(await h.plugins.credentialsFor('registry.io/app')).toEqual([]);
    expect(h.logs[0]?.fields?.err).toBe(`failed to get credential from external registry credential provider: error execing credential provider plugin test-provider for image registry.io/app: fork/exec ${h.binary('test-provider')}: no such file or directory: `);
  });

  it('kills a plugin that does not answer by its deadline (one minute), and gives no credentials', async () => {
    const h = await setup([{ mode: 'hang' }]);
    const answer = h.plugins.credentialsFor('registry.io/app');
    h.clock.increment(PLUGIN_TIMEOUT_MS);
    expect(await answer).toEqual([]);
    expect(h.logs[0]?.fields?.err).toBe('failed to get credential from external registry credential provider: error execing credential provider plugin test-provider for image registry.io/app: context deadline exceeded: ');
  });

  it('takes a shorter deadline when given one', async () => {
    const h = await setup([{ mode: 'hang' }], { timeoutMs: 5 });
    const answer = h.plugins.credentialsFor('registry.io/app');
    h.clock.increment(5);
    expect(await answer).toEqual([]);
    expect(String(h.logs[0]?.fields?.err)).toContain('context deadline exceeded');
  });
});

describe('the cache', () => {
  it.each<[string, string, string[], string[]]>([
    // cacheKeyType, first image, images answered from the cache, images that run the plugin again
    ['Image', 'registry.io/app', ['registry.io/app'], ['registry.io/other', 'team.registry.io/app']],
    ['Registry', 'registry.io/app', ['registry.io/app', 'registry.io/other'], ['team.registry.io/app']],
    ['Global', 'registry.io/app', ['registry.io/app', 'registry.io/other', 'team.registry.io/app'], []],
  ])('keeps cacheKeyType %s under its key', async (cacheKeyType, first, cached, asked) => {
    const h = await setup([{ response: response({ cacheKeyType }) }]);
    await h.plugins.credentialsFor(first);
    for (const image of cached) expect(await h.plugins.credentialsFor(image)).toEqual([robot]);
    expect(h.calls()).toHaveLength(1);
    for (const image of asked) expect(await h.plugins.credentialsFor(image)).toEqual([robot]);
    expect(h.calls().map((call) => call.request.image)).toEqual([first, ...asked]);
  });

  it.each<[string, ProviderSetup, number]>([
    // the provider's defaultCacheDuration is 10m unless set
    ["the response's cacheDuration", { response: response({ cacheDuration: '5m' }) }, 5 * MIN],
    ["the provider's defaultCacheDuration when the response has none", { defaultCacheDuration: '2m' }, 2 * MIN],
  ])('asks again once %s has passed', async (_what, provider, durationMs) => {
    const h = await setup([provider]);
    await h.plugins.credentialsFor('registry.io/app');
    h.clock.increment(durationMs);
    await h.plugins.credentialsFor('registry.io/app');
    expect(h.calls()).toHaveLength(1);
    h.clock.increment(1);
    await h.plugins.credentialsFor('registry.io/app');
    expect(h.calls()).toHaveLength(2);
  });

  it.each<[string, ProviderSetup]>([
    ['a cacheDuration of 0', { response: response({ cacheDuration: '0s' }) }],
    ['no cacheDuration and a defaultCacheDuration of 0', { defaultCacheDuration: '0s' }],
  ])('does not cache with %s', async (_what, provider) => {
    const h = await setup([provider]);
    await h.plugins.credentialsFor('registry.io/app');
    await h.plugins.credentialsFor('registry.io/app');
    expect(h.calls()).toHaveLength(2);
  });

  it('does not cache a failure', async () => {
    const h = await setup([{ mode: 'fail' }]);
    await h.plugins.credentialsFor('registry.io/app');
    await h.plugins.credentialsFor('registry.io/app');
    expect(h.calls()).toHaveLength(2);
  });

  it('purges expired entries every 15 minutes, whatever image is looked up', () => {
    let now = 0;
    const cache = new CredentialCache(() => now);
    cache.store('registry.io/app', [robot], 1 * MIN);
    cache.store('registry.io', [robot], 30 * MIN);
    now = CACHE_PURGE_INTERVAL_MS;
    expect(cache.lookup('other.io/app')).toBeUndefined();
    expect(cache.size).toBe(2); // not yet 15 minutes past the last purge
    now = CACHE_PURGE_INTERVAL_MS + 1;
    expect(cache.lookup('other.io/app')).toBeUndefined();
    expect(cache.size).toBe(1); // the expired entry went; the live one stays
    expect(cache.lookup('registry.io/app')).toEqual([robot]); // now from the registry's entry
  });
});

describe('registration', () => {
  const goodConfig = (name = 'test-provider') =>
    JSON.stringify({
      apiVersion: 'kubelet.config.k8s.io/v1',
      kind: 'CredentialProviderConfig',
      providers: [{ name, matchImages: ['registry.io'], defaultCacheDuration: '1m', apiVersion: V1 }],
    });

  function files(options: { config?: string; binary?: number | 'dir' } = {}): { configPath: string; binDir: string } {
    const dir = tempDir();
    const binDir = path.join(dir, 'bin');
    mkdirSync(binDir);
    if (options.binary === 'dir') mkdirSync(path.join(binDir, 'test-provider'));
    else if (options.binary !== undefined) writeFileSync(path.join(binDir, 'test-provider'), PLUGIN, { mode: options.binary });
    const configPath = path.join(dir, 'config.yaml');
    writeFileSync(configPath, options.config ?? goodConfig());
    return { configPath, binDir };
  }

  it('registers the providers of a good config', async () => {
    const { configPath, binDir } = files({ binary: 0o755 });
    const plugins = await registerCredentialProviderPlugins(configPath, binDir);
    expect(plugins.providers.map((provider) => provider.config.name)).toEqual(['test-provider']);
  });

  it('refuses a missing bin directory', async () => {
    const { configPath, binDir } = files({ binary: 0o755 });
    await expect(registerCredentialProviderPlugins(configPath, `${binDir}-gone`)).rejects.toThrow(`plugin binary directory ${binDir}-gone did not exist`);
  });

  it('refuses a missing executable', async () => {
    const { configPath, binDir } = files();
    await expect(registerCredentialProviderPlugins(configPath, binDir)).rejects.toThrow(`plugin binary executable ${path.join(binDir, 'test-provider')} did not exist`);
  });

  it.each([
    ['a file that is not executable', 0o644],
    ['a directory', 'dir' as const],
  ])('refuses %s in place of the executable', async (_what, binary) => {
    const { configPath, binDir } = files({ binary });
    const bin = path.join(binDir, 'test-provider');
    await expect(registerCredentialProviderPlugins(configPath, binDir)).rejects.toThrow(`error inspecting binary executable ${bin}: exec: "${bin}": permission denied`);
  });

  it('refuses a missing or empty config path', async () => {
    const { configPath, binDir } = files({ binary: 0o755 });
    await expect(registerCredentialProviderPlugins('', binDir)).rejects.toThrow('credential provider config path is empty');
    await expect(registerCredentialProviderPlugins(`${configPath}.gone`, binDir)).rejects.toThrow(`unable to access path "${configPath}.gone": stat ${configPath}.gone: no such file or directory`);
  });

  it('refuses a config that does not decode, naming the file', async () => {
    const { configPath, binDir } = files({ binary: 0o755, config: goodConfig().replace('"providers"', '"provider"') });
    await expect(registerCredentialProviderPlugins(configPath, binDir)).rejects.toThrow(`error decoding config "${configPath}": strict decoding error: unknown field "provider"`);
  });

  it('refuses an invalid config with every error, as the kubelet aggregates them', async () => {
    const config = JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1', kind: 'CredentialProviderConfig', providers: [{ name: 'test-provider', apiVersion: V1 }] });
    const { configPath, binDir } = files({ binary: 0o755, config });
    await expect(registerCredentialProviderPlugins(configPath, binDir)).rejects.toThrow(
      'failed to validate credential provider config: [providers.matchImages: Required value: at least 1 item in matchImages is required, providers.defaultCacheDuration: Required value]',
    );
  });

  it('reads a directory of configs in name order, and refuses a provider named twice', async () => {
    const { configPath, binDir } = files({ binary: 0o755 });
    writeFileSync(path.join(binDir, 'another'), PLUGIN, { mode: 0o755 });
    const configDir = path.join(path.dirname(configPath), 'conf.d');
    mkdirSync(configDir);
    writeFileSync(path.join(configDir, '20-test.json'), goodConfig());
    writeFileSync(path.join(configDir, '10-another.yaml'), goodConfig('another'));
    writeFileSync(path.join(configDir, 'README.md'), 'not a config');
    const plugins = await registerCredentialProviderPlugins(configDir, binDir);
    expect(plugins.providers.map((provider) => provider.config.name)).toEqual(['another', 'test-provider']);

    appendFileSync(path.join(configDir, '30-again.yml'), goodConfig());
    await expect(registerCredentialProviderPlugins(configDir, binDir)).rejects.toThrow('duplicate provider name "test-provider" found in configuration file(s)');
  });

  it('refuses a directory with no config files', async () => {
    const { configPath, binDir } = files({ binary: 0o755 });
    const empty = path.join(path.dirname(configPath), 'empty.d');
    mkdirSync(empty);
    await expect(registerCredentialProviderPlugins(empty, binDir)).rejects.toThrow(`no configuration files found in directory "${empty}"`);
  });
});

/**
 * Service-account token mode (plugin.go serviceAccountProvider, pluginProvider.provide): the pod's
 * ServiceAccount read from the in-memory API, its token requested through the node's token
 * manager, both handed to the plugin.
 */
describe('service-account token mode', () => {
  const tokens = (fields: Record<string, unknown> = {}) => ({
    serviceAccountTokenAudience: 'registry.io/audience',
    cacheType: 'ServiceAccount',
    requireServiceAccount: true,
    requiredServiceAccountAnnotationKeys: ['registry.io/role'],
    optionalServiceAccountAnnotationKeys: ['registry.io/team', 'registry.io/absent'],
    ...fields,
  });

  /** The cluster of the test: ServiceAccounts `builder` (uid sa-1) and `other` (uid sa-2) in `team`. */
  function cluster(clock: SimulatedClock) {
    const api = new MemoryApi();
    api.tokenClock = () => clock.now();
    const annotations = { 'registry.io/role': 'puller', 'registry.io/team': 'blue', 'unrelated.io/key': 'x' };
    api.serviceAccounts.set('team/builder', { metadata: { uid: 'sa-1', annotations } });
    api.serviceAccounts.set('team/other', { metadata: { uid: 'sa-2', annotations: { 'registry.io/role': 'other' } } });
    api.serviceAccounts.set('team/optedout', { metadata: { uid: 'sa-3', annotations: { 'registry.io/team': 'blue' } } });
    const objects = apiObjectReader(api, { ttlMs: 0, now: () => clock.now() });
    const tokenManager = new TokenManager(api, () => clock.now(), () => {}, () => 0);
    const podOf = (name: string, serviceAccountName: string | undefined, uid = `uid-${name}`): PodPullContext =>
      podPullContext({ metadata: { namespace: 'team', name, uid }, spec: { containers: [], ...(serviceAccountName === undefined ? {} : { serviceAccountName }) } } as Pod, {
        objects,
        tokens: tokenManager,
        services: () => null,
        runtimeClassHandler: () => null,
      });
    return { api, podOf };
  }

  it('sends the pod-bound token for the audience and the annotations asked for, and marks the credentials with the service account', async () => {
    const h = await setup([{ tokenAttributes: tokens() }]);
    const { api, podOf } = cluster(h.clock);
    const answer = await h.plugins.credentialsFor('registry.io/app', podOf('web', 'builder'));
    expect(answer).toEqual([{ ...robot, serviceAccount: { uid: 'sa-1', namespace: 'team', name: 'builder' } }]);
    expect(api.tokenRequests).toEqual([
      { namespace: 'team', serviceAccount: 'builder', spec: { audiences: ['registry.io/audience'], expirationSeconds: 3600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-web' } } },
    ]);
    expect(h.calls().map((call) => call.request)).toEqual([
      {
        kind: 'CredentialProviderRequest',
        apiVersion: V1,
        image: 'registry.io/app',
        serviceAccountToken: 'token-1',
        serviceAccountAnnotations: { 'registry.io/role': 'puller', 'registry.io/team': 'blue' },
      },
    ]);
  });

  it('caches by service account for cacheType ServiceAccount: another pod of the account is served from the cache, another account asks again', async () => {
    const h = await setup([{ tokenAttributes: tokens({ requiredServiceAccountAnnotationKeys: [] }) }]);
    const { podOf } = cluster(h.clock);
    await h.plugins.credentialsFor('registry.io/app', podOf('web-1', 'builder'));
    await h.plugins.credentialsFor('registry.io/app', podOf('web-2', 'builder'));
    expect(h.calls()).toHaveLength(1);
    expect(await h.plugins.credentialsFor('registry.io/app', podOf('job', 'other'))).toEqual([{ ...robot, serviceAccount: { uid: 'sa-2', namespace: 'team', name: 'other' } }]);
    expect(h.calls().map((call) => call.request.serviceAccountToken)).toEqual(['token-1', 'token-3']);
  });

  it('caches by token for cacheType Token: a pod with a new token asks the plugin again, the same token does not', async () => {
    const h = await setup([{ tokenAttributes: tokens({ cacheType: 'Token' }) }]);
    const { podOf } = cluster(h.clock);
    await h.plugins.credentialsFor('registry.io/app', podOf('web-1', 'builder'));
    await h.plugins.credentialsFor('registry.io/app', podOf('web-1', 'builder'));
    expect(h.calls()).toHaveLength(1);
    await h.plugins.credentialsFor('registry.io/app', podOf('web-2', 'builder'));
    expect(h.calls().map((call) => call.request.serviceAccountToken)).toEqual(['token-1', 'token-2']);
  });

  it('refuses credentials whose password is the token unless cacheType is Token, and logs it without the token', async () => {
    const echo = response({ auth: { 'registry.io': { username: 'robot', password: 'token-1' } } });
    const h = await setup([{ tokenAttributes: tokens(), response: echo }]);
    const { podOf } = cluster(h.clock);
    expect(await h.plugins.credentialsFor('registry.io/app', podOf('web', 'builder'))).toEqual([]);
    expect(h.logs.map((log) => log.fields?.err)).toEqual([
      "credential provider plugin returned the service account token as the password which is not allowed when service account cache type is not set to 'Token'",
    ]);
    expect(h.logs[0]?.fields).toMatchObject({ pod: 'team/web', podUID: 'uid-web', serviceAccount: 'team/builder' });

    const t = await setup([{ tokenAttributes: tokens({ cacheType: 'Token' }), response: echo }]);
    expect(await t.plugins.credentialsFor('registry.io/app', cluster(t.clock).podOf('web', 'builder'))).toEqual([
      { matchKey: 'registry.io', username: 'robot', password: 'token-1', serviceAccount: { uid: 'sa-1', namespace: 'team', name: 'builder' } },
    ]);
  });

  it('with requireServiceAccount, runs no plugin for a pod without a service account; without it, runs the plugin with no token', async () => {
    const required = await setup([{ tokenAttributes: tokens() }]);
    expect(await required.plugins.credentialsFor('registry.io/app', cluster(required.clock).podOf('static', undefined))).toEqual([]);
    expect(required.calls()).toEqual([]);
    expect(required.logs).toEqual([]);

    const optional = await setup([{ tokenAttributes: tokens({ requireServiceAccount: false, requiredServiceAccountAnnotationKeys: [] }) }]);
    const { api, podOf } = cluster(optional.clock);
    expect(await optional.plugins.credentialsFor('registry.io/app', podOf('static', undefined))).toEqual([robot]);
    expect(optional.calls().map((call) => call.request)).toEqual([{ kind: 'CredentialProviderRequest', apiVersion: V1, image: 'registry.io/app' }]);
    expect(api.tokenRequests).toEqual([]);
  });

  it('runs no plugin, quietly, for an account without a required annotation', async () => {
    const h = await setup([{ tokenAttributes: tokens() }]);
    const { api, podOf } = cluster(h.clock);
    expect(await h.plugins.credentialsFor('registry.io/app', podOf('web', 'optedout'))).toEqual([]);
    expect(h.calls()).toEqual([]);
    expect(api.tokenRequests).toEqual([]);
    expect(h.logs).toEqual([]);
  });

  it('gives no credentials for a missing service account or a refused token, logging the kubelet\'s reason', async () => {
    const h = await setup([{ tokenAttributes: tokens() }]);
    const { api, podOf } = cluster(h.clock);
    expect(await h.plugins.credentialsFor('registry.io/app', podOf('web', 'ghost'))).toEqual([]);
    api.failNext('createServiceAccountToken', new ApiError(403, 'Forbidden', 'serviceaccounts "builder" is forbidden', 'POST serviceaccounts/token team/builder'));
    expect(await h.plugins.credentialsFor('registry.io/app', podOf('web', 'builder'))).toEqual([]);
    expect(h.calls()).toEqual([]);
    expect(h.logs.map((log) => [log.message, log.fields?.err])).toEqual([
      ['Failed to provide credentials for image', 'failed to get service account: serviceaccounts "ghost" not found'],
      ['Failed to provide credentials for image', 'failed to get service account token: failed to fetch token: POST serviceaccounts/token team/builder: 403 Forbidden: serviceaccounts "builder" is forbidden'],
    ]);
  });
});
