/**
 * The kubelet's cgroup hierarchy and each level's settings (cm/podResources.ts), from tables whose
 * values are worked out from the upstream rules: pkg/kubelet/cm/helpers_linux.go MilliCPUToShares
 * = floor(milli·1024/1000) (min 2), MilliCPUToQuota = floor(milli·100000/1000), ResourceConfigForPod
 * over PodRequests/PodLimits (k8s.io/component-helpers/resource/helpers.go);
 * pkg/kubelet/cm/qos_container_manager_linux.go setCPUCgroupConfig;
 * pkg/kubelet/cm/node_container_manager_linux.go enforceNodeAllocatableCgroups.
 */
import { describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../src/api/types.ts';
import {
  BESTEFFORT_CGROUP_CONFIG,
  burstableCgroupConfig,
  kubepodsCgroup,
  kubepodsCgroupConfig,
  podCgroup,
  podCgroupConfig,
  podHugePageLimits,
  podUidOfCgroup,
  qosCgroup,
} from '../../src/cm/podResources.ts';
import { container, makePod } from '../support/pods.ts';

const Mi = 2 ** 20;
const Gi = 2 ** 30;
const UID = '0e5c7d1e-9a4b-4f3a-8c2d-5b6a7e8f9012';

type Resources = NonNullable<Container['resources']>;
/** A container whose requests equal its limits (what makes a Guaranteed pod). */
const exact = (name: string, cpu: string, memory: string, extra: Partial<Container> = {}): Container =>
  container(name, { resources: { requests: { cpu, memory }, limits: { cpu, memory } }, ...extra });
const withResources = (name: string, resources: Resources, extra: Partial<Container> = {}): Container => container(name, { resources, ...extra });
const pod = (spec: Partial<Pod['spec']>, uid = UID): Pod => makePod('web', spec, uid);

const guaranteed = pod({ containers: [exact('app', '100m', '64Mi')] });
const burstable = pod({ containers: [withResources('app', { requests: { cpu: '250m' } })] });
const bestEffort = pod({ containers: [container('app')] });

describe('the cgroup paths (cgroupfs driver names)', () => {
  it.each([
    ['/', '/kubepods'],
    ['', '/kubepods'],
    ['/statelet', '/statelet/kubepods'],
    ['/statelet/', '/statelet/kubepods'],
  ])('cgroup root %j: kubepods at %s', (root, kubepods) => {
    expect(kubepodsCgroup(root)).toBe(kubepods);
  });

  it.each([
    ['/', 'Guaranteed', '/kubepods'],
    ['/', 'Burstable', '/kubepods/burstable'],
    ['/', 'BestEffort', '/kubepods/besteffort'],
    ['', 'Guaranteed', '/kubepods'],
    ['', 'Burstable', '/kubepods/burstable'],
    ['', 'BestEffort', '/kubepods/besteffort'],
    ['/statelet', 'Guaranteed', '/statelet/kubepods'],
    ['/statelet', 'Burstable', '/statelet/kubepods/burstable'],
    ['/statelet', 'BestEffort', '/statelet/kubepods/besteffort'],
  ] as const)('cgroup root %j, %s: %s', (root, qos, cgroup) => {
    expect(qosCgroup(root, qos)).toBe(cgroup);
  });

  it.each([
    ['/', guaranteed, `/kubepods/pod${UID}`],
    ['/', burstable, `/kubepods/burstable/pod${UID}`],
    ['/', bestEffort, `/kubepods/besteffort/pod${UID}`],
    ['', guaranteed, `/kubepods/pod${UID}`],
    ['', burstable, `/kubepods/burstable/pod${UID}`],
    ['', bestEffort, `/kubepods/besteffort/pod${UID}`],
    ['/statelet', guaranteed, `/statelet/kubepods/pod${UID}`],
    ['/statelet', burstable, `/statelet/kubepods/burstable/pod${UID}`],
    ['/statelet', bestEffort, `/statelet/kubepods/besteffort/pod${UID}`],
  ])('cgroup root %j: the pod cgroup %s (a Guaranteed pod right under kubepods)', (root, p, cgroup) => {
    expect(podCgroup(root, p)).toBe(cgroup);
  });

  it('places a pod by its pod-level resources: Guaranteed ones under kubepods, whatever its containers ask', () => {
    const podLevel = (resources: Resources) => pod({ resources, containers: [container('app')] } as Partial<Pod['spec']>);
    expect(podCgroup('/', podLevel({ limits: { cpu: '1', memory: '1Gi' } }))).toBe(`/kubepods/pod${UID}`);
    expect(podCgroup('/', podLevel({ requests: { cpu: '1', memory: '1Gi' } }))).toBe(`/kubepods/burstable/pod${UID}`);
  });
});

describe('podUidOfCgroup: pod<uid> directories (GetAllPodsFromCgroups)', () => {
  it.each([
    [`pod${UID}`, UID],
    ['pod0123abcd', '0123abcd'],
    // A static pod's UID is the hex hash of its manifest.
    ['pod6b1d3c1f0c3f2a5e9d8b7a6c5d4e3f21', '6b1d3c1f0c3f2a5e9d8b7a6c5d4e3f21'],
  ])('%s: uid %s', (name, uid) => expect(podUidOfCgroup(name)).toBe(uid));

  // Names without "pod" in them, which upstream passes over too ("Skipping unrecognized cgroup").
  it.each(['burstable', 'besteffort', 'k8s.io', 'system.slice', '', UID])('%j: not a pod cgroup', (name) => {
    expect(podUidOfCgroup(name)).toBeNull();
  });

  it('a pod cgroup whose UID is not hex (a static pod given `metadata.uid: static-web`) is a pod cgroup all the same', () => {
    // Upstream GetAllPodsFromCgroups takes whatever follows "pod" as the UID: such a pod's cgroup,
    // once orphaned, is found and removed by cleanupOrphanedPodCgroups.
    expect(podUidOfCgroup('podstatic-web')).toBe('static-web');
  });
});

describe('podCgroupConfig (ResourceConfigForPod)', () => {
  it.each<[string, Pod, number, object]>([
    [
      'Guaranteed 2 × (100m, 64Mi): shares of 200m, a 20 ms quota, 128Mi',
      pod({ containers: [exact('a', '100m', '64Mi'), exact('b', '100m', '64Mi')] }),
      -1,
      { cpuShares: 204, cpuQuota: 20_000, cpuPeriod: 100_000, memoryLimitBytes: 134_217_728 },
    ],
    [
      'Burstable with requests only: the shares alone',
      pod({ containers: [withResources('a', { requests: { cpu: '250m', memory: '64Mi' } }), withResources('b', { requests: { cpu: '100m' } })] }),
      -1,
      { cpuShares: 358 },
    ],
    [
      'Burstable, every container with a CPU limit (one without a memory limit): the quota, no memory limit',
      pod({
        containers: [
          withResources('a', { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } }),
          withResources('b', { requests: { cpu: '100m' }, limits: { cpu: '300m' } }),
        ],
      }),
      -1,
      { cpuShares: 204, cpuQuota: 50_000, cpuPeriod: 100_000 },
    ],
    [
      'Burstable, every container with a memory limit (one without a CPU limit): the memory limit, no quota',
      pod({
        containers: [
          withResources('a', { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } }),
          withResources('b', { requests: { memory: '16Mi' }, limits: { memory: '128Mi' } }),
        ],
      }),
      -1,
      { cpuShares: 102, memoryLimitBytes: 192 * Mi },
    ],
    ['BestEffort: the minimum shares only', bestEffort, -1, { cpuShares: 2 }],
    [
      'an init container larger than the regular ones: its requests and limits count',
      pod({ initContainers: [exact('init', '500m', '256Mi')], containers: [exact('app', '100m', '64Mi')] }),
      -1,
      { cpuShares: 512, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimitBytes: 256 * Mi },
    ],
    [
      'an init container smaller than the regular ones: the regular ones count',
      pod({ initContainers: [exact('init', '50m', '16Mi')], containers: [exact('app', '100m', '64Mi'), exact('app2', '100m', '64Mi')] }),
      -1,
      { cpuShares: 204, cpuQuota: 20_000, cpuPeriod: 100_000, memoryLimitBytes: 128 * Mi },
    ],
    [
      'a sidecar (init container with restartPolicy Always) runs beside the regular ones: summed',
      pod({ initContainers: [exact('proxy', '200m', '32Mi', { restartPolicy: 'Always' })], containers: [exact('app', '100m', '64Mi')] }),
      -1,
      { cpuShares: 307, cpuQuota: 30_000, cpuPeriod: 100_000, memoryLimitBytes: 96 * Mi },
    ],
    [
      'the overhead is added (RuntimeClass overhead)',
      pod({ containers: [exact('app', '100m', '64Mi')], overhead: { cpu: '50m', memory: '16Mi' } }),
      -1,
      { cpuShares: 153, cpuQuota: 15_000, cpuPeriod: 100_000, memoryLimitBytes: 80 * Mi },
    ],
    ['--pod-max-pids 100: pids.max 100', guaranteed, 100, { cpuShares: 102, cpuQuota: 10_000, cpuPeriod: 100_000, memoryLimitBytes: 64 * Mi, pidsLimit: 100 }],
    ['--pod-max-pids 100 on a BestEffort pod too', bestEffort, 100, { cpuShares: 2, pidsLimit: 100 }],
    ['--pod-max-pids -1: no pids limit', guaranteed, -1, { cpuShares: 102, cpuQuota: 10_000, cpuPeriod: 100_000, memoryLimitBytes: 64 * Mi }],
    ['--pod-max-pids 0: no pids limit', burstable, 0, { cpuShares: 256 }],
  ])('%s', (_case, p, pids, config) => {
    expect(podCgroupConfig(p, pids, [])).toEqual(config);
  });

  it('an init container after a sidecar runs beside it: the pod needs max(regular + sidecars, sidecars before it + init) (PodLimits)', () => {
    // component-helpers resource.PodLimits / aggregateContainerResourcesByFn:
    //   regular + sidecar = 100m + 200m = 300m, 64Mi + 32Mi = 96Mi
    //   while `init` runs:  200m + 250m = 450m, 32Mi + 128Mi = 160Mi   (the sidecar started before it)
    // The requests follow the same rule (PodRequests): shares of 450m = 460.
    const p = pod({
      initContainers: [exact('proxy', '200m', '32Mi', { restartPolicy: 'Always' }), exact('init', '250m', '128Mi')],
      containers: [exact('app', '100m', '64Mi')],
    });
    expect(podCgroupConfig(p, -1, [])).toEqual({ cpuShares: 460, cpuQuota: 45_000, cpuPeriod: 100_000, memoryLimitBytes: 160 * Mi });
  });

  it('pod-level limits (spec.resources, PodLevelResources) bound the pod cgroup, as pod-level requests give its shares', () => {
    // ResourceConfigForPod: PodLimits applies spec.resources.limits, and a pod-level CPU or memory
    // limit counts as declared even where a container declares none.
    const p = pod({
      resources: { requests: { cpu: '500m', memory: '256Mi' }, limits: { cpu: '1', memory: '512Mi' } },
      containers: [withResources('app', { requests: { cpu: '100m' } })],
    });
    expect(podCgroupConfig(p, -1, [])).toEqual({ cpuShares: 512, cpuQuota: 100_000, cpuPeriod: 100_000, memoryLimitBytes: 512 * Mi });
  });
});

