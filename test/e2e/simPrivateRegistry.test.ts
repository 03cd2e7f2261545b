/**
 * The agent on `sim://?registryAuth=<file>`: the registries the file names are private. A pod with
 * no credentials for one waits with ErrImagePull in containerd 1.6's words, then ImagePullBackOff,
 * while a pod on a public registry runs; the node keeps its pulled-image records under
 * `<root-dir>/image_manager`; with a credential provider plugin that gives the registry's
 * credentials, the pod runs, and so it does with a `config.json` in the root dir. (A pod's pull
 * secrets need the API server: test/kuberuntime/podPullSecrets.test.ts.)
 */
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { simOptionsFromEndpoint } from '../../src/agent/agent.ts';
import { type SimAgent, startSimAgent } from '../support/inProcessAgent.ts';

const manifest = (name: string, image: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: default
spec:
  containers:
    - name: app
      image: ${image}
      imagePullPolicy: IfNotPresent
      command: [sleep, "3600"]
`;

let dir: string;
let sim: SimAgent;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-privreg-'));
  const registries = path.join(dir, 'registries.json');
  await writeFile(registries, JSON.stringify({ 'private.example.com': { username: 'reader', password: 's3cret' } }));
  sim = await startSimAgent('privreg', ['--container-runtime-endpoint', `sim://?registryAuth=${registries}`], {
    'private.yaml': manifest('private', 'private.example.com/team/app:1'),
    'public.yaml': manifest('public', 'public.example.com/team/app:1'),
  });
});

afterAll(async () => {
  await sim?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('sim:// with a private registry, through the agent', () => {
  it('a pod without credentials waits with containerd’s refusal; a public image runs', async () => {
    const pod = (name: string) => sim.agent.view.pods().find((p) => p.metadata.name === `${name}-privreg`);
    await vi.waitFor(() => expect(pod('public')?.status?.phase).toBe('Running'), { timeout: 20_000, interval: 50 });
    await vi.waitFor(
      () => {
        const waiting = pod('private')?.status?.containerStatuses?.[0]?.state.waiting;
        expect(['ErrImagePull', 'ImagePullBackOff']).toContain(waiting?.reason);
        expect(waiting?.message).toContain(
          'failed to resolve reference "private.example.com/team/app:1": pulling from host private.example.com failed with status code [manifests 1]: 401 Unauthorized',
        );
      },
      { timeout: 20_000, interval: 50 },
    );
    const rootDir = path.join(path.dirname(sim.manifests), 'root');
    expect(await readdir(path.join(rootDir, 'image_manager', 'pulled'))).toHaveLength(1);
  });
});

describe('credentials from a credential provider plugin', () => {
  it('a static pod on the private registry runs with the plugin’s credentials', async () => {
    const pluginDir = path.join(dir, 'plugin');
    const binDir = path.join(pluginDir, 'bin');
    await mkdir(binDir, { recursive: true });
    const response = JSON.stringify({
      apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
      kind: 'CredentialProviderResponse',
      cacheKeyType: 'Registry',
      auth: { 'private.example.com': { username: 'reader', password: 's3cret' } },
    });
    await writeFile(path.join(binDir, 'sim-registry-login'), `#!/bin/sh\ncat >/dev/null\necho '${response}'\n`, { mode: 0o755 });
    const config = path.join(pluginDir, 'providers.yaml');
    await writeFile(
      config,
      'apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - {name: sim-registry-login, matchImages: ["*.example.com"], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}\n',
    );
    const registries = path.join(dir, 'registries.json');
    const withPlugin = await startSimAgent(
      'plugin',
      ['--container-runtime-endpoint', `sim://?registryAuth=${registries}`, '--image-credential-provider-config', config, '--image-credential-provider-bin-dir', binDir],
      { 'private.yaml': manifest('private', 'private.example.com/team/app:1') },
    );
    try {
      const phase = () => withPlugin.agent.view.pods().find((p) => p.metadata.name === 'private-plugin')?.status?.phase;
      await vi.waitFor(() => expect(phase()).toBe('Running'), { timeout: 20_000, interval: 50 });
    } finally {
      await withPlugin.stop();
    }
  });
});

describe('credentials from the node’s docker config (config.go ReadDockerConfigFile)', () => {
  it('a static pod on the private registry runs with the config.json in its root dir; the image is recorded as open to the node’s pods', async () => {
    const rootDir = path.join(dir, 'node-config-root');
    await mkdir(rootDir, { recursive: true });
    await writeFile(path.join(rootDir, 'config.json'), JSON.stringify({ auths: { 'https://private.example.com': { auth: Buffer.from('reader:s3cret').toString('base64') } } }));
    const registries = path.join(dir, 'registries.json');
    const withConfig = await startSimAgent('nodecfg', ['--container-runtime-endpoint', `sim://?registryAuth=${registries}`, '--root-dir', rootDir], {
      'private.yaml': manifest('private', 'private.example.com/team/app:1'),
    });
    try {
      const phase = () => withConfig.agent.view.pods().find((p) => p.metadata.name === 'private-nodecfg')?.status?.phase;
      await vi.waitFor(() => expect(phase()).toBe('Running'), { timeout: 20_000, interval: 50 });
      const [record] = await readdir(path.join(rootDir, 'image_manager', 'pulled'));
      expect(JSON.parse(await readFile(path.join(rootDir, 'image_manager', 'pulled', record!), 'utf8'))).toMatchObject({
        credentialMapping: { 'private.example.com/team/app': { nodePodsAccessible: true } },
      });
    } finally {
      await withConfig.stop();
    }
  });
});

describe('sim:// endpoint settings', () => {
  it('refuses a registryAuth file that is missing or malformed, naming it and never its contents', async () => {
    expect(() => simOptionsFromEndpoint(`sim://?registryAuth=${path.join(dir, 'nope.json')}`)).toThrow(/cannot read registryAuth file .*nope\.json: ENOENT/);
    const bad = path.join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ 'r.example.com': { username: 'u', password: 12345 } }));
    expect(() => simOptionsFromEndpoint(`sim://?registryAuth=${bad}`)).toThrow(/the entry for "r.example.com" needs a username and a password/);
    expect(() => simOptionsFromEndpoint(`sim://?registryAuth=${bad}`)).not.toThrow(/12345/);
  });
});
