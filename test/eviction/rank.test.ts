/**
 * Which pod the eviction manager evicts first, what it tells it, and how long it gives it
 * (src/eviction/rank.ts; pkg/kubelet/eviction/helpers.go rankMemoryPressure,
 * rankDiskPressureFunc, rankPIDPressure, evictionMessage; eviction_manager.go synchronize), and
 * which pods are never evicted (src/api/types.ts isCriticalPod; kubelettypes.IsCriticalPod).
 */
import { describe, expect, it } from 'vitest';
import { type Container, type Pod, isCriticalPod } from '../../src/api/types.ts';
import { type DiskUsagePart, diskUsageCountedFor } from '../../src/eviction/diskSignals.ts';
import { evictionGracePeriodSeconds, evictionMessage, podDiskUsage, rankForEviction } from '../../src/eviction/rank.ts';
import type { Observations } from '../../src/eviction/synchronize.ts';
import type { Signal, Threshold } from '../../src/eviction/thresholds.ts';
import type { PodSummary } from '../../src/stats/summary.ts';
import type { PodVolume } from '../../src/volumes/plan.ts';
import { basePod, ctr } from '../support/podFixtures.ts';

const Mi = 1024 * 1024;
const Gi = 1024 * Mi;
const T0 = Date.parse('2026-03-01T12:00:00Z');

interface PodOptions {
  priority?: number;
  containers?: Container[];
  volumes?: PodVolume[];
  terminationGracePeriodSeconds?: number;
  annotations?: Record<string, string>;
}

function pod(name: string, options: PodOptions = {}): Pod {
  const p = basePod({ containers: options.containers ?? [ctr('main')] });
  p.metadata = { ...p.metadata, name, uid: `uid-${name}`, ...(options.annotations ? { annotations: options.annotations } : {}) };
  if (options.priority !== undefined) p.spec.priority = options.priority;
  if (options.volumes) p.spec['volumes'] = options.volumes;
  if (options.terminationGracePeriodSeconds !== undefined) p.spec.terminationGracePeriodSeconds = options.terminationGracePeriodSeconds;
  return p;
}

/** A container asking for `requests` (`{ memory: '100Mi' }`). */
const asking = (name: string, requests: Record<string, string>): Container => ctr(name, { resources: { requests } });

type ContainerFigures = { name: string; memory?: number; rootfs?: number; logs?: number; rootfsInodes?: number; logsInodes?: number };

/** The pod's Summary entry: each container's figures, and the pod's working set as their sum. */
function summary(p: Pod, containers: ContainerFigures[], extra: Partial<PodSummary> = {}): PodSummary {
  const memory = containers.reduce((sum, c) => sum + (c.memory ?? 0), 0);
  return {
    podRef: { name: p.metadata.name, namespace: p.metadata.namespace, uid: p.metadata.uid },
    startTime: T0,
    containers: containers.map((c) => ({
      name: c.name,
      startTime: T0,
      ...(c.memory !== undefined ? { memory: { time: T0, workingSetBytes: c.memory } } : {}),
      ...(c.rootfs !== undefined || c.rootfsInodes !== undefined ? { rootfs: { time: T0, usedBytes: c.rootfs, inodesUsed: c.rootfsInodes } } : {}),
      ...(c.logs !== undefined || c.logsInodes !== undefined ? { logs: { time: T0, usedBytes: c.logs, inodesUsed: c.logsInodes } } : {}),
    })),
    memory: { time: T0, workingSetBytes: memory },
    ...extra,
  };
}

/** Ranks `pods` for `signal`, with the stats given by pod name; names in eviction order. */
function ranked(signal: Signal, pods: Pod[], stats: Record<string, PodSummary>): string[] {
  return rankForEviction(signal, pods, (p) => stats[p.metadata.name]).map((p) => p.metadata.name);
}

