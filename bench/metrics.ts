/**
 * Worker: what one scrape of the agent's `/metrics` and `/metrics/probes` costs with N pods
 * running, each serving HTTP with a startup, a readiness and a liveness probe (so /metrics/probes
 * carries the series of 3 probe workers per pod).
 *   node --expose-gc --import tsx bench/metrics.ts --n=1000 --scrapes=40 [--out=FILE]
 *
 * Scraped over HTTP on the read-only port from this process, one scrape at a time: the CPU figure
 * is the process's CPU time during the scrapes (rendering, sending and the client's reading) less
 * what the agent spends at rest over the same wall time (its relists and probes, measured just
 * before), per scrape. The simulated runtime runs in this process too.
 */
import {
  argValue,
  emit,
  freeLoopbackPort,
  idleCpu,
  percentile,
  progress,
  round,
  runWorker,
  sleep,
  startBenchAgent,
  stopAndClean,
  tempDir,
  writeManifests,
} from './lib.ts';
import type { MetricsResult, ScrapeCost } from './results.ts';

const n = Number(argValue('n') ?? 100);
const scrapes = Number(argValue('scrapes') ?? 40);
const timeoutMs = Number(argValue('timeout-ms') ?? 240_000);

/** Scrapes `url` `scrapes` times, one after the other, after two unmeasured ones. */
async function scrapeCost(url: string, idleCpuPerWallMs: number): Promise<ScrapeCost> {
  const get = async () => {
    const res = await fetch(url);
    if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
    return res.text();
  };
  await get();
  const text = await get();
  const wall: number[] = [];
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < scrapes; i++) {
    const t = performance.now();
    await get();
    wall.push(performance.now() - t);
  }
  const spent = process.cpuUsage(cpu0);
  const wallMs = performance.now() - t0;
  const cpuMs = (spent.user + spent.system) / 1000;
  return {
    bytes: text.length,
    series: text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length,
    cpuMsPerScrape: round((cpuMs - idleCpuPerWallMs * wallMs) / scrapes, 2),
    rawCpuMsPerScrape: round(cpuMs / scrapes, 2),
    wallMsP50: round(percentile(wall, 50), 2),
    wallMsP99: round(percentile(wall, 99), 2),
  };
}

runWorker(async () => {
  const manifestDir = await tempDir('statelet-bench-metrics-');
  const rootDir = await tempDir('sbm-');
  const readOnlyPort = await freeLoopbackPort();
  let bench: Awaited<ReturnType<typeof startBenchAgent>> | undefined;
  try {
    await writeManifests(manifestDir, 0, n, { httpd: true, probes: true });
    bench = await startBenchAgent({ endpoint: 'sim://', manifestDir, rootDir, maxPods: Math.max(110, n), readOnlyPort });
    const { timeline } = bench;
    await timeline.until(() => timeline.running.size >= n, timeoutMs, `${n} pods Running and ready`);
    progress(`metrics N=${n}: all Running`);
    const base = `http://127.0.0.1:${readOnlyPort}`;
    // Every probe worker has run at least once: each pod has its three kinds counted.
    const deadline = performance.now() + timeoutMs;
    const probeSeries = async () => (await (await fetch(`${base}/metrics/probes`)).text()).split('\n').filter((l) => l.startsWith('prober_probe_total{')).length;
    while ((await probeSeries()) < 3 * n) {
      if (performance.now() > deadline) throw new Error(`fewer than ${3 * n} prober_probe_total series after ${timeoutMs} ms`);
      await sleep(500);
    }
    await sleep(2_000);
    const idle = await idleCpu(5_000);
    const idleCpuPerWallMs = (idle.userMs + idle.systemMs) / (idle.windowS * 1000);
    const metrics = await scrapeCost(`${base}/metrics`, idleCpuPerWallMs);
    const probes = await scrapeCost(`${base}/metrics/probes`, idleCpuPerWallMs);
    progress(`metrics N=${n}: /metrics ${metrics.cpuMsPerScrape} ms CPU, ${metrics.bytes} bytes; /metrics/probes ${probes.cpuMsPerScrape} ms CPU, ${probes.bytes} bytes`);
    await emit({ scenario: 'metrics', n, scrapes, idleCpuPercentOfOneCore: idle.cpuPercentOfOneCore, metrics, probes } satisfies MetricsResult);
  } finally {
    await stopAndClean(bench?.agent, manifestDir, rootDir);
  }
});