describe('podHugePageLimits (HugePageLimits over PodRequests, maybeSetHugetlb)', () => {
  const HOST = ['1GB', '2MB'];
  /** Huge pages as the API has them: requests equal to limits (defaulting copies limits into requests). */
  const huge = (name: string, amounts: Record<string, string>, extra: Partial<Container> = {}): Container =>
    withResources(name, { requests: { cpu: '100m', memory: '64Mi', ...amounts }, limits: { cpu: '100m', memory: '64Mi', ...amounts } }, extra);
  it.each<[string, Pod, readonly string[], Record<string, number>]>([
    ['no huge pages asked: every host size denied (0)', guaranteed, HOST, { '1GB': 0, '2MB': 0 }],
    ['no huge pages on the host, none asked: nothing', guaranteed, [], {}],
    ['one container, 2Mi pages: its request, the other size 0', pod({ containers: [huge('app', { 'hugepages-2Mi': '100Mi' })] }), HOST, { '1GB': 0, '2MB': 100 * Mi }],
    [
      'two containers: summed per size',
      pod({ containers: [huge('a', { 'hugepages-2Mi': '10Mi' }), huge('b', { 'hugepages-2Mi': '6Mi', 'hugepages-1Gi': '2Gi' })] }),
      HOST,
      { '1GB': 2 * Gi, '2MB': 16 * Mi },
    ],
    [
      'one size spelled two ways (2Mi and 2048Ki): the same page size, summed',
      pod({ containers: [huge('a', { 'hugepages-2Mi': '4Mi' }), huge('b', { 'hugepages-2048Ki': '2Mi' })] }),
      HOST,
      { '1GB': 0, '2MB': 6 * Mi },
    ],
    [
      'an init container larger than the regular ones: its request (PodRequests)',
      pod({ initContainers: [huge('init', { 'hugepages-2Mi': '20Mi' })], containers: [huge('app', { 'hugepages-2Mi': '4Mi' })] }),
      HOST,
      { '1GB': 0, '2MB': 20 * Mi },
    ],
  ])('%s', (_case, p, host, limits) => expect(podHugePageLimits(p, host)).toEqual(limits));

  it('podCgroupConfig carries them for every QoS class, BestEffort too', () => {
    expect(podCgroupConfig(bestEffort, -1, HOST)).toEqual({ cpuShares: 2, hugePageLimits: { '1GB': 0, '2MB': 0 } });
    expect(podCgroupConfig(pod({ containers: [huge('app', { 'hugepages-1Gi': '1Gi' })] }), -1, HOST)).toEqual({
      cpuShares: 102,
      cpuQuota: 10_000,
      cpuPeriod: 100_000,
      memoryLimitBytes: 64 * Mi,
      hugePageLimits: { '1GB': Gi, '2MB': 0 },
    });
  });
});

