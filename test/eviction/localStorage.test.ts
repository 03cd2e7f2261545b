/**
 * Local ephemeral storage limits (src/eviction/localStorage.ts; pkg/kubelet/eviction/
 * eviction_manager.go localStorageEviction, emptyDirLimitEviction, podEphemeralStorageLimitEviction,
 * containerEphemeralStorageLimitEviction; component-helpers resource PodLimits; stats/helper.go
 * calcEphemeralStorage; resource.Quantity String): which pods go, with which message, and how the
 * limits and usage are added up and printed; and the effect that evicts them (evictPod: the
 * Evicted event, 1 s, critical pods left alone), reading the pods' usage only when one has a
 * limit it could break.
 */
import { describe, expect, it, vi } from 'vitest';
import type { Container, Pod } from '../../src/api/types.ts';
import { createEvictionEffects } from '../../src/eviction/effects.ts';
import {
  type Quantity,
  canonicalQuantity,
  hasLocalStorageLimit,
  localStorageViolations,
  podEphemeralStorageLimit,
  podEphemeralStorageUsage,
  quantityOf,
} from '../../src/eviction/localStorage.ts';
import type { PodSummary, Summary } from '../../src/stats/summary.ts';
import type { PodVolume } from '../../src/volumes/plan.ts';
import { basePod, ctr, sidecar } from '../support/podFixtures.ts';
import { RecordedEvents } from '../support/recordedEvents.ts';

const Ki = 1024;
const Mi = 1024 * Ki;
const Gi = 1024 * Mi;
const T0 = Date.parse('2026-03-01T12:00:00Z');

interface PodOptions {
  containers?: Container[];
  initContainers?: Container[];
  volumes?: PodVolume[];
  overhead?: Record<string, string>;
}

function pod(name: string, options: PodOptions = {}): Pod {
  const p = basePod({ containers: options.containers ?? [ctr('main')] });
  p.metadata = { ...p.metadata, name, uid: `uid-${name}` };
  if (options.initContainers) p.spec.initContainers = options.initContainers;
  if (options.volumes) p.spec['volumes'] = options.volumes;
  if (options.overhead) p.spec.overhead = options.overhead;
  return p;
}

/** A container limited to `limit` of ephemeral storage. */
const limited = (name: string, limit: string, extra: Partial<Container> = {}): Container => ctr(name, { resources: { limits: { 'ephemeral-storage': limit } }, ...extra });

type ContainerFigures = { name: string; rootfs?: number; logs?: number };

/** The pod's Summary entry: its containers' writable layers and logs, its volumes' usage by name. */
function stats(p: Pod, containers: ContainerFigures[], volumes: Record<string, number | undefined> = {}): PodSummary {
  return {
    podRef: { name: p.metadata.name, namespace: p.metadata.namespace, uid: p.metadata.uid },
    startTime: T0,
    containers: containers.map((c) => ({
      name: c.name,
      startTime: T0,
      ...(c.rootfs !== undefined ? { rootfs: { time: T0, usedBytes: c.rootfs } } : {}),
      ...(c.logs !== undefined ? { logs: { time: T0, usedBytes: c.logs } } : {}),
    })),
    volume: Object.entries(volumes).map(([name, usedBytes]) => ({ name, time: T0, ...(usedBytes !== undefined ? { usedBytes } : {}) })),
  };
}

describe('canonicalQuantity: as resource.Quantity prints it', () => {
  it.each<[string | number, string]>([
    ['1Mi', '1Mi'],
    ['1024Ki', '1Mi'],
    ['1536Ki', '1536Ki'],
    ['1.5Gi', '1536Mi'],
    ['1024Mi', '1Gi'],
    // BinarySI below 1024, or not whole, is printed in decimal units.
    ['0.5Ki', '512'],
    ['1000', '1k'],
    ['2097152', '2097152'],
    ['1G', '1G'],
    ['1500M', '1500M'],
    ['2000M', '2G'],
    ['1.5G', '1500M'],
    ['1.5', '1500m'],
    ['100m', '100m'],
    ['1e3', '1e3'],
    ['1500e3', '1500e3'],
    ['0', '0'],
    ['0Mi', '0'],
    [2048, '2048'],
  ])('%s → %s', (written, printed) => {
    expect(canonicalQuantity(quantityOf(written)!)).toBe(printed);
  });

  it('knows nothing of an absent or malformed quantity', () => {
    expect(quantityOf(undefined)).toBeUndefined();
    expect(quantityOf('1 Mi')).toBeUndefined();
    expect(quantityOf('lots')).toBeUndefined();
  });
});