describe('rankForEviction: memory', () => {
  it.each<[string, Pod[], Record<string, ContainerFigures[]>, string[]]>([
    [
      'a pod above its request goes before one within it, whatever their priorities and sizes',
      [pod('within', { containers: [asking('main', { memory: '2Gi' })] }), pod('above', { priority: 1000, containers: [asking('main', { memory: '10Mi' })] })],
      { within: [{ name: 'main', memory: 1900 * Mi }], above: [{ name: 'main', memory: 20 * Mi }] },
      ['above', 'within'],
    ],
    [
      'a BestEffort pod using anything is above its request',
      [pod('guaranteed', { containers: [asking('main', { memory: '1Gi' })] }), pod('besteffort')],
      { guaranteed: [{ name: 'main', memory: 900 * Mi }], besteffort: [{ name: 'main', memory: 1 * Mi }] },
      ['besteffort', 'guaranteed'],
    ],
    [
      'among pods above their request, lower priority first, even with the smaller excess',
      [pod('big', { priority: 10 }), pod('small', { priority: 0 })],
      { big: [{ name: 'main', memory: 3 * Gi }], small: [{ name: 'main', memory: 10 * Mi }] },
      ['small', 'big'],
    ],
    [
      'negative priorities count as lower',
      [pod('zero'), pod('negative', { priority: -5 })],
      { zero: [{ name: 'main', memory: 3 * Gi }], negative: [{ name: 'main', memory: 10 * Mi }] },
      ['negative', 'zero'],
    ],
    [
      'same priority: the larger usage above the request first',
      [pod('a', { containers: [asking('main', { memory: '100Mi' })] }), pod('b', { containers: [asking('main', { memory: '1Gi' })] }), pod('c')],
      // Excess: a 400Mi, b 600Mi, c 300Mi.
      { a: [{ name: 'main', memory: 500 * Mi }], b: [{ name: 'main', memory: 1624 * Mi }], c: [{ name: 'main', memory: 300 * Mi }] },
      ['b', 'a', 'c'],
    ],
    [
      'among pods within their request: lower priority first, then the one closest to its request',
      [pod('far', { containers: [asking('main', { memory: '1Gi' })] }), pod('near', { containers: [asking('main', { memory: '1Gi' })] }), pod('low', { priority: -1, containers: [asking('main', { memory: '1Gi' })] })],
      { far: [{ name: 'main', memory: 100 * Mi }], near: [{ name: 'main', memory: 1000 * Mi }], low: [{ name: 'main', memory: 1 * Mi }] },
      ['low', 'near', 'far'],
    ],
    [
      'a pod without stats goes first, even a high-priority one',
      [pod('hog'), pod('unknown', { priority: 1_000_000 })],
      { hog: [{ name: 'main', memory: 3 * Gi }] },
      ['unknown', 'hog'],
    ],
    [
      'all the rules at once',
      [
        pod('within', { containers: [asking('main', { memory: '100Mi' })] }),
        pod('besteffort-small'),
        pod('burstable-big', { containers: [asking('main', { memory: '100Mi' })] }),
        pod('important', { priority: 1000 }),
        pod('nostats', { priority: 1000 }),
      ],
      {
        'within': [{ name: 'main', memory: 50 * Mi }],
        'besteffort-small': [{ name: 'main', memory: 10 * Mi }],
        'burstable-big': [{ name: 'main', memory: 300 * Mi }],
        'important': [{ name: 'main', memory: 500 * Mi }],
      },
      ['nostats', 'burstable-big', 'besteffort-small', 'important', 'within'],
    ],
  ])('%s', (_case, pods, figures, expected) => {
    const byName = Object.fromEntries(pods.filter((p) => figures[p.metadata.name]).map((p) => [p.metadata.name, summary(p, figures[p.metadata.name]!)]));
    expect(ranked('memory.available', pods, byName)).toEqual(expected);
  });

  it('counts a pod\'s request as the sum of its containers\'', () => {
    // 2 × 300Mi requested, 500Mi used: within; the BestEffort one using 1Mi is above.
    const two = pod('two', { containers: [asking('a', { memory: '300Mi' }), asking('b', { memory: '300Mi' })] });
    const tiny = pod('tiny');
    const stats = { two: summary(two, [{ name: 'a', memory: 250 * Mi }, { name: 'b', memory: 250 * Mi }]), tiny: summary(tiny, [{ name: 'main', memory: 1 * Mi }]) };
    expect(ranked('memory.available', [two, tiny], stats)).toEqual(['tiny', 'two']);
  });

  it('keeps the given order between pods that compare equal', () => {
    const pods = [pod('x'), pod('y'), pod('z')];
    const stats = Object.fromEntries(pods.map((p) => [p.metadata.name, summary(p, [{ name: 'main', memory: 100 * Mi }])]));
    expect(ranked('memory.available', pods, stats)).toEqual(['x', 'y', 'z']);
    expect(ranked('memory.available', [...pods].reverse(), stats)).toEqual(['z', 'y', 'x']);
  });
});

