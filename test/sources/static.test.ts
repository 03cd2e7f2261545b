import { describe, expect, it } from 'vitest';
import { ConfigAnnotation } from '../../src/api/types.ts';
import { canonicalJson, defaultStaticPod, staticPodUid, type ManifestOrigin } from '../../src/sources/static.ts';

function manifest(): Record<string, unknown> & { metadata: Record<string, unknown>; spec: Record<string, unknown> } {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web' },
    spec: { containers: [{ name: 'app', image: 'nginx:1.25' }] },
  };
}

const file: ManifestOrigin = { kind: 'file', path: '/etc/manifests/web.yaml' };
const url: ManifestOrigin = { kind: 'url', url: 'http://config/pods' };

describe('staticPodUid', () => {
  const uid = staticPodUid(manifest(), file, 'node-a');

  it('is hex MD5', () => {
    expect(uid).toMatch(/^[0-9a-f]{32}$/);
  });

  it('is stable for the same content, path and node, whatever the key order', () => {
    const reordered = { spec: manifest().spec, metadata: { name: 'web' }, kind: 'Pod', apiVersion: 'v1' };
    expect(staticPodUid(manifest(), file, 'node-a')).toBe(uid);
    expect(staticPodUid(reordered, file, 'node-a')).toBe(uid);
  });

  it('changes when the manifest, the path, the node or the origin kind changes', () => {
    const edited = manifest();
    edited.spec['containers'] = [{ name: 'app', image: 'nginx:1.26' }];
    const others = [
      staticPodUid(edited, file, 'node-a'),
      staticPodUid(manifest(), { kind: 'file', path: '/etc/manifests/other.yaml' }, 'node-a'),
      staticPodUid(manifest(), file, 'node-b'),
      staticPodUid(manifest(), url, 'node-a'),
    ];
    for (const other of others) expect(other).not.toBe(uid);
    expect(new Set(others).size).toBe(others.length);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every level and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { f: 2, e: 3 }], c: undefined } })).toBe('{"a":{"d":[1,{"e":3,"f":2}]},"b":1}');
  });
});

describe('defaultStaticPod', () => {
  it('applies the static pod defaults to a file pod', () => {
    const { pod, errors } = defaultStaticPod(manifest(), file, 'Node-A');
    expect(errors).toEqual([]);
    expect(pod?.metadata.name).toBe('web-node-a');
    expect(pod?.metadata.namespace).toBe('default');
    expect(pod?.metadata.uid).toBe(staticPodUid(manifest(), file, 'Node-A'));
    expect(pod?.metadata.annotations?.[ConfigAnnotation.hash]).toBe(pod?.metadata.uid);
    expect(pod?.spec.nodeName).toBe('Node-A');
    expect(pod?.spec.tolerations).toEqual([{ operator: 'Exists', effect: 'NoExecute' }]);
    expect(pod?.status?.phase).toBe('Pending');
  });

  it('then applies the API defaults', () => {
    const { pod } = defaultStaticPod(manifest(), file, 'n');
    expect(pod?.spec.restartPolicy).toBe('Always');
    expect(pod?.spec.terminationGracePeriodSeconds).toBe(30);
    expect(pod?.spec.containers[0]?.imagePullPolicy).toBe('IfNotPresent');
  });

  it('keeps a given UID and namespace, and existing tolerations', () => {
    const m = manifest();
    m.metadata['uid'] = 'given';
    m.metadata['namespace'] = 'kube-system';
    m.spec['tolerations'] = [{ key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule' }];
    const { pod } = defaultStaticPod(m, file, 'n');
    expect(pod?.metadata.uid).toBe('given');
    expect(pod?.metadata.annotations?.[ConfigAnnotation.hash]).toBe('given');
    expect(pod?.metadata.namespace).toBe('kube-system');
    expect(pod?.spec.tolerations).toHaveLength(2);
  });

  it('does not add the NoExecute toleration twice', () => {
    const m = manifest();
    m.spec['tolerations'] = [{ operator: 'Exists', effect: 'NoExecute' }];
    expect(defaultStaticPod(m, file, 'n').pod?.spec.tolerations).toHaveLength(1);
  });

  it('gives http pods no toleration and hashes the url', () => {
    const { pod } = defaultStaticPod(manifest(), url, 'n');
    expect(pod?.spec.tolerations).toBeUndefined();
    expect(pod?.metadata.uid).toBe(staticPodUid(manifest(), url, 'n'));
  });

  it('does not modify the manifest', () => {
    const m = manifest();
    const before = structuredClone(m);
    defaultStaticPod(m, file, 'n');
    expect(m).toEqual(before);
  });

  it('validates the final name: a name the node suffix makes too long is rejected', () => {
    const m = manifest();
    m.metadata['name'] = 'a'.repeat(250);
    expect(defaultStaticPod(m, file, 'node').errors).toContainEqual({ field: 'metadata.name', message: expect.stringContaining('Invalid value') });
    m.metadata['name'] = 'a'.repeat(240);
    expect(defaultStaticPod(m, file, 'node').errors).toEqual([]);
  });

  it('reports a missing name as required rather than inventing "-node"', () => {
    const m = manifest();
    delete m.metadata['name'];
    const { pod, errors } = defaultStaticPod(m, file, 'node');
    expect(pod).toBeUndefined();
    expect(errors).toEqual([{ field: 'metadata.name', message: 'Required value' }]);
  });

  it('reports validation errors with their field', () => {
    const m = manifest();
    m.spec['containers'] = [{ name: 'app' }];
    expect(defaultStaticPod(m, file, 'n').errors).toEqual([{ field: 'spec.containers[0].image', message: 'Required value' }]);
  });

  it('rejects a manifest that is not an object', () => {
    expect(defaultStaticPod(['a'], file, 'n').pod).toBeUndefined();
  });

  it('refuses ephemeral containers: a static pod is created at each read, and no pod may have them at creation (ValidatePodCreate)', () => {
    const m = manifest();
    m.spec['ephemeralContainers'] = [{ name: 'debug', image: 'busybox' }];
    const { pod, errors } = defaultStaticPod(m, file, 'n');
    expect(pod).toBeUndefined();
    expect(errors).toEqual([{ field: 'spec.ephemeralContainers', message: 'Forbidden: cannot be set on create' }]);
    m.spec['ephemeralContainers'] = [];
    expect(defaultStaticPod(m, file, 'n').errors).toEqual([]);
  });
});