describe("podEphemeralStorageLimit: the containers' limits added up as PodLimits does", () => {
  it.each<[string, PodOptions, string | undefined]>([
    ['no container names ephemeral-storage: no limit', { containers: [ctr('a'), ctr('b', { resources: { limits: { memory: '1Gi' } } })] }, undefined],
    ['only the containers that name one count', { containers: [limited('a', '1Mi'), ctr('b')] }, '1Mi'],
    ['regular containers are summed', { containers: [limited('a', '1Mi'), limited('b', '1Mi')] }, '2Mi'],
    ['the sum keeps the first form, and prints as a plain number when no binary unit divides it', { containers: [limited('a', '1Gi'), limited('b', '500M')] }, String(2 ** 30 + 500_000_000)],
    ['a zero first takes the next one form', { containers: [limited('a', '0'), limited('b', '1Mi')] }, '1Mi'],
    ['a limit of zero is a limit', { containers: [limited('a', '0'), ctr('b')] }, '0'],
    ['an init container asking more than the regular ones sets it', { containers: [limited('a', '2Mi')], initContainers: [limited('init', '3Mi')] }, '3Mi'],
    ['an init container asking less changes nothing', { containers: [limited('a', '2Mi')], initContainers: [limited('init', '1Mi')] }, '2Mi'],
    ['sidecars add to the regular containers', { containers: [limited('a', '1Mi')], initContainers: [sidecar('log', { resources: { limits: { 'ephemeral-storage': '1Mi' } } })] }, '2Mi'],
    [
      'an init container after a sidecar runs beside it',
      { containers: [limited('a', '1Mi')], initContainers: [sidecar('log', { resources: { limits: { 'ephemeral-storage': '1Mi' } } }), limited('init', '2Mi')] },
      '3Mi',
    ],
    ['the overhead is added to a limit', { containers: [limited('a', '1Mi')], overhead: { 'ephemeral-storage': '1Mi' } }, '2Mi'],
    ['but not to a limit of zero', { containers: [limited('a', '0')], overhead: { 'ephemeral-storage': '1Mi' } }, '0'],
    ['nor where there is none', { containers: [ctr('a')], overhead: { 'ephemeral-storage': '1Mi' } }, undefined],
  ])('%s', (_case, options, expected) => {
    const limit = podEphemeralStorageLimit(pod('p', options));
    expect(limit === undefined ? undefined : canonicalQuantity(limit as Quantity)).toBe(expected);
  });
});

describe('podEphemeralStorageUsage: what calcEphemeralStorage adds up', () => {
  it('counts the writable layers with their logs, and the local ephemeral volumes only', () => {
    const p = pod('p', {
      containers: [ctr('a'), ctr('b'), ctr('c')],
      volumes: [
        { name: 'disk', emptyDir: {} },
        { name: 'ram', emptyDir: { medium: 'Memory' } },
        { name: 'config', configMap: { name: 'cm' } },
        { name: 'host', hostPath: { path: '/var/data' } },
      ],
    });
    const s = stats(
      p,
      [
        { name: 'a', rootfs: 1 * Mi, logs: 100 * Ki },
        { name: 'b', rootfs: 2 * Mi },
        // Logs without a writable layer figure are not counted (addContainerUsage).
        { name: 'c', logs: 5 * Mi },
      ],
      { disk: 3 * Mi, ram: 7 * Mi, config: 4 * Ki, host: 9 * Mi, unknown: 11 * Mi },
    );
    expect(podEphemeralStorageUsage(p, s)).toBe(1 * Mi + 100 * Ki + 2 * Mi + 3 * Mi + 4 * Ki);
  });
});

