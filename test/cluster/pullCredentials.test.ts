/**
 * Private images through a real kube-apiserver + etcd, statelet as the node, on sim:// (a private
 * registry of the simulated runtime) and on a private containerd 1.6 pulling from a real registry
 * (distribution with htpasswd over TLS, test/support/registry.ts), with one story on both:
 *   - a pod whose `imagePullSecrets` name a `kubernetes.io/dockerconfigjson` Secret with the
 *     registry's login pulls its private image and runs;
 *   - a pod without that Secret cannot start from the image the first pod pulled
 *     (`IfNotPresent`, the default imagePullCredentialsVerificationPolicy): it pulls without
 *     credentials and fails with ErrImagePull in the runtime's words (the registry's 401), then
 *     ImagePullBackOff; under `Never` it is ErrImageNeverPull, as if the image were absent;
 *   - a pod naming a Secret that does not exist gets FailedToRetrieveImagePullSecret, and its pull
 *     is tried all the same;
 *   - images under the plugin's path pull with a credential provider plugin's credentials (a small
 *     executable written here, `--image-credential-provider-config`): one exec serves a second
 *     pull within its cache duration, and the plugin is asked again once that has passed.
 * Outside CI the containerd part skips loudly where containerd, root or Go is missing.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type CoreV1Event, RbacAuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { startContainerd } from '../containerd/harness.ts';
import { clusterNode } from '../support/clusterNode.ts';
import { type ControlPlane, pods, waitFor } from '../support/controlPlane.ts';
import { type Registry, startRegistry } from '../support/registry.ts';

const longRunning = "trap 'exit 0' TERM; while true; do sleep 1; done";
/** The plugin's cache duration: long enough for two pods' pulls, short enough to wait out. */
const PLUGIN_CACHE_SECONDS = 30;

/** The audience the token-mode plugin asks for, and the annotation a ServiceAccount opts in with. */
const TOKEN_AUDIENCE = 'registry.statelet.test';
const TOKEN_ROLE_ANNOTATION = 'registry.statelet.test/role';

/** What the token-mode plugin was sent: the image, the token's claims, the annotations. */
interface TokenExec {
  image: string;
  claims: { aud: string | string[]; sub: string; 'kubernetes.io'?: { namespace: string; pod?: { name: string } } } | null;
  annotations: Record<string, string> | null;
}

interface PrivateRegistry {
  /** `<host>` of the image references. */
  host: string;
  username: string;
  password: string;
  /** The private image the secret opens (`<host>/private/busybox:1`). */
  image: string;
  /** The private image the plugin's credentials open (`<host>/viaplugin/busybox:1`). */
  pluginImage: string;
  /** The private image the token-mode plugin's credentials open (`<host>/viasa/busybox:1`). */
  tokenImage: string;
}

interface Runtime {
  name: string;
  node: string;
  /** The agent's runtime endpoint (sim:// with its private registry, or containerd's socket). */
  endpoint(): string;
  registry(): PrivateRegistry;
}

/**
 * A credential provider plugin (credentialprovider.kubelet.k8s.io/v1): it answers every request
 * with the registry's login for its `viaplugin` path, and appends the image it was asked about to
 * a log, one line per exec.
 */