describe('podDiskUsage', () => {
  const volumes: PodVolume[] = [
    { name: 'cache', emptyDir: {} },
    { name: 'scratch', emptyDir: { medium: '' } },
    { name: 'shm', emptyDir: { medium: 'Memory' } },
    { name: 'host', hostPath: { path: '/var/data' } },
  ];
  const p = pod('disk', { containers: [ctr('a'), ctr('b')], volumes });
  const stats = summary(
    p,
    [
      { name: 'a', rootfs: 100 * Mi, logs: 10 * Mi, rootfsInodes: 40, logsInodes: 2 },
      { name: 'b', rootfs: 20 * Mi, logs: 2 * Mi, rootfsInodes: 7, logsInodes: 1 },
    ],
    {
      volume: [
        { name: 'cache', time: T0, usedBytes: 1 * Gi, inodesUsed: 1_000 },
        { name: 'scratch', time: T0, usedBytes: 3 * Mi, inodesUsed: 30 },
        { name: 'shm', time: T0, usedBytes: 5 * Gi, inodesUsed: 50_000 },
        { name: 'host', time: T0, usedBytes: 300 * Mi, inodesUsed: 300 },
        // A volume the pod does not declare is not the pod's to count.
        { name: 'stray', time: T0, usedBytes: 7 * Gi, inodesUsed: 70_000 },
      ],
    },
  );

  it.each<['ephemeral-storage' | 'inodes', number]>([
    // Containers' writable layers and logs, the emptyDirs on disk and the hostPath; not the tmpfs emptyDir.
    ['ephemeral-storage', 100 * Mi + 10 * Mi + 20 * Mi + 2 * Mi + 1 * Gi + 3 * Mi + 300 * Mi],
    ['inodes', 40 + 2 + 7 + 1 + 1_000 + 30 + 300],
  ])('counts %s', (resource, expected) => {
    expect(podDiskUsage(p, stats, resource)).toBe(expected);
  });

  it.each<[DiskUsagePart[], number, number]>([
    // A dedicated image filesystem's nodefs: logs and local volumes.
    [['logs', 'localVolumes'], 10 * Mi + 2 * Mi + 1 * Gi + 3 * Mi + 300 * Mi, 2 + 1 + 1_000 + 30 + 300],
    // Its imagefs: the writable layers.
    [['rootfs'], 100 * Mi + 20 * Mi, 40 + 7],
    [[], 0, 0],
  ])('counts only %j when told', (counted, bytes, inodes) => {
    expect(podDiskUsage(p, stats, 'ephemeral-storage', counted)).toBe(bytes);
    expect(podDiskUsage(p, stats, 'inodes', counted)).toBe(inodes);
  });

  it('counts a container without log figures by its writable layer alone', () => {
    const q = pod('nologs');
    expect(podDiskUsage(q, summary(q, [{ name: 'main', rootfs: 5 * Mi }]), 'ephemeral-storage')).toBe(5 * Mi);
  });
});