describe('localStorageViolations', () => {
  const cache = (sizeLimit?: string | number, medium?: string): PodVolume => ({ name: 'cache', emptyDir: { ...(sizeLimit !== undefined ? { sizeLimit } : {}), ...(medium ? { medium } : {}) } });

  it.each<[string, PodOptions, ContainerFigures[], Record<string, number | undefined>, string | null]>([
    // emptyDir sizeLimit
    ['an emptyDir above its sizeLimit', { volumes: [cache('1Mi')] }, [{ name: 'main', rootfs: 0 }], { cache: 2 * Mi }, 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". '],
    ['an emptyDir at its sizeLimit stays', { volumes: [cache('1Mi')] }, [{ name: 'main', rootfs: 0 }], { cache: 1 * Mi }, null],
    ['the limit is printed canonically', { volumes: [cache('1024Ki')] }, [{ name: 'main' }], { cache: 2 * Mi }, 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". '],
    ['a decimal limit stays decimal', { volumes: [cache('1000000')] }, [{ name: 'main' }], { cache: 2 * Mi }, 'Usage of EmptyDir volume "cache" exceeds the limit "1M". '],
    ['an emptyDir without a sizeLimit has none', { volumes: [cache()] }, [{ name: 'main' }], { cache: 100 * Mi }, null],
    ['a sizeLimit of zero is none', { volumes: [cache('0')] }, [{ name: 'main' }], { cache: 100 * Mi }, null],
    ['an emptyDir without usage figures is not judged', { volumes: [cache('1Mi')] }, [{ name: 'main' }], { cache: undefined }, null],
    // The kubelet asks only for an emptyDir with a size limit: the medium does not matter.
    ['a memory-backed emptyDir above its sizeLimit', { volumes: [cache('1Mi', 'Memory')] }, [{ name: 'main' }], { cache: 2 * Mi }, 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". '],
    [
      'the first emptyDir over its limit, in the pod order, is named',
      { volumes: [{ name: 'a', emptyDir: { sizeLimit: '1Mi' } }, { name: 'b', emptyDir: { sizeLimit: '1Ki' } }] },
      [{ name: 'main' }],
      { b: 2 * Mi, a: 2 * Mi },
      'Usage of EmptyDir volume "a" exceeds the limit "1Mi". ',
    ],
    // the pod's total
    [
      "the pod's usage above its containers' limits together",
      { containers: [limited('a', '1Mi'), limited('b', '1Mi')], volumes: [cache()] },
      [
        { name: 'a', rootfs: 512 * Ki },
        { name: 'b', rootfs: 512 * Ki },
      ],
      { cache: 1 * Mi + 1 },
      'Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. ',
    ],
    [
      "a container without a limit counts toward the pod's usage, not its limit",
      { containers: [limited('a', '1Mi'), ctr('b')] },
      [
        { name: 'a', rootfs: 100 * Ki },
        { name: 'b', rootfs: 1 * Mi },
      ],
      {},
      'Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. ',
    ],
    ['a limit of zero allows nothing (the pod rule has no zero check)', { containers: [limited('a', '0')] }, [{ name: 'a', rootfs: 4 * Ki }], {}, 'Pod ephemeral local storage usage exceeds the total limit of containers 0. '],
    [
      "a memory-backed emptyDir is not the pod's ephemeral storage",
      { containers: [limited('a', '1Mi')], volumes: [cache(undefined, 'Memory')] },
      [{ name: 'a', rootfs: 100 * Ki }],
      { cache: 10 * Mi },
      null,
    ],
    // a container's own limit
    [
      'a container above its own limit, the pod within its total',
      { containers: [limited('a', '1Mi'), limited('b', '10Mi')] },
      [
        { name: 'a', rootfs: 1 * Mi, logs: 1 },
        { name: 'b', rootfs: 0 },
      ],
      {},
      'Container a exceeded its local ephemeral storage limit "1Mi". ',
    ],
    [
      'the first container over, in the stats order, is named',
      { containers: [limited('a', '1Mi'), limited('b', '1Mi'), limited('c', '100Mi')] },
      [
        { name: 'b', rootfs: 2 * Mi },
        { name: 'a', rootfs: 2 * Mi },
        { name: 'c', rootfs: 0 },
      ],
      {},
      'Container b exceeded its local ephemeral storage limit "1Mi". ',
    ],
    [
      "logs count for a container even without its writable layer's figure",
      { containers: [limited('a', '1Ki'), limited('b', '1Gi')] },
      [
        { name: 'a', logs: 2 * Ki },
        { name: 'b', rootfs: 0 },
      ],
      {},
      'Container a exceeded its local ephemeral storage limit "1Ki". ',
    ],
    ['a container within its limit stays', { containers: [limited('a', '1Mi')] }, [{ name: 'a', rootfs: 1 * Mi }], {}, null],
    [
      'an init container is held to the pod total, not to a limit of its own',
      { containers: [limited('a', '10Mi')], initContainers: [limited('init', '1Ki')] },
      [
        { name: 'a', rootfs: 0 },
        { name: 'init', rootfs: 2 * Mi },
      ],
      {},
      null,
    ],
    // order of the rules
    [
      'the emptyDir rule comes before the pod and container rules',
      { containers: [limited('a', '1Ki')], volumes: [cache('1Ki')] },
      [{ name: 'a', rootfs: 1 * Mi }],
      { cache: 1 * Mi },
      'Usage of EmptyDir volume "cache" exceeds the limit "1Ki". ',
    ],
    ['the pod rule comes before the container rule', { containers: [limited('a', '1Ki')] }, [{ name: 'a', rootfs: 1 * Mi }], {}, 'Pod ephemeral local storage usage exceeds the total limit of containers 1Ki. '],
  ])('%s', (_case, options, containers, volumes, message) => {
    const p = pod('p', options);
    const violations = localStorageViolations([p], () => stats(p, containers, volumes));
    expect(violations.map((v) => v.message)).toEqual(message === null ? [] : [message]);
  });

  it.each<[string, boolean, string | null]>([
    ['on one disk its writable layer counts', false, 'Container a exceeded its local ephemeral storage limit "1Mi". '],
    ['with a dedicated image filesystem only its logs count: the layer is on the other disk', true, null],
  ])("a container's own limit: %s", (_case, dedicated, message) => {
    // 2Mi of writable layer, 512Ki of logs, a 1Mi limit; the pod within its 11Mi.
    const p = pod('p', { containers: [limited('a', '1Mi'), limited('b', '10Mi')] });
    const figures = stats(p, [
      { name: 'a', rootfs: 2 * Mi, logs: 512 * Ki },
      { name: 'b', rootfs: 0 },
    ]);
    expect(localStorageViolations([p], () => figures, dedicated).map((v) => v.message)).toEqual(message === null ? [] : [message]);
  });

  it('names every pod over a limit, in the order given, and skips pods without stats', () => {
    const over = pod('over', { volumes: [cache('1Mi')] });
    const fine = pod('fine', { containers: [limited('main', '1Gi')] });
    const unmeasured = pod('unmeasured', { containers: [limited('main', '1Ki')] });
    const greedy = pod('greedy', { containers: [limited('main', '1Mi'), limited('side', '1Gi')] });
    const figures: Record<string, PodSummary> = {
      over: stats(over, [{ name: 'main', rootfs: 0 }], { cache: 5 * Mi }),
      fine: stats(fine, [{ name: 'main', rootfs: 5 * Mi }]),
      greedy: stats(greedy, [
        { name: 'main', rootfs: 5 * Mi },
        { name: 'side', rootfs: 0 },
      ]),
    };
    const violations = localStorageViolations([greedy, unmeasured, fine, over], (p) => figures[p.metadata.name]);
    expect(violations.map((v) => [v.pod.metadata.name, v.message])).toEqual([
      ['greedy', 'Container main exceeded its local ephemeral storage limit "1Mi". '],
      ['over', 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". '],
    ]);
  });
});

describe('hasLocalStorageLimit: whether any rule can name the pod', () => {
  it.each<[string, PodOptions, boolean]>([
    ['no limit, an emptyDir without a size limit', { volumes: [{ name: 'cache', emptyDir: {} }] }, false],
    ['an emptyDir sized 0 (no limit)', { volumes: [{ name: 'cache', emptyDir: { sizeLimit: '0' } }] }, false],
    ['a memory emptyDir with a size limit', { volumes: [{ name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } }] }, true],
    ['a container limit', { containers: [ctr('a'), limited('b', '1Gi')] }, true],
    ['an init container limit only', { initContainers: [limited('setup', '1Gi')] }, true],
    ['a sidecar limit only', { initContainers: [sidecar('proxy', { resources: { limits: { 'ephemeral-storage': '1Gi' } } })] }, true],
    ['a container limit of 0', { containers: [limited('main', '0')] }, true],
    ['only an overhead', { overhead: { 'ephemeral-storage': '1Gi' } }, false],
  ])('%s: %s', (_, options, expected) => {
    expect(hasLocalStorageLimit(pod('p', options))).toBe(expected);
  });

  it('agrees with the rules: a pod it passes over breaks none, whatever it uses', () => {
    const unlimited = [pod('free', { volumes: [{ name: 'cache', emptyDir: {} }] }), pod('over', { overhead: { 'ephemeral-storage': '1Ki' } })];
    const huge = (p: Pod) => stats(p, [{ name: 'main', rootfs: 50 * Gi, logs: 50 * Gi }], { cache: 50 * Gi });
    expect(unlimited.filter(hasLocalStorageLimit)).toEqual([]);
    expect(localStorageViolations(unlimited, huge)).toEqual([]);
  });
});

describe('localStorageEviction (the effect)', () => {
  function node(pods: Pod[], summaries: PodSummary[]) {
    const recorder = new RecordedEvents();
    const readNode = vi.fn(async (): Promise<Omit<Summary, 'pods'>> => ({ node: { nodeName: 'n', startTime: T0 } }));
    const summary = vi.fn(async (): Promise<Summary> => ({ ...(await readNode()), pods: summaries }));
    const effects = createEvictionEffects({
      nodeName: 'n',
      stats: { summary, readNode },
      activePods: () => pods,
      podCleanedUp: () => true,
      deleteAllUnusedContainers: async () => {},
      deleteUnusedImages: async () => {},
      recorder,
      now: () => T0,
      log: () => {},
    });
    return { effects, recorder, summary, readNode };
  }

  it('evicts each pod over a limit with 1 s and tells it why, from one Summary read for the check, leaving critical pods alone', async () => {
    const over = pod('over', { volumes: [{ name: 'cache', emptyDir: { sizeLimit: '1Mi' } }] });
    const critical = pod('critical', { containers: [limited('main', '1Ki')] });
    critical.spec.priority = 2_000_000_000;
    const greedy = pod('greedy', { containers: [limited('main', '1Mi'), limited('side', '1Gi')] });
    const { effects, recorder, summary } = node(
      [over, critical, greedy],
      [
        stats(over, [{ name: 'main', rootfs: 0 }], { cache: 2 * Mi }),
        stats(critical, [{ name: 'main', rootfs: 1 * Mi }]),
        stats(greedy, [
          { name: 'main', rootfs: 2 * Mi },
          { name: 'side', rootfs: 0 },
        ]),
      ],
    );
    await effects.observe();
    const chosen = await effects.localStorageEviction();
    expect(summary).toHaveBeenCalledTimes(1);
    expect(chosen).toEqual([
      { uid: 'uid-over', pod: 'default/over', gracePeriodSeconds: 1, message: 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". ' },
      { uid: 'uid-greedy', pod: 'default/greedy', gracePeriodSeconds: 1, message: 'Container main exceeded its local ephemeral storage limit "1Mi". ' },
    ]);
    expect(recorder.events.map((e) => [e.object.name, e.type, e.reason, e.message])).toEqual([
      ['over', 'Warning', 'Evicted', 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". '],
      ['greedy', 'Warning', 'Evicted', 'Container main exceeded its local ephemeral storage limit "1Mi". '],
    ]);
  });

  it('evicts nobody when all are within their limits', async () => {
    const fine = pod('fine', { containers: [limited('main', '1Gi')] });
    const { effects, recorder, summary } = node([fine], [stats(fine, [{ name: 'main', rootfs: 1 * Mi }])]);
    expect(await effects.localStorageEviction()).toEqual([]);
    expect(summary).toHaveBeenCalledTimes(1);
    expect(recorder.events).toEqual([]);
  });

  it('reads no pod when no active pod has a limit to break, however much they use', async () => {
    const free = pod('free', { volumes: [{ name: 'cache', emptyDir: {} }] });
    const zero = pod('zero', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '0' } }] });
    const { effects, summary, readNode } = node([free, zero], [stats(free, [{ name: 'main', rootfs: 50 * Gi }], { cache: 50 * Gi }), stats(zero, [{ name: 'main', rootfs: 0 }], { scratch: 50 * Gi })]);
    await effects.observe();
    expect(await effects.localStorageEviction()).toEqual([]);
    expect(readNode).toHaveBeenCalledTimes(1);
    expect(summary).not.toHaveBeenCalled();
  });
});