function credentialProvider(registry: () => PrivateRegistry): { config: string; binDir: string; execs(): string[]; tokenExecs(): TokenExec[] } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-credprovider-'));
  const binDir = path.join(dir, 'bin');
  mkdirSync(binDir);
  const log = path.join(dir, 'execs.log');
  writeFileSync(log, '');
  const plugin = path.join(binDir, 'test-credential-provider');
  const tokenLog = path.join(dir, 'token-execs.log');
  writeFileSync(tokenLog, '');
  const tokenPlugin = path.join(binDir, 'token-credential-provider');
  const config = path.join(dir, 'config.yaml');
  return {
    binDir,
    execs: () => readFileSync(log, 'utf8').split('\n').filter(Boolean),
    tokenExecs: () => readFileSync(tokenLog, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as TokenExec),
    // Written when the agent starts: the registry's address is known by then.
    get config() {
      const r = registry();
      const key = `${r.host}/viaplugin`;
      const script = `#!${process.execPath}
const fs = require('node:fs');
const request = JSON.parse(fs.readFileSync(0, 'utf8'));
fs.appendFileSync(${JSON.stringify(log)}, request.image + '\\n');
process.stdout.write(JSON.stringify({
  apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
  kind: 'CredentialProviderResponse',
  cacheKeyType: 'Registry',
  cacheDuration: '${PLUGIN_CACHE_SECONDS}s',
  auth: { ${JSON.stringify(key)}: { username: ${JSON.stringify(r.username)}, password: ${JSON.stringify(r.password)} } },
}));
`;
      writeFileSync(plugin, script);
      chmodSync(plugin, 0o755);
      // The token-mode plugin gives the login only for a token of its audience; it logs the
      // token's claims (never the token) and the annotations it was sent.
      const tokenKey = `${r.host}/viasa`;
      const tokenScript = `#!${process.execPath}
const fs = require('node:fs');
const request = JSON.parse(fs.readFileSync(0, 'utf8'));
const claims = request.serviceAccountToken ? JSON.parse(Buffer.from(request.serviceAccountToken.split('.')[1], 'base64url').toString()) : null;
fs.appendFileSync(${JSON.stringify(tokenLog)}, JSON.stringify({ image: request.image, claims, annotations: request.serviceAccountAnnotations ?? null }) + '\\n');
const allowed = claims !== null && [].concat(claims.aud).includes(${JSON.stringify(TOKEN_AUDIENCE)});
process.stdout.write(JSON.stringify({
  apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
  kind: 'CredentialProviderResponse',
  cacheKeyType: 'Image',
  cacheDuration: '0s',
  auth: allowed ? { ${JSON.stringify(tokenKey)}: { username: ${JSON.stringify(r.username)}, password: ${JSON.stringify(r.password)} } } : {},
}));
`;
      writeFileSync(tokenPlugin, tokenScript);
      chmodSync(tokenPlugin, 0o755);
      writeFileSync(
        config,
        `apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: test-credential-provider\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  matchImages: [${JSON.stringify(key)}]\n  defaultCacheDuration: 1m\n` +
          `- name: token-credential-provider\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  matchImages: [${JSON.stringify(tokenKey)}]\n  defaultCacheDuration: 1m\n` +
          `  tokenAttributes:\n    serviceAccountTokenAudience: ${TOKEN_AUDIENCE}\n    cacheType: ServiceAccount\n    requireServiceAccount: true\n    requiredServiceAccountAnnotationKeys: [${TOKEN_ROLE_ANNOTATION}]\n`,
      );
      return config;
    },
  };
}

