/**
 * A pod's `spec.imagePullSecrets` read from the API at its sync (kubelet_pods.go
 * getPullSecretsForPod) and their credentials reaching the simulated runtime's private registry:
 * the pod's plan executed on the in-process sim engine, its Secrets on the in-memory API server.
 */
import { describe, expect, it } from 'vitest';
import { apiObjectReader } from '../../src/client/objects.ts';
import type { PodWork } from '../../src/kuberuntime/podWork.ts';
import { silentLogger } from '../../src/log.ts';
import { TokenManager } from '../../src/volumes/tokens.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { container, makePod } from '../support/pods.ts';
import { type LifecycleRig, lifecycleRig, syncOnce } from './support.ts';

const IMAGE = 'private.example.com/team/app:1';

function rigWithApi(): LifecycleRig & { api: MemoryApi } {
  const rig = lifecycleRig();
  const api = new MemoryApi();
  const now = () => rig.clock.now();
  const deps: PodWork = { ...rig.deps, cluster: { objects: apiObjectReader(api), services: () => [], tokens: new TokenManager(api, now, silentLogger), runtimeClassHandler: () => null } };
  rig.runtime.engine.requireRegistryCredentials('private.example.com', { username: 'reader', password: 's3cret' });
  return { ...rig, deps, api };
}

function putPullSecret(api: MemoryApi, name: string, password: string): void {
  const config = JSON.stringify({ auths: { 'private.example.com': { auth: Buffer.from(`reader:${password}`).toString('base64') } } });
  api.secrets.set(`default/${name}`, { metadata: { uid: `uid-${name}` }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.from(config).toString('base64') } });
}

const privatePod = (secrets: string[]) => makePod('web', { containers: [container('app', { image: IMAGE })], imagePullSecrets: secrets.map((name) => ({ name })) });

describe("a pod's image pull secrets", () => {
  it('pulls with the secret the pod names and starts the container', async () => {
    const rig = rigWithApi();
    putPullSecret(rig.api, 'regcred', 's3cret');
    const result = await syncOnce(rig, privatePod(['regcred']));
    expect(result.reasons).toEqual({});
    expect(rig.runtime.callLog('createContainer')).toHaveLength(1);
  });

  it('a missing secret: a Warning on the pod naming it, and the pull still tried with the others', async () => {
    const rig = rigWithApi();
    putPullSecret(rig.api, 'stale', 'expired');
    const result = await syncOnce(rig, privatePod(['gone', 'stale', '', 'also-gone']));
    expect(rig.events.events.filter((e) => e.reason === 'FailedToRetrieveImagePullSecret')).toEqual([
      {
        object: expect.objectContaining({ kind: 'Pod', name: 'web' }),
        type: 'Warning',
        reason: 'FailedToRetrieveImagePullSecret',
        message: 'Unable to retrieve some image pull secrets (gone, also-gone); attempting to pull the image may not succeed.',
      },
    ]);
    expect(rig.runtime.callLog('pullImage')).toHaveLength(1);
    expect(result.reasons.app).toMatchObject({ reason: 'ErrImagePull', message: expect.stringContaining('401 Unauthorized') });
  });

  it('no secret: ErrImagePull with the registry’s refusal, and no credential in any event', async () => {
    const rig = rigWithApi();
    putPullSecret(rig.api, 'regcred', 's3cret');
    const result = await syncOnce(rig, privatePod([]));
    expect(result.reasons.app).toMatchObject({ reason: 'ErrImagePull', message: expect.stringContaining('401 Unauthorized') });
    // A pod that names the secret pulls; nothing it tells carries the password.
    await syncOnce(rig, { ...privatePod(['regcred']), metadata: { ...privatePod([]).metadata, uid: 'uid-other' } });
    expect(JSON.stringify(rig.events.events)).not.toContain('s3cret');
    expect(JSON.stringify(rig.logs)).not.toContain('s3cret');
  });
});