describe('burstableCgroupConfig (setCPUCgroupConfig): the Burstable pods\' CPU requests', () => {
  const b = (name: string, cpu: string) => makePod(name, { containers: [withResources('app', { requests: { cpu } })] }, `${name}-0001`);
  it.each<[string, Pod[], number]>([
    ['250m + 500m', [b('a', '250m'), b('b', '500m')], 768],
    ['no pods', [], 2],
    ['only Guaranteed and BestEffort pods', [guaranteed, bestEffort], 2],
    ['250m + 500m beside a Guaranteed pod of 4 CPUs and a BestEffort pod', [b('a', '250m'), pod({ containers: [exact('big', '4', '1Gi')] }), b('b', '500m'), bestEffort], 768],
    ['a Burstable pod asking memory only', [makePod('m', { containers: [withResources('app', { requests: { memory: '64Mi' } })] })], 2],
  ])('%s: %d shares', (_case, pods, shares) => {
    expect(burstableCgroupConfig(pods)).toEqual({ cpuShares: shares });
  });

  it('the besteffort cgroup: the minimum shares', () => expect(BESTEFFORT_CGROUP_CONFIG).toEqual({ cpuShares: 2 }));
});

describe('kubepodsCgroupConfig (enforceNodeAllocatableCgroups)', () => {
  const capacity = { milliCpu: 4000, memoryBytes: 8 * Gi };
  const reserved = { cpu: 500, memory: 1 * Gi };

  it('pods enforced: allocatable = capacity − reserved (3500m → 3584 shares, 7Gi)', () => {
    expect(kubepodsCgroupConfig(capacity, reserved, true)).toEqual({ cpuShares: 3584, memoryLimitBytes: 7 * Gi });
  });

  it('not enforced: the capacity (4096 shares, 8Gi)', () => {
    expect(kubepodsCgroupConfig(capacity, reserved, false)).toEqual({ cpuShares: 4096, memoryLimitBytes: 8 * Gi });
  });

  it('no reserves: the capacity', () => {
    expect(kubepodsCgroupConfig(capacity, {}, true)).toEqual({ cpuShares: 4096, memoryLimitBytes: 8 * Gi });
  });

  it('a pid reserve, enforced: pids.max = the pid capacity less it', () => {
    expect(kubepodsCgroupConfig({ ...capacity, pids: 4_194_304 }, { ...reserved, pid: 1000 }, true)).toEqual({ cpuShares: 3584, memoryLimitBytes: 7 * Gi, pidsLimit: 4_193_304 });
  });

  it('a pid reserve without a known pid capacity: no pids limit', () => {
    expect(kubepodsCgroupConfig(capacity, { ...reserved, pid: 1000 }, true)).toEqual({ cpuShares: 3584, memoryLimitBytes: 7 * Gi });
  });
});