function definePullCredentialScenarios(runtime: Runtime, cluster: ReturnType<typeof clusterNode>, plugin: ReturnType<typeof credentialProvider>): void {
  const events = async (cp: ControlPlane, namespace: string): Promise<CoreV1Event[]> => (await cp.core.listNamespacedEvent({ namespace })).items;
  const waiting = (p: V1Pod | null) => p?.status?.containerStatuses?.[0]?.state?.waiting;
  const running = (p: V1Pod | null) => !!p?.status?.containerStatuses?.[0]?.state?.running;
  const pod = (name: string, image: string, spec: Partial<V1Pod['spec']> = {}, pullPolicy = 'IfNotPresent'): V1Pod => ({
    metadata: { name },
    spec: { nodeName: runtime.node, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image, imagePullPolicy: pullPolicy, command: ['sh', '-c', longRunning] }], ...spec },
  });
  const pullSecret = async (cp: ControlPlane, namespace: string): Promise<void> => {
    const r = runtime.registry();
    const auth = Buffer.from(`${r.username}:${r.password}`).toString('base64');
    const dockerconfig = JSON.stringify({ auths: { [r.host]: { username: r.username, password: r.password, auth } } });
    await cp.core.createNamespacedSecret({ namespace, body: { metadata: { name: 'registry-login' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.from(dockerconfig).toString('base64') } } });
  };
  // The runtime's refusal of a pull without the registry's login: the registry's 401 (containerd 1.6, remotes/docker/resolver.go).
  const refusal = () => {
    const { host, image } = runtime.registry();
    return `failed to pull and unpack image "${image}": failed to resolve reference "${image}": pulling from host ${host} failed with status code [manifests 1]: 401 Unauthorized`;
  };

  describe(`private images on ${runtime.name} (a real API server)`, () => {
    it('pulls with the pod’s secret; a pod without it cannot start from the same image (IfNotPresent: ErrImagePull, then ImagePullBackOff; Never: ErrImageNeverPull)', { timeout: 240_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const { image } = runtime.registry();
      const namespace = await cp.namespace('pullsecret');
      await pullSecret(cp, namespace);
      await cp.core.createNamespacedPod({ namespace, body: pod('with-secret', image, { imagePullSecrets: [{ name: 'registry-login' }] }) });
      await cp.waitFor<V1Pod>(pods(namespace), 'with-secret', running, 120_000);

      await cp.core.createNamespacedPod({ namespace, body: pod('without-secret', image) });
      const refused = await cp.waitFor<V1Pod>(pods(namespace), 'without-secret', (p) => waiting(p)?.reason === 'ErrImagePull', 90_000);
      expect(waiting(refused)?.message).toBe(refusal());
      await cp.waitFor<V1Pod>(pods(namespace), 'without-secret', (p) => waiting(p)?.reason === 'ImagePullBackOff', 90_000);
      const failed = (await events(cp, namespace)).find((e) => e.involvedObject.name === 'without-secret' && e.reason === 'Failed');
      expect(failed?.message).toBe(`Failed to pull image "${image}": ${refusal()}`);

      await cp.core.createNamespacedPod({ namespace, body: pod('never-pull', image, {}, 'Never') });
      const never = await cp.waitFor<V1Pod>(pods(namespace), 'never-pull', (p) => waiting(p)?.reason === 'ErrImageNeverPull', 90_000);
      expect(waiting(never)?.message).toBe(`Container image "${image}" is not present with pull policy of Never`);
      const withSecret = await cp.core.readNamespacedPod({ namespace, name: 'with-secret' });
      expect(running(withSecret)).toBe(true);
      // No credential reaches an event.
      for (const e of await events(cp, namespace)) expect(e.message ?? '').not.toContain(runtime.registry().password);
    });

    it('warns of a pull secret that does not exist (FailedToRetrieveImagePullSecret) and tries the pull all the same', { timeout: 120_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const { image } = runtime.registry();
      const namespace = await cp.namespace('missingsecret');
      await cp.core.createNamespacedPod({ namespace, body: pod('missing-secret', image, { imagePullSecrets: [{ name: 'not-there' }] }, 'Always') });
      await waitFor(
        async () =>
          (await events(cp, namespace)).some(
            (e) =>
              e.reason === 'FailedToRetrieveImagePullSecret' &&
              e.type === 'Warning' &&
              e.message === 'Unable to retrieve some image pull secrets (not-there); attempting to pull the image may not succeed.',
          ),
        'the FailedToRetrieveImagePullSecret event',
        90_000,
      );
      const refused = await cp.waitFor<V1Pod>(pods(namespace), 'missing-secret', (p) => waiting(p)?.reason === 'ErrImagePull', 90_000);
      expect(waiting(refused)?.message).toBe(refusal());
    });

    it('pulls with a credential provider plugin’s credentials: cached for a second pull, asked again after its cache duration', { timeout: 180_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const { pluginImage } = runtime.registry();
      const namespace = await cp.namespace('credplugin');
      // The plugin is asked about the repository, without the tag (kuberuntime_image.go PullImage: the keyring looks up repoToPull).
      const repository = pluginImage.slice(0, pluginImage.lastIndexOf(':'));
      const asked = () => plugin.execs().filter((image) => image === repository).length;
      // Always: each pod pulls, and so asks the keyring for credentials. The plugin's answer is
      // cached from its exec, which comes after `created`: both pods running before `created` + the
      // cache duration pulled within it.
      const created = Date.now();
      await cp.core.createNamespacedPod({ namespace, body: pod('first', pluginImage, {}, 'Always') });
      await cp.waitFor<V1Pod>(pods(namespace), 'first', running, 120_000);
      expect(asked()).toBe(1);
      await cp.core.createNamespacedPod({ namespace, body: pod('second', pluginImage, {}, 'Always') });
      await cp.waitFor<V1Pod>(pods(namespace), 'second', running, 120_000);
      expect(Date.now() - created, 'both pods pulled within the cache duration').toBeLessThan(PLUGIN_CACHE_SECONDS * 1000);
      expect(asked()).toBe(1);
      const cachedUntil = Date.now();
      await waitFor(async () => Date.now() - cachedUntil > PLUGIN_CACHE_SECONDS * 1000, 'the plugin’s cache duration to pass', 60_000);
      const before = asked();
      await cp.core.createNamespacedPod({ namespace, body: pod('third', pluginImage, {}, 'Always') });
      await cp.waitFor<V1Pod>(pods(namespace), 'third', running, 120_000);
      expect(asked()).toBe(before + 1);
    });

    it('pulls with a token-mode plugin: it gets a token of the pod’s service account for its audience and the account’s annotations; an account without the annotation gets nothing', { timeout: 180_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const { tokenImage } = runtime.registry();
      const namespace = await cp.namespace('credtoken');
      await cp.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'builder', annotations: { [TOKEN_ROLE_ANNOTATION]: 'puller' } } } });
      // NodeRestriction lets a node request a token for another audience only when RBAC allows it
      // (plugin/pkg/admission/noderestriction/admission.go validateNodeServiceAccountAudience).
      const rbac = cp.admin.makeApiClient(RbacAuthorizationV1Api);
      await rbac.createNamespacedRole({
        namespace,
        body: { metadata: { name: 'registry-audience' }, rules: [{ apiGroups: [''], resources: [TOKEN_AUDIENCE], verbs: ['request-serviceaccounts-token-audience'], resourceNames: ['builder'] }] },
      });
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name: 'registry-audience' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'registry-audience' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: `system:node:${runtime.node}` }],
        },
      });
      await cp.core.createNamespacedPod({ namespace, body: pod('with-account', tokenImage, { serviceAccountName: 'builder' }, 'Always') });
      await cp.waitFor<V1Pod>(pods(namespace), 'with-account', running, 120_000);
      const repository = tokenImage.slice(0, tokenImage.lastIndexOf(':'));
      const sent = plugin.tokenExecs().filter((exec) => exec.image === repository && exec.claims?.['kubernetes.io']?.namespace === namespace);
      expect(sent).toHaveLength(1);
      expect([sent[0]!.claims!.aud].flat()).toEqual([TOKEN_AUDIENCE]);
      expect(sent[0]!.claims!.sub).toBe(`system:serviceaccount:${namespace}:builder`);
      expect(sent[0]!.claims!['kubernetes.io']?.pod?.name).toBe('with-account');
      expect(sent[0]!.annotations).toEqual({ [TOKEN_ROLE_ANNOTATION]: 'puller' });

      // The namespace's default account lacks the required annotation: the plugin is not run, and the pull has no login.
      const execs = plugin.tokenExecs().length;
      await cp.core.createNamespacedPod({ namespace, body: pod('without-annotation', tokenImage, {}, 'Always') });
      await cp.waitFor<V1Pod>(pods(namespace), 'without-annotation', (p) => waiting(p)?.reason === 'ErrImagePull', 90_000);
      expect(plugin.tokenExecs()).toHaveLength(execs);
    });
  });
}

