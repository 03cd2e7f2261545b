/**
 * ensureImage with credentials on the simulated runtime's private registry: each matching
 * credential tried in order (kuberuntime_image.go PullImage), containerd's refusal when none
 * works, and the pulled-image records deciding whether a pod may use an image already present
 * (KubeletEnsureSecretPulledImages, image_pull_manager.go MustAttemptImagePull), across a restart.
 */
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type CredentialSource, type PullSecret, credentialsFor } from '../../src/credentialprovider/keyring.ts';
import type { PodPullContext } from '../../src/credentialprovider/plugins.ts';
import { dockerConfigCandidates, nodeDockerConfigSource } from '../../src/credentialprovider/nodeDockerConfig.ts';
import { ImagePuller, ensureImage } from '../../src/kuberuntime/images.ts';
import { type VerificationPolicy, parseAllowlist } from '../../src/kuberuntime/pullPolicy.ts';
import { FilePullRecords } from '../../src/kuberuntime/pullRecords.ts';
import { silentLogger } from '../../src/log.ts';
import { TestRuntime } from '../support/testRuntime.ts';

const REGISTRY = 'registry.example.com';
const PRIVATE = `${REGISTRY}/team/app:1`;
const GOOD = { username: 'reader', password: 's3cret' };

function secret(name: string, credential: { username: string; password: string }, uid = `uid-${name}`): PullSecret {
  const auths = { [REGISTRY]: credential };
  return { uid, namespace: 'shop', name, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.from(JSON.stringify({ auths })) } };
}

let rootDir: string;
beforeEach(async () => {
  rootDir = await mkdtemp(path.join(os.tmpdir(), 'statelet-pullcreds-'));
});
afterEach(async () => {
  await rm(rootDir, { recursive: true, force: true });
});