describe('rankForEviction: disk (nodefs.available)', () => {
  it('ranks by the containers\' layers and logs plus the pod\'s local volumes; a Memory emptyDir does not count', () => {
    const withCache = pod('cache', { volumes: [{ name: 'cache', emptyDir: {} }] });
    const withShm = pod('shm', { volumes: [{ name: 'shm', emptyDir: { medium: 'Memory' } }] });
    const asked = pod('asked', { containers: [asking('main', { 'ephemeral-storage': '2Gi' })] });
    const stats = {
      // 100Mi + 10Mi + 1Gi = 1134Mi
      cache: summary(withCache, [{ name: 'main', rootfs: 100 * Mi, logs: 10 * Mi }], { volume: [{ name: 'cache', time: T0, usedBytes: 1 * Gi }] }),
      // 200Mi; 5Gi more if the tmpfs volume were wrongly counted.
      shm: summary(withShm, [{ name: 'main', rootfs: 200 * Mi, logs: 0 }], { volume: [{ name: 'shm', time: T0, usedBytes: 5 * Gi }] }),
      // 1.5Gi used, 2Gi requested: within its request, so last despite using most.
      asked: summary(asked, [{ name: 'main', rootfs: 1536 * Mi, logs: 0 }]),
    };
    expect(ranked('nodefs.available', [asked, withShm, withCache], stats)).toEqual(['cache', 'shm', 'asked']);
  });

  it('puts lower priority first among pods above their request, and a pod without stats before all', () => {
    const big = pod('big', { priority: 100 });
    const small = pod('small');
    const unknown = pod('unknown', { priority: 100 });
    const stats = { big: summary(big, [{ name: 'main', rootfs: 5 * Gi, logs: 0 }]), small: summary(small, [{ name: 'main', rootfs: 1 * Mi, logs: 0 }]) };
    expect(ranked('nodefs.available', [big, small, unknown], stats)).toEqual(['unknown', 'small', 'big']);
  });

  it('ranks by inodes for nodefs.inodesFree', () => {
    const many = pod('many');
    const few = pod('few');
    const stats = {
      many: summary(many, [{ name: 'main', rootfs: 1 * Mi, logs: 0, rootfsInodes: 10_000, logsInodes: 1 }]),
      few: summary(few, [{ name: 'main', rootfs: 4 * Gi, logs: 0, rootfsInodes: 10, logsInodes: 1 }]),
    };
    expect(ranked('nodefs.inodesFree', [few, many], stats)).toEqual(['many', 'few']);
    expect(ranked('nodefs.available', [many, few], stats)).toEqual(['few', 'many']);
  });
});

describe('rankForEviction: disk, with or without a dedicated image filesystem', () => {
  // `layers` holds most in its writable layer, `volumes` in its emptyDir and logs; neither asks for storage.
  const layers = pod('layers');
  const volumes = pod('volumes', { volumes: [{ name: 'cache', emptyDir: {} }] });
  const stats = {
    layers: summary(layers, [{ name: 'main', rootfs: 900 * Mi, logs: 1 * Mi, rootfsInodes: 9_000, logsInodes: 1 }]),
    volumes: summary(volumes, [{ name: 'main', rootfs: 1 * Mi, logs: 300 * Mi, rootfsInodes: 10, logsInodes: 2 }], { volume: [{ name: 'cache', time: T0, usedBytes: 500 * Mi, inodesUsed: 5_000 }] }),
  };

  it.each<[Signal, boolean, string[]]>([
    // One disk: all a pod holds counts, layers 901Mi against volumes 801Mi (inodes 9001 against 5012).
    ['nodefs.available', false, ['layers', 'volumes']],
    ['imagefs.available', false, ['layers', 'volumes']],
    ['nodefs.inodesFree', false, ['layers', 'volumes']],
    // Dedicated: nodefs counts logs and volumes (1Mi against 800Mi), imagefs the writable layers.
    ['nodefs.available', true, ['volumes', 'layers']],
    ['nodefs.inodesFree', true, ['volumes', 'layers']],
    ['imagefs.available', true, ['layers', 'volumes']],
    ['imagefs.inodesFree', true, ['layers', 'volumes']],
  ])('%s, dedicated %s: %j', (signal, dedicated, expected) => {
    expect(rankForEviction(signal, [volumes, layers], (p) => stats[p.metadata.name as keyof typeof stats], diskUsageCountedFor(signal, dedicated)).map((p) => p.metadata.name)).toEqual(expected);
  });

  it('compares the request with what the signal counts', () => {
    // 1Gi requested; 900Mi of writable layer and 200Mi of emptyDir: above its request on one disk
    // (1100Mi), within it on a dedicated image filesystem's nodefs (200Mi).
    const asked = pod('asked', { containers: [asking('main', { 'ephemeral-storage': '1Gi' })], volumes: [{ name: 'cache', emptyDir: {} }] });
    // BestEffort with 50Mi of logs: above its request (0) wherever logs count.
    const other = pod('other');
    const figures = {
      asked: summary(asked, [{ name: 'main', rootfs: 900 * Mi, logs: 0 }], { volume: [{ name: 'cache', time: T0, usedBytes: 200 * Mi }] }),
      other: summary(other, [{ name: 'main', rootfs: 0, logs: 50 * Mi }]),
    };
    const rank = (dedicated: boolean) =>
      rankForEviction('nodefs.available', [other, asked], (p) => figures[p.metadata.name as keyof typeof figures], diskUsageCountedFor('nodefs.available', dedicated)).map((p) => p.metadata.name);
    // Both above: the larger excess first (76Mi against 50Mi).
    expect(rank(false)).toEqual(['asked', 'other']);
    expect(rank(true)).toEqual(['other', 'asked']);
  });
});