const SIM_NODE = 'node-pullcreds-sim';
describe('private images on sim://', () => {
  const simRegistry: PrivateRegistry = {
    host: 'private.example.com',
    username: 'reader',
    password: 'sim-s3cret',
    image: 'private.example.com/private/busybox:1',
    pluginImage: 'private.example.com/viaplugin/busybox:1',
    tokenImage: 'private.example.com/viasa/busybox:1',
  };
  const registries = path.join(mkdtempSync(path.join(os.tmpdir(), 'statelet-pullcreds-sim-')), 'registries.json');
  writeFileSync(registries, JSON.stringify({ [simRegistry.host]: { username: simRegistry.username, password: simRegistry.password } }));
  const plugin = credentialProvider(() => simRegistry);
  const cluster = clusterNode({
    node: SIM_NODE,
    args: () => [`--container-runtime-endpoint=sim://?registryAuth=${registries}`, `--image-credential-provider-config=${plugin.config}`, `--image-credential-provider-bin-dir=${plugin.binDir}`],
  });
  definePullCredentialScenarios({ name: 'sim://', node: SIM_NODE, endpoint: () => 'sim://', registry: () => simRegistry }, cluster, plugin);
});

const CONTAINERD_NODE = 'node-pullcreds-containerd';
const containerd = await startContainerd();
const registry: Registry | null = containerd ? await startRegistry() : null;
if (!containerd || !registry) {
  it.skip('private images on containerd (containerd or the registry not available here; see the message above)', () => {});
  await containerd?.stop();
} else {
  afterAll(async () => {
    await containerd.stop();
    await registry.stop();
  }, 180_000);
  await containerd.trustRegistry(registry.host, registry.caFile);
  await registry.pushBusybox('private/busybox:1');
  await registry.pushBusybox('viaplugin/busybox:1');
  await registry.pushBusybox('viasa/busybox:1');
  const real: PrivateRegistry = {
    host: registry.host,
    username: registry.username,
    password: registry.password,
    image: `${registry.host}/private/busybox:1`,
    pluginImage: `${registry.host}/viaplugin/busybox:1`,
    tokenImage: `${registry.host}/viasa/busybox:1`,
  };
  describe('private images on containerd', () => {
    const plugin = credentialProvider(() => real);
    const cluster = clusterNode({
      node: CONTAINERD_NODE,
      args: () => [`--container-runtime-endpoint=${containerd.endpoint}`, `--image-credential-provider-config=${plugin.config}`, `--image-credential-provider-bin-dir=${plugin.binDir}`],
    });
    definePullCredentialScenarios({ name: 'containerd', node: CONTAINERD_NODE, endpoint: () => containerd.endpoint, registry: () => real }, cluster, plugin);
  });
}