function node(runtime = new TestRuntime(), policy: VerificationPolicy = 'NeverVerifyPreloadedImages', allow: string[] = [], nodeKeyrings: CredentialSource[] = [], now?: () => number) {
  runtime.engine.requireRegistryCredentials(REGISTRY, GOOD);
  const allowlist = parseAllowlist(allow);
  if (typeof allowlist === 'string') throw new Error(allowlist);
  const records = new FilePullRecords({ rootDir, policy, allowlist, log: silentLogger, listImages: () => runtime.listImages(), ...(now ? { now } : {}) });
  const puller = new ImagePuller(runtime, 1);
  const events: string[] = [];
  const ensure = (podUid: string, secrets: PullSecret[], image = PRIVATE, imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never', backoff = {}, pod?: PodPullContext) =>
    ensureImage({
      images: runtime,
      puller,
      podUid,
      container: { name: 'app', image, ...(imagePullPolicy ? { imagePullPolicy } : {}) },
      backoff,
      nowMs: 1_000,
      record: (_type, reason, message) => void events.push(`${reason}: ${message}`),
      credentials: (normalized) => credentialsFor(secrets, normalized, nodeKeyrings, pod),
      records,
    });
  return { runtime, records, ensure, events };
}

describe('pulling with the pod’s credentials', () => {
  it('tries a wrong credential, then the right one: two PullImage calls, the image pulled', async () => {
    const { runtime, ensure } = node();
    const result = await ensure('pod-a', [secret('old', { username: 'reader', password: 'expired' }), secret('new', GOOD)]);
    expect(result.ok).toBe(true);
    expect(runtime.callLog('pullImage')).toHaveLength(2);
  });

  it('without a secret: ErrImagePull in containerd’s words, then ImagePullBackOff', async () => {
    const { ensure, events } = node();
    const first = await ensure('pod-a', []);
    expect(first).toMatchObject({
      ok: false,
      reason: 'ErrImagePull',
      message: `failed to pull and unpack image "${PRIVATE}": failed to resolve reference "${PRIVATE}": pulling from host ${REGISTRY} failed with status code [manifests 1]: 401 Unauthorized`,
    });
    expect(events).toContain(`Failed: Failed to pull image "${PRIVATE}": ${first.ok ? '' : first.message}`);
    const second = await ensure('pod-a', [], PRIVATE, undefined, first.backoff);
    expect(second).toMatchObject({ ok: false, reason: 'ImagePullBackOff' });
    expect(second.ok ? '' : second.message).toMatch(/^Back-off pulling image .*: ErrImagePull: .*401 Unauthorized$/);
  });

  it('with every credential wrong: each error once, aggregated as the kubelet writes them', async () => {
    const { ensure } = node();
    const result = await ensure('pod-a', [secret('a', { username: 'reader', password: 'x' }), secret('b', { username: 'other', password: 'y' })]);
    const refused = `failed to pull and unpack image "${PRIVATE}": failed to resolve reference "${PRIVATE}": pulling from host ${REGISTRY} failed with status code [manifests 1]: 401 Unauthorized`;
    // Both attempts fail with the same text: an aggregate of one distinct message is that message.
    expect(result).toMatchObject({ ok: false, reason: 'ErrImagePull', message: refused });
  });

  it('a secret that is not JSON fails the image with a message naming it, and no pull', async () => {
    const { runtime, ensure } = node();
    const bad: PullSecret = { uid: 'u', namespace: 'shop', name: 'broken', type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.from('{') } };
    const result = await ensure('pod-a', [bad]);
    expect(result).toMatchObject({ ok: false, reason: expect.stringMatching(/^invalid image pull secret "shop\/broken": \.dockerconfigjson: not valid JSON/) });
    expect(runtime.callLog('pullImage')).toEqual([]);
  });

  it('pods with different credentials never share one pull', async () => {
    const { runtime, ensure, events } = node();
    const hold = runtime.holdCalls('pullImage');
    const withSecret = ensure('pod-a', [secret('pull', GOOD)], PRIVATE, 'Always');
    const without = ensure('pod-b', [], PRIVATE, 'Always');
    // Both pods are at the puller while pod A's pull is held.
    await hold.whenPending(1);
    await vi.waitFor(() => expect(events.filter((e) => e.startsWith('Pulling:'))).toHaveLength(2));
    hold.releaseNext();
    expect((await withSecret).ok).toBe(true);
    await hold.whenPending(1);
    hold.releaseNext();
    expect(await without).toMatchObject({ ok: false, reason: 'ErrImagePull' });
    expect(runtime.callLog('pullImage')).toHaveLength(2);
  });
  it('a burst of pods on a missing image makes one pull and one intent file: those that come during the pull join it', async () => {
    const { runtime, ensure } = node();
    const hold = runtime.holdCalls('pullImage');
    const first = ensure('pod-0', [secret('pull', GOOD)], PRIVATE, 'IfNotPresent');
    await hold.whenPending(1);
    // The others arrive while the first pod's pull is held: each writes no intent of its own and waits for that pull.
    const others = Array.from({ length: 20 }, (_, i) => ensure(`pod-${i + 1}`, [secret('pull', GOOD)], PRIVATE, 'IfNotPresent'));
    await vi.waitFor(async () => expect(await readdir(path.join(rootDir, 'image_manager', 'pulling'))).toHaveLength(1));
    hold.releaseNext();
    const results = await Promise.all([first, ...others]);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(runtime.callLog('pullImage')).toHaveLength(1);
    // The intent is gone with the last pull it counted; the record stays.
    expect(await readdir(path.join(rootDir, 'image_manager', 'pulling'))).toEqual([]);
    expect(await readdir(path.join(rootDir, 'image_manager', 'pulled'))).toHaveLength(1);
  });
});