describe('rankForEviction: pids', () => {
  it('puts lower priority first, then more processes; a pod without stats counts none', () => {
    const withProcs = (p: Pod, count: number) => summary(p, [{ name: 'main' }], { process_stats: { process_count: count } });
    const a = pod('a');
    const b = pod('b');
    const c = pod('c', { priority: 100 });
    const d = pod('d');
    const e = pod('e', { priority: -1 });
    const stats = { a: withProcs(a, 5), b: withProcs(b, 50), c: withProcs(c, 1_000), e: withProcs(e, 1) };
    expect(ranked('pid.available', [a, b, c, d, e], stats)).toEqual(['e', 'b', 'a', 'd', 'c']);
  });
});

describe('evictionMessage', () => {
  const memoryThreshold: Threshold = { signal: 'memory.available', value: { quantity: 500 * Mi }, gracePeriodMs: 0 };
  const memoryObserved: Observations = { 'memory.available': { available: 400 * Mi, capacity: 4 * Gi, time: T0 } };

  it('names the resource, the threshold and what was available, and each container above its request', () => {
    const p = pod('hog-pod', { containers: [ctr('hog'), asking('calm', { memory: '200Mi' })] });
    const stats = summary(p, [
      { name: 'hog', memory: 600 * Mi },
      { name: 'calm', memory: 100 * Mi },
    ]);
    expect(evictionMessage('memory', memoryThreshold, memoryObserved, p, stats)).toBe(
      'The node was low on resource: memory. Threshold quantity: 500Mi, available: 400Mi. Container hog was using 600Mi, request is 0, has larger consumption of memory. ',
    );
  });

  it('names every container above its request, with the request', () => {
    const p = pod('two', { containers: [asking('a', { memory: '200Mi' }), asking('b', { memory: '1Gi' })] });
    const stats = summary(p, [
      { name: 'a', memory: 300 * Mi },
      { name: 'b', memory: 2 * Gi },
    ]);
    expect(evictionMessage('memory', memoryThreshold, memoryObserved, p, stats)).toBe(
      'The node was low on resource: memory. Threshold quantity: 500Mi, available: 400Mi. ' +
        'Container a was using 300Mi, request is 200Mi, has larger consumption of memory. ' +
        'Container b was using 2Gi, request is 1Gi, has larger consumption of memory. ',
    );
  });

  it('names no container when all are within their request, nor one using exactly its request', () => {
    const p = pod('fine', { containers: [asking('a', { memory: '200Mi' }), asking('b', { memory: '1Gi' })] });
    const stats = summary(p, [
      { name: 'a', memory: 200 * Mi },
      { name: 'b', memory: 10 * Mi },
    ]);
    expect(evictionMessage('memory', memoryThreshold, memoryObserved, p, stats)).toBe('The node was low on resource: memory. Threshold quantity: 500Mi, available: 400Mi. ');
  });

  it('ends after the threshold when the pod has no stats, and after the resource when the signal was not observed', () => {
    const p = pod('ghost');
    expect(evictionMessage('memory', memoryThreshold, memoryObserved, p, undefined)).toBe('The node was low on resource: memory. Threshold quantity: 500Mi, available: 400Mi. ');
    expect(evictionMessage('memory', memoryThreshold, {}, p, undefined)).toBe('The node was low on resource: memory. ');
  });

  it('states a percentage threshold as its quantity of the capacity, and counts layers and logs for ephemeral storage', () => {
    const disk: Threshold = { signal: 'nodefs.available', value: { percentage: 0.1 }, gracePeriodMs: 0 };
    const observed: Observations = { 'nodefs.available': { available: 5 * Gi, capacity: 100 * Gi, time: T0 } };
    const p = pod('writer', { containers: [ctr('writer'), ctr('quiet')] });
    const stats = summary(p, [
      { name: 'writer', rootfs: 1 * Gi, logs: 512 * Mi },
      // No log figure: its use is not known, so it is not named.
      { name: 'quiet', rootfs: 3 * Gi },
    ]);
    // 10% of 100Gi is 10737418240 bytes = 10Gi.
    expect(evictionMessage('ephemeral-storage', disk, observed, p, stats)).toBe(
      'The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 5Gi. Container writer was using 1536Mi, request is 0, has larger consumption of ephemeral-storage. ',
    );
  });

  it('names no container for pids', () => {
    const pids: Threshold = { signal: 'pid.available', value: { quantity: 300 }, gracePeriodMs: 0 };
    const p = pod('forker');
    const stats = summary(p, [{ name: 'main', memory: 1 * Gi }], { process_stats: { process_count: 30_000 } });
    expect(evictionMessage('pids', pids, { 'pid.available': { available: 250, capacity: 32_768, time: T0 } }, p, stats)).toBe(
      'The node was low on resource: pids. Threshold quantity: 300, available: 250. ',
    );
  });
});

