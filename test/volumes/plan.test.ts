/** Volume layout and container mounts (kubelet_pods.go makeMounts), table-tested. */
import { describe, expect, it } from 'vitest';
import type { Container, Pod, VolumeMount } from '../../src/api/types.ts';
import { containerMounts, downwardPayload, hostPathCheck, keyedPayload, projectedPayload, unsupportedVolume } from '../../src/volumes/plan.ts';
import { expectedVolumeNames } from '../../src/volumes/desired.ts';

const c = (name: string, volumeMounts: Container['volumeMounts']): Container => ({ name, image: 'busybox:1', volumeMounts });
const pod = (containers: Container[], volumes: unknown[], initContainers: Container[] = []): Pod =>
  ({ metadata: { name: 'web', namespace: 'shop', uid: 'u1' }, spec: { containers, initContainers, volumes } }) as Pod;

describe('containerMounts', () => {
  const p = pod(
    [
      c('app', [
        { name: 'scratch', mountPath: '/work' },
        { name: 'cache', mountPath: 'cache', readOnly: true },
        { name: 'token', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
        { name: 'claim', mountPath: '/data' },
      ]),
    ],
    [
      { name: 'scratch', emptyDir: {} },
      { name: 'cache', emptyDir: { medium: 'Memory' } },
      { name: 'token', projected: { sources: [] } },
      { name: 'claim', persistentVolumeClaim: { claimName: 'data' } },
      { name: 'unused', emptyDir: {} },
    ],
  );

  it('mounts from the pod directory, makes relative paths absolute, keeps readOnly, projections always read-only', () => {
    const withoutClaim = { ...p.spec.containers[0]!, volumeMounts: p.spec.containers[0]!.volumeMounts!.filter((m) => m.name !== 'claim') };
    expect(containerMounts('/var/lib/statelet/pods', p, withoutClaim)).toEqual({
      mounts: [
        { volumeName: 'scratch', containerPath: '/work', hostPath: '/var/lib/statelet/pods/u1/volumes/kubernetes.io~empty-dir/scratch', readonly: false, propagation: 'PROPAGATION_PRIVATE' },
        { volumeName: 'cache', containerPath: '/cache', hostPath: '/var/lib/statelet/pods/u1/volumes/kubernetes.io~empty-dir/cache', readonly: true, propagation: 'PROPAGATION_PRIVATE' },
        { volumeName: 'token', containerPath: '/var/run/secrets/kubernetes.io/serviceaccount', hostPath: '/var/lib/statelet/pods/u1/volumes/kubernetes.io~projected/token', readonly: true, propagation: 'PROPAGATION_PRIVATE' },
      ],
    });
  });

  it('refuses a mount of a volume the pod does not have, with the kubelet message', () => {
    expect(containerMounts('/p', p, c('other', [{ name: 'nope', mountPath: '/x' }]))).toEqual({ error: 'cannot find volume "nope" to mount into container "other"' });
  });

  it('never mounts a container without a volume it asks for: a volume of a plugin this node lacks is an error naming it', () => {
    const claim = p.spec['volumes'] as { name: string }[];
    expect(unsupportedVolume(claim.find((v) => v.name === 'claim')!)).toBe('no volume plugin matched: this node does not mount persistentVolumeClaim volumes');
    expect(unsupportedVolume(claim.find((v) => v.name === 'scratch')!)).toBeNull();
    // A claim-backed volume is mounted where the volume manager set it up; until then it is not among the pod's volumes.
    expect(containerMounts('/p', p, p.spec.containers[0]!)).toEqual({ error: 'cannot find volume "claim" to mount into container "app"' });
    const mounted = new Map([['claim', { path: '/mnt/disks/pv-1', readOnly: true }]]);
    const found = containerMounts('/p', p, p.spec.containers[0]!, (t) => t, mounted);
    expect('mounts' in found && found.mounts.find((m) => m.volumeName === 'claim')).toMatchObject({ hostPath: '/mnt/disks/pv-1', readonly: true });
  });

  it('mounts an inline CSI volume where its driver published it, once the volume manager has', () => {
    const inline = pod([{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }], [{ name: 'scratch', csi: { driver: 'd.example.com' } }]);
    expect(containerMounts('/p', inline, inline.spec.containers[0]!)).toEqual({ error: 'cannot find volume "scratch" to mount into container "app"' });
    const target = '/p/u1/volumes/kubernetes.io~csi/scratch/mount';
    const found = containerMounts('/p', inline, inline.spec.containers[0]!, (t) => t, new Map([['scratch', { path: target, readOnly: false }]]));
    expect('mounts' in found && found.mounts).toEqual([{ volumeName: 'scratch', containerPath: '/scratch', hostPath: target, readonly: false, propagation: 'PROPAGATION_PRIVATE' }]);
  });

  it('sets up only the mounted volumes', () => {
    expect([...expectedVolumeNames(p).mounts]).toEqual(['scratch', 'cache', 'token', 'claim']);
  });

  it.each<[Partial<VolumeMount>, unknown]>([
    [{ mountPropagation: 'HostToContainer' }, { propagation: 'PROPAGATION_HOST_TO_CONTAINER' }],
    [{ mountPropagation: 'Bidirectional' }, { propagation: 'PROPAGATION_BIDIRECTIONAL' }],
    [{ mountPropagation: 'None' }, { propagation: 'PROPAGATION_PRIVATE' }],
    [{ mountPropagation: 'Sideways' }, { error: 'invalid MountPropagation mode: "Sideways"' }],
    [{ subPath: 'logs/app' }, { subPath: 'logs/app' }],
    [{ subPathExpr: '$(POD_NAME)/out' }, { subPath: 'web/out' }],
    [{ subPath: '/etc' }, { error: 'error SubPath `/etc` must not be an absolute path' }],
    [{ subPath: 'a/../../etc' }, { error: "unable to provision SubPath `a/../../etc`: must not contain '..'" }],
  ])('volumeMount %j: %j', (fields, expected) => {
    const q = pod([c('app', [{ name: 'scratch', mountPath: '/x', ...fields }])], [{ name: 'scratch', emptyDir: {} }]);
    const result = containerMounts('/p', q, q.spec.containers[0]!, (text) => text.replace('$(POD_NAME)', 'web'));
    expect('error' in result ? result : result.mounts[0]).toMatchObject(expected as object);
  });

  it('counts init containers among the users of a volume', () => {
    const shared = pod([c('app', [])], [{ name: 'data', emptyDir: {} }], [c('init', [{ name: 'data', mountPath: '/data' }])]);
    expect([...expectedVolumeNames(shared).mounts]).toEqual(['data']);
  });
});

describe('keyedPayload', () => {
  const values = { MODE: Buffer.from('fast'), LEVEL: Buffer.from('3') };
  const text = (r: ReturnType<typeof keyedPayload>) => ('error' in r ? r.error : r.files.map((f) => `${f.path}=${f.content.toString()}:${f.mode.toString(8)}`));

  it.each<[string, Record<string, unknown>, Record<string, Buffer> | null, string | string[]]>([
    ['every key with the default mode', { configMap: { name: 'cfg' } }, values, ['LEVEL=3:644', 'MODE=fast:644']],
    ['items at their paths, with their mode or defaultMode', { secret: { secretName: 's', defaultMode: 0o400, items: [{ key: 'MODE', path: 'conf/mode' }, { key: 'LEVEL', path: 'level', mode: 0o600 }] } }, values, ['conf/mode=fast:400', 'level=3:600']],
    ['a missing object', { configMap: { name: 'cfg' } }, null, 'configmap "cfg" not found'],
    ['a missing optional object', { secret: { secretName: 's', optional: true } }, null, []],
    ['a missing key', { configMap: { name: 'cfg', items: [{ key: 'nope', path: 'x' }] } }, values, 'configmap references non-existent config key: nope'],
    ['a missing secret key', { secret: { secretName: 's', items: [{ key: 'nope', path: 'x' }] } }, values, 'references non-existent secret key: nope'],
    ['a missing optional key', { configMap: { name: 'cfg', optional: true, items: [{ key: 'nope', path: 'x' }, { key: 'MODE', path: 'm' }] } }, values, ['m=fast:644']],
  ])('%s', (_, spec, given, expected) => {
    expect(text(keyedPayload({ name: 'v', ...spec }, given))).toEqual(expected);
  });
});

describe('downwardPayload', () => {
  const p = {
    metadata: { name: 'web', namespace: 'shop', uid: 'u1', labels: { tier: 'front', app: 'web' }, annotations: { note: 'say "hi"' } },
    spec: { containers: [{ name: 'app', resources: { limits: { memory: '64Mi' }, requests: { cpu: '250m' } } }] },
  } as unknown as Pod;
  const files = (items: unknown[], defaultMode?: number) => {
    const r = downwardPayload(p, { name: 'info', downwardAPI: { items: items as never, ...(defaultMode ? { defaultMode } : {}) } }, { cpu: 2000, memory: 2 ** 30 });
    return 'error' in r ? r.error : r.files.map((f) => `${f.path}=${f.content.toString()}:${f.mode.toString(8)}`);
  };

  it('writes names, single labels and whole maps (sorted, quoted), with modes', () => {
    expect(
      files(
        [
          { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
          { path: 'tier', fieldRef: { fieldPath: "metadata.labels['tier']" }, mode: 0o400 },
          { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
          { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
        ],
        0o440,
      ),
    ).toEqual(['name=web:440', 'tier=front:400', 'labels=app="web"\ntier="front":440', 'annotations=note="say \\"hi\\"":440']);
  });

  it('writes container resources, the unset limit from the node allocatable', () => {
    expect(
      files([
        { path: 'mem', resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: '1Mi' } },
        { path: 'cpu', resourceFieldRef: { containerName: 'app', resource: 'limits.cpu', divisor: '1m' } },
        { path: 'req', resourceFieldRef: { containerName: 'app', resource: 'requests.cpu', divisor: '1m' } },
      ]),
    ).toEqual(['mem=64:644', 'cpu=2000:644', 'req=250:644']);
  });

  it('refuses the fields only the environment has, naming every bad item', () => {
    expect(files([{ path: 'ip', fieldRef: { fieldPath: 'status.podIP' } }, { path: 'x', resourceFieldRef: { containerName: 'nope', resource: 'limits.cpu' } }])).toBe(
      '[ip: unsupported fieldPath: status.podIP, x: cannot find container nope]',
    );
  });
});

describe('hostPathCheck', () => {
  it.each<[string | undefined, 'directory' | 'file' | 'socket' | null, unknown]>([
    [undefined, null, { ok: true }],
    ['DirectoryOrCreate', null, { create: 'directory' }],
    ['DirectoryOrCreate', 'directory', { ok: true }],
    ['Directory', null, { error: "hostPath /data doesn't exist" }],
    ['Directory', 'file', { error: 'hostPath type check failed: /data is not a directory' }],
    ['FileOrCreate', null, { create: 'file' }],
    ['File', 'directory', { error: 'hostPath type check failed: /data is not a file' }],
    ['Socket', 'file', { error: 'hostPath type check failed: /data is not a socket file' }],
    ['Sometimes', 'file', { error: 'Sometimes is an invalid volume type' }],
  ])('type %s with %s there: %j', (type, found, expected) => {
    expect(hostPathCheck({ path: '/data', ...(type ? { type } : {}) }, found)).toEqual(expected);
  });

  it("refuses a path with a '..' element", () => {
    expect(hostPathCheck({ path: '/data/../etc', type: 'Directory' }, 'directory')).toEqual({ error: "invalid HostPath `/data/../etc`: must not contain '..'" });
  });

  it('mounts the node path itself, writable unless the mount says otherwise', () => {
    const p = pod([c('app', [{ name: 'logs', mountPath: '/logs' }])], [{ name: 'logs', hostPath: { path: '/var/log/app', type: 'DirectoryOrCreate' } }]);
    expect(containerMounts('/pods', p, p.spec.containers[0]!)).toEqual({ mounts: [{ volumeName: 'logs', containerPath: '/logs', hostPath: '/var/log/app', readonly: false, propagation: 'PROPAGATION_PRIVATE' }] });
  });
});

describe('projectedPayload', () => {
  const p = { metadata: { name: 'web', namespace: 'shop', uid: 'u1' }, spec: { containers: [{ name: 'app' }] } } as unknown as Pod;
  const volume = (sources: unknown[], defaultMode?: number) => ({ name: 'kube-api-access-x1', projected: { sources: sources as never, ...(defaultMode ? { defaultMode } : {}) } });
  const run = (sources: unknown[], objects: [number, Record<string, Buffer> | null][], tokens: [number, string | Error][], defaultMode?: number) => {
    const r = projectedPayload(p, volume(sources, defaultMode), { objects: new Map(objects), tokens: new Map(tokens) }, undefined);
    return 'error' in r ? r.error : r.files.map((f) => `${f.path}=${f.content.toString()}:${f.mode.toString(8)}`).sort();
  };
  const kubeApiAccess = [
    { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
    { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
    { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
  ];

  it('puts the token, the cluster CA and the namespace of kube-api-access in one directory, with the volume defaultMode', () => {
    expect(run(kubeApiAccess, [[1, { 'ca.crt': Buffer.from('PEM') }]], [[0, 'jwt']], 0o644)).toEqual(['ca.crt=PEM:644', 'namespace=shop:644', 'token=jwt:644']);
  });

  it('lets a later source overwrite a path an earlier one wrote', () => {
    const sources = [{ secret: { name: 's' } }, { configMap: { name: 'c' } }];
    expect(run(sources, [[0, { k: Buffer.from('secret') }], [1, { k: Buffer.from('config') }]], [])).toEqual(['k=config:644']);
  });

  it('skips a missing optional object and reports every failing source together', () => {
    expect(run([{ configMap: { name: 'gone', optional: true } }, { downwardAPI: { items: [{ path: 'n', fieldRef: { fieldPath: 'metadata.name' } }] } }], [[0, null]], [])).toEqual(['n=web:644']);
    expect(run([{ configMap: { name: 'gone' } }, { secret: { name: 'keys', items: [{ key: 'k', path: 'k' }] } }, ...kubeApiAccess.slice(0, 1)], [[0, null], [1, {}]], [[2, new Error('failed to fetch token: 403 Forbidden')]])).toBe(
      '[configmap "gone" not found, references non-existent secret key: k, failed to fetch token: 403 Forbidden]',
    );
  });

  it("writes a clusterTrustBundle source's anchors at its path with the defaultMode, 0600 under an fsGroup, and its error with the others", () => {
    const sources = [{ clusterTrustBundle: { name: 'ca', path: 'ca.pem' } }, { clusterTrustBundle: { signerName: 'example.com/x', path: 'x.pem', optional: true } }];
    const anchors = new Map<number, Buffer | Error>([
      [0, Buffer.from('PEM')],
      [1, Buffer.alloc(0)],
    ]);
    const files = (pod: Pod) => {
      const r = projectedPayload(pod, volume(sources, 0o644), { objects: new Map(), tokens: new Map(), trustAnchors: anchors }, undefined);
      return 'error' in r ? r.error : r.files.map((f) => `${f.path}=${f.content.toString()}:${f.mode.toString(8)}`).sort();
    };
    expect(files(p)).toEqual(['ca.pem=PEM:644', 'x.pem=:644']);
    expect(files({ ...p, spec: { ...p.spec, securityContext: { fsGroup: 2000 } } } as Pod)).toEqual(['ca.pem=PEM:600', 'x.pem=:600']);
    anchors.set(0, new Error('combination of signerName and labelSelector matched zero ClusterTrustBundles'));
    expect(files(p)).toBe('combination of signerName and labelSelector matched zero ClusterTrustBundles');
  });
});