describe('a present image re-authorised per pod (imagePullCredentialsVerificationPolicy)', () => {
  it('pod B without the secret cannot use the image pod A pulled with it; pod C with it can, without a pull', async () => {
    const { runtime, ensure, events } = node();
    expect((await ensure('pod-a', [secret('pull', GOOD)], PRIVATE, 'IfNotPresent')).ok).toBe(true);
    const b = await ensure('pod-b', [], PRIVATE, 'IfNotPresent');
    expect(b).toMatchObject({ ok: false, reason: 'ErrImagePull', message: expect.stringContaining('401 Unauthorized') });
    const never = await ensure('pod-b', [], PRIVATE, 'Never');
    // Under Never the image is reported as absent: its presence is not revealed.
    expect(never).toMatchObject({ ok: false, reason: 'ErrImageNeverPull', message: `Container image "${PRIVATE}" is not present with pull policy of Never` });
    const pulls = runtime.callLog('pullImage').length;
    expect((await ensure('pod-c', [secret('pull', GOOD)], PRIVATE, 'IfNotPresent')).ok).toBe(true);
    expect(runtime.callLog('pullImage')).toHaveLength(pulls);
    expect(events.at(-1)).toBe(`Pulled: Container image "${PRIVATE}" already present on machine and can be accessed by the pod`);
  });

  it('the same credential in another secret (same hash) is accepted, and remembered', async () => {
    const { runtime, ensure } = node();
    await ensure('pod-a', [secret('pull', GOOD)], PRIVATE, 'IfNotPresent');
    const pulls = runtime.callLog('pullImage').length;
    expect((await ensure('pod-d', [secret('copy', GOOD, 'uid-copy')], PRIVATE, 'IfNotPresent')).ok).toBe(true);
    expect(runtime.callLog('pullImage')).toHaveLength(pulls);
    const [file] = await readdir(path.join(rootDir, 'image_manager', 'pulled'));
    const record = JSON.parse(await readFile(path.join(rootDir, 'image_manager', 'pulled', file!), 'utf8'));
    expect(record.credentialMapping[`${REGISTRY}/team/app`].kubernetesSecrets.map((s: { name: string }) => s.name)).toEqual(['copy', 'pull']);
  });

  it('preloaded images are free by default; AlwaysVerify makes a pod without credentials pull them', async () => {
    const runtime = new TestRuntime();
    runtime.addImage(PRIVATE);
    const preloaded = node(runtime);
    expect(await preloaded.ensure('pod-b', [], PRIVATE, 'IfNotPresent')).toMatchObject({ ok: true });
    await rm(rootDir, { recursive: true, force: true });
    const always = node(runtime, 'AlwaysVerify');
    expect(await always.ensure('pod-b', [], PRIVATE, 'IfNotPresent')).toMatchObject({ ok: false, reason: 'ErrImagePull' });
    expect(await always.ensure('pod-a', [secret('pull', GOOD)], PRIVATE, 'IfNotPresent')).toMatchObject({ ok: true });
  });

  it('NeverVerify lets any pod use what another pulled (the kubelet’s old behaviour)', async () => {
    const { ensure } = node(undefined, 'NeverVerify');
    await ensure('pod-a', [secret('pull', GOOD)], PRIVATE, 'IfNotPresent');
    expect(await ensure('pod-b', [], PRIVATE, 'IfNotPresent')).toMatchObject({ ok: true });
  });

  it('NeverVerifyAllowlistedImages frees only the allowlisted prefixes', async () => {
    const runtime = new TestRuntime();
    runtime.addImage(PRIVATE);
    runtime.addImage(`${REGISTRY}/other/app:1`);
    const { ensure } = node(runtime, 'NeverVerifyAllowlistedImages', [`${REGISTRY}/team/*`]);
    expect(await ensure('pod-b', [], PRIVATE, 'IfNotPresent')).toMatchObject({ ok: true });
    expect(await ensure('pod-b', [], `${REGISTRY}/other/app:1`, 'IfNotPresent')).toMatchObject({ ok: false, reason: 'ErrImagePull' });
  });

  it('an image pulled without credentials is open to every pod', async () => {
    const { ensure } = node();
    await ensure('pod-a', [], 'public.example.com/app:1', 'IfNotPresent');
    expect(await ensure('pod-b', [], 'public.example.com/app:1', 'IfNotPresent')).toMatchObject({ ok: true });
  });

  it('the records are files (0600, kubelet.config.k8s.io/v1alpha1, no credentials) and survive a restart', async () => {
    const first = node();
    await first.ensure('pod-a', [secret('pull', GOOD)], PRIVATE, 'IfNotPresent');
    const dir = path.join(rootDir, 'image_manager', 'pulled');
    const [file] = await readdir(dir);
    expect(file).toMatch(/^sha256-[0-9a-f]{64}$/);
    expect((await stat(path.join(dir, file!))).mode & 0o777).toBe(0o600);
    const text = await readFile(path.join(dir, file!), 'utf8');
    expect(JSON.parse(text)).toMatchObject({ kind: 'ImagePulledRecord', apiVersion: 'kubelet.config.k8s.io/v1alpha1' });
    expect(text).not.toContain(GOOD.password);
    expect(await readdir(path.join(rootDir, 'image_manager', 'pulling'))).toEqual([]);
    // A new agent on the same root dir and runtime: pod B still may not use the image.
    const restarted = node(first.runtime);
    expect(await restarted.ensure('pod-b', [], PRIVATE, 'IfNotPresent')).toMatchObject({ ok: false, reason: 'ErrImagePull' });
    expect(await restarted.ensure('pod-c', [secret('pull', GOOD)], PRIVATE, 'Never')).toMatchObject({ ok: true });
  });
});

