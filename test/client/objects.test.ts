/** Reading ConfigMaps and Secrets over the in-memory API. */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/api.ts';
import { NO_TRUST_BUNDLE_API, apiObjectReader } from '../../src/client/objects.ts';
import { MemoryApi } from '../support/memoryApi.ts';

describe('apiObjectReader', () => {
  it('reads ConfigMap data and decodes Secret data; a missing object is null', async () => {
    const api = new MemoryApi();
    api.configMaps.set('shop/cfg', { data: { MODE: 'fast' } });
    api.secrets.set('shop/creds', { data: { user: Buffer.from('ana').toString('base64') } });
    const reader = apiObjectReader(api);
    expect(await reader.configMap('shop', 'cfg')).toEqual({ data: { MODE: 'fast' }, binaryData: {} });
    expect(await reader.secret('shop', 'creds')).toEqual({ user: Buffer.from('ana') });
    expect(await reader.configMap('shop', 'nope')).toBeNull();
  });

  it('reads a ServiceAccount\'s uid and annotations (for token-mode credential providers); a missing one is null', async () => {
    const api = new MemoryApi();
    api.serviceAccounts.set('shop/builder', { metadata: { uid: 'sa-1', annotations: { 'registry.io/role': 'puller' } } });
    api.serviceAccounts.set('shop/plain', { metadata: { uid: 'sa-2' } });
    const reader = apiObjectReader(api);
    expect(await reader.serviceAccount('shop', 'builder')).toEqual({ uid: 'sa-1', annotations: { 'registry.io/role': 'puller' } });
    expect(await reader.serviceAccount('shop', 'plain')).toEqual({ uid: 'sa-2', annotations: {} });
    expect(await reader.serviceAccount('shop', 'ghost')).toBeNull();
  });

  it('lets starts asking for the same object at once share one read', async () => {
    const api = new MemoryApi();
    api.configMaps.set('shop/cfg', { data: { MODE: 'fast' } });
    const reader = apiObjectReader(api);
    const held = api.hold('getConfigMap');
    const reads = Array.from({ length: 50 }, () => reader.configMap('shop', 'cfg'));
    held.release();
    expect(await Promise.all(reads)).toEqual(Array(50).fill({ data: { MODE: 'fast' }, binaryData: {} }));
    expect(api.count('getConfigMap')).toBe(1);
    // Once done, a read that must be fresh (a start) goes to the API server.
    api.configMaps.set('shop/cfg', { data: { MODE: 'slow' } });
    expect(await reader.configMap('shop', 'cfg', 0)).toEqual({ data: { MODE: 'slow' }, binaryData: {} });
  });

  it('reads afresh for maxAgeMs 0 even within the millisecond of the last read, and shares a read started at that moment', async () => {
    const api = new MemoryApi();
    api.configMaps.set('shop/cfg', { data: { MODE: 'fast' } });
    const reader = apiObjectReader(api, { ttlMs: 60_000, now: () => 1_000 });
    expect(await reader.configMap('shop', 'cfg', 0)).toEqual({ data: { MODE: 'fast' }, binaryData: {} });
    api.configMaps.set('shop/cfg', { data: { MODE: 'slow' } });
    const both = await Promise.all([reader.configMap('shop', 'cfg', 0), reader.configMap('shop', 'cfg', 0)]);
    expect(both).toEqual([{ data: { MODE: 'slow' }, binaryData: {} }, { data: { MODE: 'slow' }, binaryData: {} }]);
    expect(api.count('getConfigMap')).toBe(2);
  });

  it('serves reads that may be old from a copy up to the TTL old, and never caches a missing object', async () => {
    const api = new MemoryApi();
    let now = 0;
    const reader = apiObjectReader(api, { ttlMs: 60_000, now: () => now });
    api.configMaps.set('shop/cfg', { data: { MODE: 'fast' } });
    await reader.configMap('shop', 'cfg', 0);
    api.configMaps.set('shop/cfg', { data: { MODE: 'slow' } });
    now = 60_000;
    expect((await reader.configMap('shop', 'cfg'))?.data).toEqual({ MODE: 'fast' });
    expect(api.count('getConfigMap')).toBe(1);
    now = 60_001;
    expect((await reader.configMap('shop', 'cfg'))?.data).toEqual({ MODE: 'slow' });
    expect(await reader.secret('shop', 'later')).toBeNull();
    api.secrets.set('shop/later', { data: {} });
    expect(await reader.secret('shop', 'later')).toEqual({});
    expect(api.count('getSecret')).toBe(2);
  });

  it('passes on a failed read other than not found', async () => {
    const api = new MemoryApi();
    api.failNext('getSecret', new ApiError(403, 'Forbidden', 'secrets "creds" is forbidden', 'GET secrets shop/creds'));
    await expect(apiObjectReader(api).secret('shop', 'creds')).rejects.toThrow(/403 Forbidden/);
  });

  describe('clusterTrustBundles', () => {
    const bundle = { metadata: { name: 'ca' }, spec: { signerName: 'example.com/s', trustBundle: 'PEM' } };

    it.each([
      [['certificates.k8s.io/v1', 'certificates.k8s.io/v1beta1', 'certificates.k8s.io/v1alpha1'], 'certificates.k8s.io/v1'],
      [['certificates.k8s.io/v1beta1', 'certificates.k8s.io/v1alpha1'], 'certificates.k8s.io/v1beta1'],
      [['certificates.k8s.io/v1alpha1'], 'certificates.k8s.io/v1alpha1'],
    ])('served in %j: listed through %s, the version chosen once', async (served, listedIn) => {
      const api = new MemoryApi();
      api.trustBundleVersions = served;
      api.clusterTrustBundles.push(bundle);
      const reader = apiObjectReader(api);
      expect(await reader.clusterTrustBundles(0)).toEqual([bundle]);
      const discoveries = api.count('apiResources');
      expect(await reader.clusterTrustBundles(0)).toEqual([bundle]);
      expect(api.count('apiResources')).toBe(discoveries);
      expect(api.trustBundleListings).toEqual([listedIn, listedIn]);
    });

    it('fails with the kubelet\'s error when no version is served, and does not look again', async () => {
      const api = new MemoryApi();
      api.trustBundleVersions = [];
      const reader = apiObjectReader(api);
      await expect(reader.clusterTrustBundles(0)).rejects.toThrow(NO_TRUST_BUNDLE_API);
      api.trustBundleVersions = ['certificates.k8s.io/v1'];
      await expect(reader.clusterTrustBundles(0)).rejects.toThrow(NO_TRUST_BUNDLE_API);
      expect(api.count('apiResources')).toBe(3);
      expect(api.trustBundleListings).toEqual([]);
    });

    it('fails a discovery that errors with its cause, and discovers again next time', async () => {
      const api = new MemoryApi();
      api.clusterTrustBundles.push(bundle);
      api.failNext('apiResources', new ApiError(503, 'ServiceUnavailable', 'etcd is down', 'GET discovery certificates.k8s.io/v1'));
      const reader = apiObjectReader(api);
      await expect(reader.clusterTrustBundles(0)).rejects.toThrow(
        'failed to ensure informer manager for ClusterTrustBundles: failed to determine which informer manager to choose: GET discovery certificates.k8s.io/v1: 503 ServiceUnavailable: etcd is down',
      );
      expect(await reader.clusterTrustBundles(0)).toEqual([bundle]);
    });

    it('serves a refresh from a copy up to the TTL old', async () => {
      const api = new MemoryApi();
      let now = 0;
      const reader = apiObjectReader(api, { ttlMs: 60_000, now: () => now });
      api.clusterTrustBundles.push(bundle);
      await reader.clusterTrustBundles(0);
      api.clusterTrustBundles.length = 0;
      now = 60_000;
      expect(await reader.clusterTrustBundles()).toEqual([bundle]);
      now = 60_001;
      expect(await reader.clusterTrustBundles()).toEqual([]);
    });
  });
});
