/** A pod's volumes on disk (setUp.ts): files, modes, which go on tmpfs, token projection and teardown, against a temporary directory and the in-memory API. */
import { chown, lstat, mkdir, mkdtemp, readFile, readdir, readlink, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { ApiError } from '../../src/client/api.ts';
import { apiObjectReader } from '../../src/client/objects.ts';
import type { Mounter } from '../../src/volumes/mounter.ts';
import { type InTreeKind, isCsiKind, desiredVolume, expectedVolumeNames } from '../../src/volumes/desired.ts';
import { podVolumes } from '../../src/volumes/plan.ts';
import { type VolumeDeps, setUpVolume, tearDownPodVolumes } from '../../src/volumes/setUp.ts';
import { TokenManager } from '../../src/volumes/tokens.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { asRootOrSkip } from '../support/asRoot.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** Records what would go on tmpfs, mounting nothing. */
function recordingMounter(): Mounter & { tmpfs: Map<string, number | undefined>; hugetlbfs: Map<string, string>; unmounted: string[]; others: Set<string> } {
  const tmpfs = new Map<string, number | undefined>();
  /** Mounts someone else made (a CSI driver's): the mount table shows them, the agent does not unmount them. */
  const others = new Set<string>();
  const hugetlbfs = new Map<string, string>();
  const unmounted: string[] = [];
  return {
    tmpfs,
    hugetlbfs,
    unmounted,
    others,
    mountHugetlbfs: async (dir, pageSize) => {
      hugetlbfs.set(dir, pageSize);
    },
    get mounted() {
      return tmpfs.size;
    },
    mountTmpfs: async (dir, size) => {
      tmpfs.set(dir, size);
      return true;
    },
    bindMount: async () => false,
    formatAndMount: async () => {
      throw new Error('no devices here');
    },
    unmount: async () => false,
    mountedUnder: async (dir) => [...others].filter((d) => d.startsWith(`${dir}/`)),
    unmountUnder: async (dir) => {
      const under = [...tmpfs.keys()].filter((d) => d.startsWith(`${dir}/`));
      for (const d of under) tmpfs.delete(d);
      unmounted.push(...under);
      return under;
    },
  };
}

const pod = (volumes: unknown[], mounts: string[], extra: Record<string, unknown> = {}): Pod =>
  ({
    metadata: { name: 'web', namespace: 'shop', uid: 'u1' },
    spec: {
      serviceAccountName: 'builder',
      containers: [{ name: 'app', image: 'busybox', resources: { limits: { memory: '64Mi' } }, volumeMounts: mounts.map((name) => ({ name, mountPath: `/${name}` })) }],
      volumes,
      ...extra,
    },
  }) as unknown as Pod;

async function setUp() {
  const podsDir = await mkdtemp(path.join(os.tmpdir(), 'statelet-volumes-'));
  dirs.push(podsDir);
  const api = new MemoryApi();
  const mounter = recordingMounter();
  const tokens = new TokenManager(api, Date.now, () => {}, () => 0);
  const deps = { podsDir, objects: apiObjectReader(api), tokens, mounter, allocatable: { memory: 2 ** 33 }, now: Date.now };
  const volumeDir = (plugin: string, name: string) => path.join(podsDir, 'u1', 'volumes', `kubernetes.io~${plugin}`, name);
  return { podsDir, api, mounter, tokens, deps, volumeDir };
}

/** Each volume the pod's containers mount set up in the pod's order, as the volume manager's actors would; the first failure thrown. */
async function setUpPodVolumes(deps: VolumeDeps, p: Pod): Promise<void> {
  const expected = expectedVolumeNames(p).mounts;
  for (const volume of podVolumes(p).filter((v) => expected.has(v.name))) {
    const desired = desiredVolume(p, volume);
    if ('error' in desired) throw new Error(desired.error);
    if (isCsiKind(desired.kind)) throw new Error(`${volume.name}: a CSI volume is mounted by its driver, not setUpVolume`);
    await setUpVolume(deps, p, desired as typeof desired & { kind: InTreeKind });
  }
}

describe('setUpVolume', () => {
  it('writes kube-api-access: a token bound to the pod for its service account, the CA and the namespace, on tmpfs sized by the pod limit', async () => {
    const { api, deps, mounter, volumeDir } = await setUp();
    api.configMaps.set('shop/kube-root-ca.crt', { data: { 'ca.crt': 'PEM' } });
    const access = {
      name: 'kube-api-access-abcde',
      projected: {
        defaultMode: 0o644,
        sources: [
          { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
        ],
      },
    };
    await setUpPodVolumes(deps, pod([access], ['kube-api-access-abcde']));
    const dir = volumeDir('projected', 'kube-api-access-abcde');
    expect(await readFile(path.join(dir, 'token'), 'utf8')).toBe('token-1');
    expect(await readFile(path.join(dir, 'ca.crt'), 'utf8')).toBe('PEM');
    expect(await readFile(path.join(dir, 'namespace'), 'utf8')).toBe('shop');
    expect(api.tokenRequests[0]).toMatchObject({ namespace: 'shop', serviceAccount: 'builder', spec: { expirationSeconds: 3607, boundObjectRef: { name: 'web', uid: 'u1' } } });
    expect([...mounter.tmpfs]).toEqual([[dir, 64 * 2 ** 20]]);
    expect((await stat(path.join(deps.podsDir, 'u1'))).mode & 0o777).toBe(0o750);
    // The next sync within the token's life asks nothing more.
    await setUpPodVolumes(deps, pod([access], ['kube-api-access-abcde']));
    expect(api.tokenRequests).toHaveLength(1);
  });

  it('puts secrets, downwardAPI and memory emptyDirs on tmpfs (sizeLimit lowering the size), configMaps and disk emptyDirs on disk', async () => {
    const { api, deps, mounter, volumeDir } = await setUp();
    api.configMaps.set('shop/cfg', { data: { a: '1' } });
    api.secrets.set('shop/creds', { data: { p: Buffer.from('pw').toString('base64') } });
    const volumes = [
      { name: 'cfg', configMap: { name: 'cfg' } },
      { name: 'creds', secret: { secretName: 'creds', defaultMode: 0o400 } },
      { name: 'info', downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
      { name: 'fast', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
      { name: 'slow', emptyDir: {} },
    ];
    await setUpPodVolumes(deps, pod(volumes, volumes.map((v) => v.name)));
    expect(new Map(mounter.tmpfs)).toEqual(
      new Map([
        [volumeDir('secret', 'creds'), 64 * 2 ** 20],
        [volumeDir('downward-api', 'info'), 64 * 2 ** 20],
        [volumeDir('empty-dir', 'fast'), 2 ** 20],
      ]),
    );
    expect((await stat(path.join(volumeDir('secret', 'creds'), 'p'))).mode & 0o777).toBe(0o400);
    expect((await stat(volumeDir('empty-dir', 'slow'))).mode & 0o777).toBe(0o777);
    // Every volume's directory is open to a container of any uid; the files' modes say the rest.
    for (const [plugin, name] of [['configmap', 'cfg'], ['secret', 'creds'], ['downward-api', 'info'], ['empty-dir', 'fast']]) {
      expect((await stat(volumeDir(plugin!, name!))).mode & 0o777, `${plugin}/${name}`).toBe(0o777);
    }
  });

  it('puts an emptyDir on huge pages on a hugetlbfs of the page size the pod requests, and fails one whose pod requests none', async () => {
    const { deps, mounter, volumeDir } = await setUp();
    const hugePod = (medium: string, requests: Record<string, string>) => {
      const p = pod([{ name: 'pages', emptyDir: { medium } }], ['pages']);
      p.spec.containers[0]!.resources = { requests, limits: requests };
      return p;
    };
    await setUpPodVolumes(deps, hugePod('HugePages', { memory: '64Mi', 'hugepages-2Mi': '4Mi' }));
    expect(mounter.hugetlbfs.get(volumeDir('empty-dir', 'pages'))).toBe('2Mi');
    expect(mounter.tmpfs.has(volumeDir('empty-dir', 'pages'))).toBe(false);
    await expect(setUpPodVolumes(deps, hugePod('HugePages-1Gi', { memory: '64Mi', 'hugepages-2Mi': '4Mi' }))).rejects.toThrow(
      'MountVolume.SetUp failed for volume "pages" : medium HugePages-1Gi: hugePages storage requested, but there is no resource request for huge pages',
    );
    await expect(setUpPodVolumes(deps, hugePod('Tape', {}))).rejects.toThrow('MountVolume.SetUp failed for volume "pages" : unknown storage medium "Tape"');
  });

  it('fails a projection whose token cannot be had with the volume named and the cause, and sets up nothing of it', async () => {
    const { api, deps, volumeDir } = await setUp();
    api.failNext('createServiceAccountToken', new ApiError(403, 'Forbidden', 'not bound to this node', 'POST serviceaccounts/token shop/builder'));
    const access = { name: 'access', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } };
    await expect(setUpPodVolumes(deps, pod([access], ['access']))).rejects.toThrow(
      'MountVolume.SetUp failed for volume "access" : failed to fetch token: POST serviceaccounts/token shop/builder: 403 Forbidden: not bound to this node',
    );
    expect(await readdir(volumeDir('projected', 'access')).catch(() => [])).toEqual([]);
  });
});

describe('setUpPodVolumes with clusterTrustBundle sources', () => {
  const pem = (der: string) => `-----BEGIN CERTIFICATE-----\n${Buffer.from(der).toString('base64')}\n-----END CERTIFICATE-----\n`;
  const ca = (name: string, ders: string[]) => ({ metadata: { name, labels: { team: 'a' } }, spec: { signerName: 'example.com/ca', trustBundle: ders.map(pem).join('') } });
  const anchorsIn = (text: string) => [...text.matchAll(/BEGIN CERTIFICATE-----\n(.*)\n/g)].map(([, body]) => Buffer.from(body!, 'base64').toString()).sort();

  it('writes the anchors of the bundles it selects, and the new anchors once a bundle changes and the copy is old', async () => {
    const { api, deps, volumeDir } = await setUp();
    let now = 0;
    const refreshing = { ...deps, objects: apiObjectReader(api, { ttlMs: 60_000, now: () => now }) };
    api.clusterTrustBundles.push(ca('one', ['r1', 'r2']), ca('two', ['r2', 'r3']));
    const trust = {
      name: 'trust',
      projected: { sources: [{ clusterTrustBundle: { signerName: 'example.com/ca', labelSelector: { matchLabels: { team: 'a' } }, path: 'ca/bundle.pem' } }, { clusterTrustBundle: { name: 'one', path: 'one.pem' } }] },
    };
    await setUpPodVolumes(refreshing, pod([trust], ['trust']));
    const dir = volumeDir('projected', 'trust');
    expect(anchorsIn(await readFile(path.join(dir, 'ca/bundle.pem'), 'utf8'))).toEqual(['r1', 'r2', 'r3']);
    expect(anchorsIn(await readFile(path.join(dir, 'one.pem'), 'utf8'))).toEqual(['r1', 'r2']);
    api.clusterTrustBundles.splice(0, 1, ca('one', ['r4']));
    now = 60_001;
    await setUpPodVolumes(refreshing, pod([trust], ['trust']));
    expect(anchorsIn(await readFile(path.join(dir, 'ca/bundle.pem'), 'utf8'))).toEqual(['r2', 'r3', 'r4']);
    expect(anchorsIn(await readFile(path.join(dir, 'one.pem'), 'utf8'))).toEqual(['r4']);
  });

  it('fails the volume for a missing bundle, and writes an empty file for a missing optional one', async () => {
    const { deps, volumeDir } = await setUp();
    const missing = { name: 'trust', projected: { sources: [{ clusterTrustBundle: { name: 'gone', path: 'ca.pem' } }] } };
    await expect(setUpPodVolumes(deps, pod([missing], ['trust']))).rejects.toThrow(
      'MountVolume.SetUp failed for volume "trust" : while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "gone" not found',
    );
    const optional = { name: 'trust', projected: { sources: [{ clusterTrustBundle: { name: 'gone', path: 'ca.pem', optional: true } }] } };
    await setUpPodVolumes(deps, pod([optional], ['trust']));
    expect(await readFile(path.join(volumeDir('projected', 'trust'), 'ca.pem'), 'utf8')).toBe('');
  });

  it('fails the volume with the kubelet\'s error where the API server serves no ClusterTrustBundles, or there is none', async () => {
    const { api, deps } = await setUp();
    api.trustBundleVersions = [];
    const trust = { name: 'trust', projected: { sources: [{ clusterTrustBundle: { name: 'one', path: 'ca.pem', optional: true } }] } };
    const expected = 'MountVolume.SetUp failed for volume "trust" : ClusterTrustBundle projection is not supported in static kubelet mode';
    await expect(setUpPodVolumes(deps, pod([trust], ['trust']))).rejects.toThrow(expected);
    const { objects: _, ...withoutApi } = deps;
    await expect(setUpPodVolumes(withoutApi, pod([trust], ['trust']))).rejects.toThrow(expected);
  });
});

describe('tearDownPodVolumes', () => {
  it("unmounts the pod's tmpfs and forgets its tokens once it has terminated, and removes its directory once it is gone", async () => {
    const { deps, mounter, tokens, podsDir } = await setUp();
    const access = { name: 'access', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } };
    await setUpPodVolumes(deps, pod([access], ['access']));
    expect(tokens.size).toBe(1);
    await tearDownPodVolumes(deps, 'u1', { removeDir: false });
    expect(mounter.unmounted).toHaveLength(1);
    expect(tokens.size).toBe(0);
    expect(await readdir(podsDir)).toEqual(['u1']);
    await tearDownPodVolumes(deps, 'u1', { removeDir: true });
    expect(await readdir(podsDir)).toEqual([]);
  });

  it("keeps a pod directory while a CSI driver's mount is left under it, and removes it once none is", async () => {
    const { deps, mounter, podsDir } = await setUp();
    const target = path.join(podsDir, 'u1', 'volumes', 'kubernetes.io~csi', 'pv-1', 'mount');
    await mkdir(target, { recursive: true });
    await writeFile(path.join(target, 'data'), 'the volume');
    mounter.others.add(target);
    await expect(tearDownPodVolumes(deps, 'u1', { removeDir: true })).rejects.toThrow(`orphaned pod "u1" found, but volume paths are still present on disk: ${target}`);
    expect(await readFile(path.join(target, 'data'), 'utf8')).toBe('the volume');
    // Unmounted, with the driver's data gone with its mount: the directory goes.
    mounter.others.delete(target);
    await rm(path.join(target, 'data'));
    await tearDownPodVolumes(deps, 'u1', { removeDir: true });
    expect(await readdir(podsDir)).toEqual([]);
  });
});

describe("setUpPodVolumes with the pod's fsGroup", () => {
  const withFsGroup = (volumes: unknown[], mounts: string[]) => pod(volumes, mounts, { securityContext: { fsGroup: 2000 } });
  const owner = async (at: string) => {
    const info = await lstat(at);
    return `${info.gid} ${(info.mode & 0o7777).toString(8)}`;
  };

  it('gives an emptyDir to the group, setgid and group-writable, once: at its first setup', async () => {
    if (!asRootOrSkip("an emptyDir given to the pod's fsGroup")) return;
    const { deps, volumeDir } = await setUp();
    const scratch = { name: 'scratch', emptyDir: {} };
    await setUpPodVolumes(deps, withFsGroup([scratch], ['scratch']));
    expect(await owner(volumeDir('empty-dir', 'scratch'))).toBe('2000 2777');
    // Set up already (its marker is there): later syncs do not walk it again, as SetUpAt returns early.
    await chown(volumeDir('empty-dir', 'scratch'), 0, 0);
    await setUpPodVolumes(deps, withFsGroup([scratch], ['scratch']));
    expect(await owner(volumeDir('empty-dir', 'scratch'))).toBe('0 2777');
  });

  it('gives secret and configMap files to the group, readable by it, before they become visible; an unchanged set is not written again', async () => {
    if (!asRootOrSkip("payload volumes given to the pod's fsGroup")) return;
    const { api, deps, volumeDir } = await setUp();
    api.secrets.set('shop/creds', { data: { p: Buffer.from('pw').toString('base64') } });
    api.configMaps.set('shop/cfg', { data: { a: '1' } });
    const volumes = [
      { name: 'creds', secret: { secretName: 'creds', defaultMode: 0o400 } },
      { name: 'cfg', configMap: { name: 'cfg' } },
    ];
    await setUpPodVolumes(deps, withFsGroup(volumes, ['creds', 'cfg']));
    const creds = volumeDir('secret', 'creds');
    const data = await readlink(path.join(creds, '..data'));
    expect(await owner(path.join(creds, data, 'p'))).toBe('2000 440');
    expect(await owner(path.join(creds, data))).toBe('2000 2755');
    // The volume's root is an emptyDir's (0777), which the ownership change gives setgid.
    expect(await owner(creds)).toBe('2000 2777');
    expect(await owner(path.join(volumeDir('configmap', 'cfg'), '..data', 'a'))).toBe('2000 644');
    await setUpPodVolumes(deps, withFsGroup(volumes, ['creds', 'cfg']));
    expect(await readlink(path.join(creds, '..data'))).toBe(data);
    // Without fsGroup the files keep the group they were written with.
    const { api: api2, deps: deps2, volumeDir: volumeDir2 } = await setUp();
    api2.secrets.set('shop/creds', { data: { p: Buffer.from('pw').toString('base64') } });
    await setUpPodVolumes(deps2, pod([volumes[0]], ['creds']));
    expect(await owner(path.join(volumeDir2('secret', 'creds'), '..data', 'p'))).toBe(`${process.getgid!()} 400`);
  });

  it("leaves a hostPath alone: it is the node's own path", async () => {
    if (!asRootOrSkip("a hostPath next to the pod's fsGroup")) return;
    const { deps, podsDir } = await setUp();
    const host = path.join(podsDir, 'host');
    await setUpPodVolumes(deps, withFsGroup([{ name: 'host', hostPath: { path: host, type: 'DirectoryOrCreate' } }], ['host']));
    expect(await owner(host)).toBe(`${process.getgid!()} 755`);
  });

  it('sets the volume up when the system refuses the group, and says so once per cause', async () => {
    const { deps, volumeDir } = await setUp();
    const lines: unknown[][] = [];
    const refusing = {
      lstat: (at: string) => lstat(at),
      stat: (at: string) => stat(at),
      readdir: (at: string) => readdir(at),
      lchown: async (at: string) => {
        throw Object.assign(new Error(`EPERM: operation not permitted, lchown '${at}'`), { code: 'EPERM' });
      },
      chmod: async () => {},
    };
    const refused = { ...deps, ownershipFs: refusing, log: (...line: unknown[]) => void lines.push(line) };
    await setUpPodVolumes(refused, withFsGroup([{ name: 'one', emptyDir: {} }, { name: 'two', emptyDir: {} }], ['one', 'two']));
    expect(await readdir(volumeDir('empty-dir', 'one'))).toEqual([]);
    expect(await readdir(volumeDir('empty-dir', 'two'))).toEqual([]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject(['warn', expect.stringContaining("Cannot give a volume's files to the pod's fsGroup"), { fsGroup: 2000, err: { code: 'EPERM' } }]);
  });
});