describe('the node’s own docker config (config.go ReadDockerConfigFile)', () => {
  /** The node's config.json in its root dir; only the root dir is searched, so the machine's own files play no part. */
  async function nodeConfig(credential: { username: string; password: string }): Promise<CredentialSource> {
    await writeFile(path.join(rootDir, 'config.json'), JSON.stringify({ auths: { [REGISTRY]: credential } }));
    const candidates = dockerConfigCandidates({ rootDir, workingDir: rootDir, homeDir: rootDir }).filter((c) => c.file.startsWith(rootDir));
    return nodeDockerConfigSource({ candidates, now: () => 0, log: silentLogger });
  }

  it('opens the private registry to a pod without secrets, and the image pulled with it to every pod (nodePodsAccessible)', async () => {
    const { runtime, ensure } = node(new TestRuntime(), 'NeverVerifyPreloadedImages', [], [await nodeConfig(GOOD)]);
    expect(await ensure('pod-a', [], PRIVATE, 'IfNotPresent')).toMatchObject({ ok: true });
    expect(runtime.callLog('pullImage')).toHaveLength(1);
    const [file] = await readdir(path.join(rootDir, 'image_manager', 'pulled'));
    const record = await readFile(path.join(rootDir, 'image_manager', 'pulled', file!), 'utf8');
    expect(JSON.parse(record)).toMatchObject({ credentialMapping: { [`${REGISTRY}/team/app`]: { nodePodsAccessible: true } } });
    expect(record).not.toContain(GOOD.password);
    expect(await ensure('pod-b', [], PRIVATE, 'Never')).toMatchObject({ ok: true });
    expect(runtime.callLog('pullImage')).toHaveLength(1);
  });

  it('comes after the pod’s secrets: a pod’s working secret pulls first, and its record names the secret', async () => {
    const { runtime, ensure } = node(new TestRuntime(), 'NeverVerifyPreloadedImages', [], [await nodeConfig({ username: 'reader', password: 'wrong' })]);
    expect(await ensure('pod-a', [secret('pull', GOOD)], PRIVATE, 'IfNotPresent')).toMatchObject({ ok: true });
    expect(runtime.callLog('pullImage')).toHaveLength(1);
    // Pulled with the secret, not the node's: a pod without it must pull, and the node's wrong credential fails.
    expect(await ensure('pod-b', [], PRIVATE, 'IfNotPresent')).toMatchObject({ ok: false, reason: 'ErrImagePull' });
  });
});

