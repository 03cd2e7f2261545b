/** The pure parts of /stats/summary and /metrics/resource (src/server/stats.ts), table by table. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Container, ContainerStats, CpuUsage, PodSandbox, PodSandboxStats } from '../../src/runtime/types.ts';
import {
  CpuRates,
  type HostUsage,
  type Summary,
  nodeSummary,
  onlyCpuAndMemory,
  parseMeminfo,
  parseProcStat,
  podSummaries,
  removeTerminatedPods,
  resourceMetricsText,
  summaryJson,
} from '../../src/stats/summary.ts';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

describe('the host figures', () => {
  it('reads busy CPU time and the boot time from /proc/stat', () => {
    const text = 'cpu  100 20 30 9000 50 4 6 2 7 0\ncpu0 50 10 15 4500 25 2 3 1 3 0\nintr 1 2 3\nbtime 1767225600\nprocesses 42\n';
    // user + nice + system + irq + softirq + steal = 162 ticks of 10 ms; idle, iowait and guest are not busy.
    expect(parseProcStat(text)).toEqual({ bootTime: 1767225600_000, cpuNanoseconds: 162 * 10_000_000 });
  });

  it('reads memory and swap from /proc/meminfo', () => {
    const text = 'MemTotal:        8000000 kB\nMemFree:         5000000 kB\nMemAvailable:    6000000 kB\nInactive(file):  1000000 kB\nSwapTotal:       2000 kB\nSwapFree:        1500 kB\n';
    expect(parseMeminfo(text)).toEqual({ memTotalBytes: 8000000 * 1024, memFreeBytes: 5000000 * 1024, inactiveFileBytes: 1000000 * 1024, swapTotalBytes: 2000 * 1024, swapFreeBytes: 1500 * 1024 });
  });

  it.each([
    ['/proc/stat without btime', () => parseProcStat('cpu  1 2 3 4 5 6 7 8\n'), '/proc/stat has no "cpu" or "btime" line'],
    ['/proc/meminfo without Inactive(file)', () => parseMeminfo('MemTotal: 1 kB\nMemFree: 1 kB\n'), '/proc/meminfo has no "Inactive(file)"'],
  ])('names what is missing: %s', (_, read, message) => {
    expect(read).toThrow(message);
  });

  const host: HostUsage = { bootTime: T0 - 3_600_000, cpuNanoseconds: 4e9, memTotalBytes: 1000, memFreeBytes: 300, inactiveFileBytes: 200, swapTotalBytes: 0, swapFreeBytes: 0 };

  it.each<[string, HostUsage, object]>([
    ['no swap', host, { memory: { time: T0, usageBytes: 700, workingSetBytes: 500, availableBytes: 500 } }],
    ['swap in use', { ...host, swapTotalBytes: 100, swapFreeBytes: 40 }, { swap: { time: T0, swapUsageBytes: 60, swapAvailableBytes: 40 } }],
    ['more inactive file pages than usage', { ...host, inactiveFileBytes: 900 }, { memory: { time: T0, usageBytes: 700, workingSetBytes: 0, availableBytes: 1000 } }],
  ])('makes the node summary: %s', (_, usage, expected) => {
    const node = nodeSummary('n1', usage, T0, new CpuRates());
    expect(node).toMatchObject({ nodeName: 'n1', startTime: host.bootTime, cpu: { time: T0, usageCoreNanoSeconds: 4e9 }, ...expected });
    if (usage.swapTotalBytes === 0) expect(node.swap).toBeUndefined();
  });

  it("gives the node's CPU rate from its previous sample", () => {
    const rates = new CpuRates();
    expect(nodeSummary('n1', host, T0, rates).cpu?.usageNanoCores).toBeUndefined();
    expect(nodeSummary('n1', { ...host, cpuNanoseconds: 4e9 + 3e9 }, T0 + 2000, rates).cpu?.usageNanoCores).toBe(1.5e9);
  });
});

describe('CpuRates (getAndUpdateContainerUsageNanoCores)', () => {
  const sample = (timestamp: number, usageCoreNanoSeconds?: number, usageNanoCores?: number): CpuUsage => ({
    timestamp,
    ...(usageCoreNanoSeconds === undefined ? {} : { usageCoreNanoSeconds }),
    ...(usageNanoCores === undefined ? {} : { usageNanoCores }),
  });
  it.each<[string, CpuUsage[], (number | undefined)[]]>([
    ['a first sample has no rate, the next one does', [sample(0, 1e9), sample(1000, 1.25e9)], [undefined, 2.5e8]],
    ['over ten seconds', [sample(0, 0), sample(10_000, 5e9)], [undefined, 5e8]],
    ["the runtime's own figure wins and is not a sample", [sample(0, 1e9), sample(500, 2e9, 7), sample(1000, 1.5e9)], [undefined, 7, 5e8]],
    ['a counter that went back starts over', [sample(0, 5e9), sample(1000, 1e9), sample(2000, 2e9)], [undefined, undefined, 1e9]],
    ['a sample no newer than the last gets the last rate', [sample(0, 0), sample(1000, 1e9), sample(1000, 1e9)], [undefined, 1e9, 1e9]],
    ['no cumulative usage, no rate', [sample(0), sample(1000)], [undefined, undefined]],
  ])('%s', (_, samples, expected) => {
    const rates = new CpuRates();
    expect(samples.map((s) => rates.update('c1', s))).toEqual(expected);
  });

  it('forgets what is gone, and keeps the ids still live', () => {
    const rates = new CpuRates();
    rates.update('gone', sample(0, 1));
    rates.update('live', sample(0, 1));
    rates.retain(new Set(['live']));
    expect(rates.size).toBe(1);
    expect(rates.update('gone', sample(1000, 1e9 + 1))).toBeUndefined();
    expect(rates.update('live', sample(1000, 1e9 + 1))).toBe(1e9);
  });
});

// ------------------------------------------------------------------------------------------------
// Pods

const podMeta = (name: string) => ({ name, namespace: 'ns', uid: `uid-${name}`, attempt: 0 });

function sandbox(id: string, name: string, state: PodSandbox['state'] = 'SANDBOX_READY', createdAt = T0): PodSandbox {
  return { id, metadata: podMeta(name), state, createdAt, labels: {}, annotations: {}, runtimeHandler: '' };
}

function container(id: string, sandboxId: string, name: string, state: Container['state'] = 'CONTAINER_RUNNING'): Container {
  return { id, podSandboxId: sandboxId, metadata: { name, attempt: 0 }, image: 'busybox', imageRef: 'sha256:1', state, createdAt: T0 + 1000, labels: {}, annotations: {} };
}

function containerStats(id: string, name: string, cpu: number, memory: number, extra: Partial<ContainerStats> = {}): ContainerStats {
  return {
    attributes: { id, metadata: { name, attempt: 0 }, labels: {}, annotations: {} },
    cpu: { timestamp: T0 + 5000, usageCoreNanoSeconds: cpu },
    memory: { timestamp: T0 + 5000, workingSetBytes: memory, usageBytes: memory + 10 },
    ...extra,
  };
}

function sandboxStats(id: string, name: string, containers: ContainerStats[], cpu: number, memory: number): PodSandboxStats {
  return {
    attributes: { id, metadata: podMeta(name), labels: {}, annotations: {} },
    linux: { cpu: { timestamp: T0 + 5000, usageCoreNanoSeconds: cpu }, memory: { timestamp: T0 + 5000, workingSetBytes: memory }, process: { timestamp: T0 + 5000, processCount: 3 }, containers },
  };
}

describe('removeTerminatedPods', () => {
  it.each<[string, PodSandbox[], string[]]>([
    ['one sandbox per pod stays, whatever its state', [sandbox('a', 'p', 'SANDBOX_NOTREADY')], ['a']],
    ['the ready one of a recreated pod', [sandbox('old', 'p', 'SANDBOX_NOTREADY', T0), sandbox('new', 'p', 'SANDBOX_READY', T0 + 1)], ['new']],
    ['the newest when none is ready', [sandbox('new', 'p', 'SANDBOX_NOTREADY', T0 + 1), sandbox('old', 'p', 'SANDBOX_NOTREADY', T0)], ['new']],
    ['pods of other names are apart', [sandbox('a', 'p'), sandbox('b', 'q', 'SANDBOX_NOTREADY')], ['a', 'b']],
  ])('%s', (_, sandboxes, kept) => {
    expect(removeTerminatedPods(sandboxes).map((s) => s.id).sort()).toEqual(kept);
  });
});

describe('podSummaries', () => {
  const options = { onlyCpuAndMemory: false, now: T0 + 9000 };
  const sandboxes = [sandbox('s1', 'web'), sandbox('s-old', 'web', 'SANDBOX_NOTREADY', T0 - 1)];
  const containers = [container('c1', 's1', 'app'), container('c2', 's1', 'side'), container('dead', 's1', 'app', 'CONTAINER_EXITED')];

  it("takes the pod's figures from its sandbox stats, and only the running containers it knows", () => {
    const stats = [
      sandboxStats('s1', 'web', [containerStats('c1', 'app', 2e9, 100), containerStats('dead', 'app', 1e9, 0), containerStats('c2', 'side', 1e9, 50)], 4e9, 999),
      sandboxStats('s-old', 'web', [], 1, 1),
    ];
    const [pod, ...others] = podSummaries({ sandboxes, containers, stats: { sandboxes: stats } }, new CpuRates(), options);
    expect(others).toEqual([]);
    expect(pod).toEqual({
      podRef: { name: 'web', namespace: 'ns', uid: 'uid-web' },
      startTime: T0,
      containers: [
        { name: 'app', startTime: T0 + 1000, cpu: { time: T0 + 5000, usageCoreNanoSeconds: 2e9 }, memory: { time: T0 + 5000, workingSetBytes: 100, usageBytes: 110 } },
        { name: 'side', startTime: T0 + 1000, cpu: { time: T0 + 5000, usageCoreNanoSeconds: 1e9 }, memory: { time: T0 + 5000, workingSetBytes: 50, usageBytes: 60 } },
      ],
      cpu: { time: T0 + 5000, usageCoreNanoSeconds: 4e9 },
      memory: { time: T0 + 5000, workingSetBytes: 999 },
      process_stats: { process_count: 3 },
    });
  });

  it("sums the containers' figures into the pod's when there are container stats only", () => {
    const stats = [containerStats('c1', 'app', 2e9, 100, { cpu: { timestamp: T0 + 5000, usageCoreNanoSeconds: 2e9, usageNanoCores: 30 } }), containerStats('c2', 'side', 1e9, 50)];
    const [pod] = podSummaries({ sandboxes, containers, stats: { containers: stats } }, new CpuRates(), options);
    expect(pod?.containers.map((c) => c.name)).toEqual(['app', 'side']);
    expect(pod?.cpu).toEqual({ time: T0 + 5000, usageCoreNanoSeconds: 3e9, usageNanoCores: 30 });
    expect(pod?.memory).toEqual({ time: T0 + 5000, workingSetBytes: 150, usageBytes: 170, availableBytes: 0, rssBytes: 0, pageFaults: 0, majorPageFaults: 0 });
  });

  it('writes zeros at the time of the request for what the runtime did not report, and leaves out the rest when only CPU and memory are asked for', () => {
    const bare: ContainerStats = { attributes: { id: 'c1', metadata: { name: 'app', attempt: 0 }, labels: {}, annotations: {} }, writableLayer: { timestamp: T0, usedBytes: 4096, inodesUsed: 3 } };
    const logs = () => ({ time: T0, usedBytes: 512, inodesUsed: 2 });
    const full = podSummaries({ sandboxes, containers, stats: { sandboxes: [sandboxStats('s1', 'web', [bare], 1, 1)] } }, new CpuRates(), { ...options, logs });
    expect(full[0]?.containers[0]).toEqual({
      name: 'app',
      startTime: T0 + 1000,
      cpu: { time: T0 + 9000, usageCoreNanoSeconds: 0, usageNanoCores: 0 },
      memory: { time: T0 + 9000, availableBytes: 0, usageBytes: 0, workingSetBytes: 0, rssBytes: 0, pageFaults: 0, majorPageFaults: 0 },
      rootfs: { time: T0, usedBytes: 4096, inodesUsed: 3 },
      logs: { time: T0, usedBytes: 512, inodesUsed: 2 },
    });
    const slim = podSummaries({ sandboxes, containers, stats: { sandboxes: [sandboxStats('s1', 'web', [bare], 1, 1)] } }, new CpuRates(), { ...options, onlyCpuAndMemory: true, logs });
    expect(Object.keys(slim[0]?.containers[0] ?? {})).toEqual(['name', 'startTime', 'cpu', 'memory']);
    expect(slim[0]?.process_stats).toBeUndefined();
  });

  it("keeps one CPU sample per running container and sandbox, and gives each its rate on the next request", () => {
    const rates = new CpuRates();
    const at = (t: number, cpu: number) => {
      const stats = sandboxStats('s1', 'web', [{ ...containerStats('c1', 'app', cpu, 1), cpu: { timestamp: t, usageCoreNanoSeconds: cpu } }], 0, 1);
      return { sandboxes, containers, stats: { sandboxes: [{ ...stats, linux: { ...stats.linux!, cpu: { timestamp: t, usageCoreNanoSeconds: cpu * 2 } } }] } };
    };
    podSummaries(at(T0, 1e9), rates, options);
    const [pod] = podSummaries(at(T0 + 1000, 1.5e9), rates, options);
    expect(pod?.containers[0]?.cpu?.usageNanoCores).toBe(5e8);
    expect(pod?.cpu?.usageNanoCores).toBe(1e9);
    expect(rates.size).toBe(2);
    podSummaries({ sandboxes: [], containers: [], stats: { sandboxes: [] } }, rates, options);
    expect(rates.size).toBe(0);
  });
});

// ------------------------------------------------------------------------------------------------
// Output

describe('the outputs', () => {
  it.each([
    ['only_cpu_and_memory=true', true],
    ['only_cpu_and_memory=1', true],
    ['only_cpu_and_memory=T', true],
    ['only_cpu_and_memory=false', false],
    ['only_cpu_and_memory=yes', false],
    ['only_cpu_and_memory=true&only_cpu_and_memory=true', false],
    ['', false],
  ])('reads %j as %s (strconv.ParseBool)', (query, expected) => {
    expect(onlyCpuAndMemory(new URLSearchParams(query))).toBe(expected);
  });

  it('writes times as RFC 3339 in whole seconds', () => {
    const json = JSON.parse(summaryJson({ node: { nodeName: 'n', startTime: T0 + 999, cpu: { time: T0 + 1500, usageCoreNanoSeconds: 1 } }, pods: [] }));
    expect(json).toEqual({ node: { nodeName: 'n', startTime: '2026-01-01T12:00:00Z', cpu: { time: '2026-01-01T12:00:01Z', usageCoreNanoSeconds: 1 } }, pods: [] });
  });

  const summary: Summary = {
    node: { nodeName: 'n', startTime: T0, cpu: { time: T0 + 1000, usageCoreNanoSeconds: 12.5e9 }, memory: { time: T0 + 2000, workingSetBytes: 4096 }, swap: { time: T0, swapUsageBytes: 10 } },
    pods: [
      {
        podRef: { name: 'web', namespace: 'shop', uid: 'u' },
        startTime: T0,
        containers: [
          { name: 'app', startTime: T0 + 500, cpu: { time: T0 + 3000, usageCoreNanoSeconds: 1.5e9 }, memory: { time: T0 + 3000, workingSetBytes: 2048 }, swap: { time: T0 + 3000, swapUsageBytes: 1, swapAvailableBytes: 9 } },
          { name: 'we"ird\\', startTime: 0, cpu: { time: T0 + 3000 } },
        ],
        cpu: { time: T0 + 4000, usageCoreNanoSeconds: 2e9 },
        memory: { time: T0 + 4000, workingSetBytes: 3072 },
      },
    ],
  };
  const t = (ms: number) => String(T0 + ms);

  it("writes the kubelet's resource metrics with their sample timestamps", () => {
    expect(resourceMetricsText(summary)).toBe(
      [
        '# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds',
        '# TYPE container_cpu_usage_seconds_total counter',
        `container_cpu_usage_seconds_total{container="app",namespace="shop",pod="web"} 1.5 ${t(3000)}`,
        '# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes',
        '# TYPE container_memory_working_set_bytes gauge',
        `container_memory_working_set_bytes{container="app",namespace="shop",pod="web"} 2048 ${t(3000)}`,
        '# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds',
        '# TYPE container_start_time_seconds gauge',
        `container_start_time_seconds{container="app",namespace="shop",pod="web"} ${(T0 + 500) / 1000}`,
        '# HELP container_swap_limit_bytes [ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems',
        '# TYPE container_swap_limit_bytes gauge',
        `container_swap_limit_bytes{container="app",namespace="shop",pod="web"} 10 ${t(3000)}`,
        '# HELP container_swap_usage_bytes [ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems',
        '# TYPE container_swap_usage_bytes gauge',
        `container_swap_usage_bytes{container="app",namespace="shop",pod="web"} 1 ${t(3000)}`,
        '# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds',
        '# TYPE node_cpu_usage_seconds_total counter',
        `node_cpu_usage_seconds_total 12.5 ${t(1000)}`,
        '# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes',
        '# TYPE node_memory_working_set_bytes gauge',
        `node_memory_working_set_bytes 4096 ${t(2000)}`,
        '# HELP node_swap_usage_bytes [ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems',
        '# TYPE node_swap_usage_bytes gauge',
        `node_swap_usage_bytes 10 ${t(2000)}`,
        '# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds',
        '# TYPE pod_cpu_usage_seconds_total counter',
        `pod_cpu_usage_seconds_total{namespace="shop",pod="web"} 2 ${t(4000)}`,
        '# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes',
        '# TYPE pod_memory_working_set_bytes gauge',
        `pod_memory_working_set_bytes{namespace="shop",pod="web"} 3072 ${t(4000)}`,
        '# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise',
        '# TYPE resource_scrape_error gauge',
        'resource_scrape_error 0',
        '',
      ].join('\n'),
    );
  });

  it('says only that the scrape failed when the stats could not be read', () => {
    expect(resourceMetricsText(null)).toBe('# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n# TYPE resource_scrape_error gauge\nresource_scrape_error 1\n');
  });

  it('escapes label values', () => {
    const odd = { ...summary, pods: [{ ...summary.pods[0]!, containers: [{ name: 'a"b\\c\nd', startTime: T0, memory: { time: T0, workingSetBytes: 1 } }] }] };
    expect(resourceMetricsText(odd)).toContain(`container_memory_working_set_bytes{container="a\\"b\\\\c\\nd",namespace="shop",pod="web"} 1 ${T0}\n`);
  });

  const promtool = '/usr/bin/promtool';
  const onCi = process.env.CI === 'true';
  if (!existsSync(promtool) && !onCi) console.warn(`\n*** SKIPPING the promtool check of /metrics/resource: ${promtool} is missing (apt-get install prometheus). Under CI=true this fails. ***\n`);
  it.skipIf(!existsSync(promtool) && !onCi)('passes promtool check metrics', () => {
    const dir = mkdtempSync(join(tmpdir(), 'statelet-promtool-'));
    try {
      const file = join(dir, 'resource.prom');
      writeFileSync(file, resourceMetricsText(summary));
      // promtool reads the exposition on stdin and exits non-zero on any problem, naming it.
      expect(execFileSync('sh', ['-c', `${promtool} check metrics < ${file} 2>&1`], { encoding: 'utf8' })).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