describe('evictionGracePeriodSeconds', () => {
  const hardThreshold: Threshold = { signal: 'memory.available', value: { quantity: 100 * Mi }, gracePeriodMs: 0 };
  const softThreshold: Threshold = { signal: 'memory.available', value: { quantity: 1 * Gi }, gracePeriodMs: 90_000 };

  it.each<[string, Threshold, number | undefined, number, number]>([
    ['hard: 1 s whatever the pod asks', hardThreshold, 30, 60, 1],
    ['hard: 1 s for a pod without its own', hardThreshold, undefined, 60, 1],
    ['hard: 1 s even for a pod asking 0', hardThreshold, 0, 60, 1],
    ["soft: the pod's own when shorter than the maximum", softThreshold, 10, 60, 10],
    ['soft: the maximum when the pod asks more', softThreshold, 600, 60, 60],
    ['soft: equal', softThreshold, 60, 60, 60],
    ['soft: the maximum for a pod without its own', softThreshold, undefined, 45, 45],
    ['soft: 0 when the pod asks 0', softThreshold, 0, 60, 0],
  ])('%s', (_case, threshold, own, max, expected) => {
    const p = pod('p', own === undefined ? {} : { terminationGracePeriodSeconds: own });
    expect(evictionGracePeriodSeconds(threshold, p, max)).toBe(expected);
  });
});

describe('isCriticalPod', () => {
  it.each<[string, PodOptions, boolean]>([
    ['a static pod from a file', { annotations: { 'kubernetes.io/config.source': 'file' } }, true],
    ['a static pod from a URL', { annotations: { 'kubernetes.io/config.source': 'http' } }, true],
    ['a mirror pod', { annotations: { 'kubernetes.io/config.source': 'api', 'kubernetes.io/config.mirror': 'abc123' } }, true],
    ['a pod of system-critical priority (2000000000)', { priority: 2_000_000_000 }, true],
    ['a pod of system-node-critical priority (2000001000)', { priority: 2_000_001_000 }, true],
    ['a pod just below system-critical priority', { priority: 1_999_999_999 }, false],
    ['an ordinary API pod', { annotations: { 'kubernetes.io/config.source': 'api' } }, false],
    ['a pod without annotations', {}, false],
  ])('%s: %s', (_case, options, expected) => {
    expect(isCriticalPod(pod('p', options))).toBe(expected);
  });
});