describe('credentials a plugin gave for the pod\'s service account (image_manager.go trackedToImagePullCreds)', () => {
  /** A pod of `account` (uid `sa-<account>`) in `shop`; the cluster reads are not used by the stand-in plugin below. */
  const podOf = (name: string, account: string): PodPullContext => ({
    namespace: 'shop',
    name,
    uid: `uid-${name}`,
    serviceAccountName: account,
    serviceAccount: () => Promise.resolve(null),
    token: () => Promise.reject(new Error('not asked')),
  });
  /** Stands in for a token-mode plugin: the registry's credential for the pods of `builder`, marked with the account. */
  const tokenModePlugin: CredentialSource = (_repository, pod) =>
    Promise.resolve(pod?.serviceAccountName === 'builder' ? [{ matchKey: REGISTRY, ...GOOD, serviceAccount: { uid: 'sa-builder', namespace: pod.namespace, name: 'builder' } }] : []);

  it('records the service account; another pod of it uses the image without a pull, a pod of another account must pull', async () => {
    const { runtime, ensure } = node(new TestRuntime(), 'NeverVerifyPreloadedImages', [], [tokenModePlugin]);
    expect(await ensure('pod-a', [], PRIVATE, 'IfNotPresent', {}, podOf('pod-a', 'builder'))).toMatchObject({ ok: true });
    const [file] = await readdir(path.join(rootDir, 'image_manager', 'pulled'));
    const record = await readFile(path.join(rootDir, 'image_manager', 'pulled', file!), 'utf8');
    expect(JSON.parse(record).credentialMapping).toEqual({ [`${REGISTRY}/team/app`]: { kubernetesServiceAccounts: [{ uid: 'sa-builder', namespace: 'shop', name: 'builder' }] } });
    expect(record).not.toContain(GOOD.password);

    expect(await ensure('pod-b', [], PRIVATE, 'Never', {}, podOf('pod-b', 'builder'))).toMatchObject({ ok: true });
    expect(runtime.callLog('pullImage')).toHaveLength(1);
    expect(await ensure('pod-c', [], PRIVATE, 'Never', {}, podOf('pod-c', 'other'))).toMatchObject({ ok: false, reason: 'ErrImageNeverPull' });
    expect(await ensure('pod-c', [], PRIVATE, 'IfNotPresent', {}, podOf('pod-c', 'other'))).toMatchObject({ ok: false, reason: 'ErrImagePull' });
  });
});

describe('pruning the records of images gone (PruneUnknownRecords)', () => {
  it('removes the record of an image the runtime no longer has, keeps those of present images and those written since the round began', async () => {
    const { runtime, records, ensure } = node(new TestRuntime(), 'NeverVerifyPreloadedImages', [], [], () => Date.parse('2026-01-01T00:00:10Z'));
    expect(await ensure('pod-a', [secret('pull', GOOD)], PRIVATE, 'IfNotPresent')).toMatchObject({ ok: true });
    expect(await ensure('pod-a', [], 'public.example.com/app:1', 'IfNotPresent')).toMatchObject({ ok: true });
    const dir = path.join(rootDir, 'image_manager', 'pulled');
    expect(await readdir(dir)).toHaveLength(2);
    const gone = (await runtime.imageStatus(PRIVATE))!.id;
    const kept = (await runtime.imageStatus('public.example.com/app:1'))!.id;
    await runtime.removeImage(gone);

    // A round that began before the records were written keeps them all.
    await records.pruneUnknownRecords([kept], Date.parse('2026-01-01T00:00:10Z'));
    expect(await readdir(dir)).toHaveLength(2);
    await records.pruneUnknownRecords([kept], Date.parse('2026-01-01T00:05:00Z'));
    const left = await readdir(dir);
    expect(left).toHaveLength(1);
    expect(JSON.parse(await readFile(path.join(dir, left[0]!), 'utf8'))).toMatchObject({ imageRef: kept });
  });
});
