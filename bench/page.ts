/**
 * Worker: the visualizer page in headless Chromium while N static pods start and stop on sim://.
 *   node --expose-gc --import tsx bench/page.ts --n=1000 [--out=FILE]
 *
 * Measured in the page (the agent, its simulated runtime and Chromium share this machine's CPUs):
 *   - how far the page's pod list lags behind the agent (all N rows Running vs all N pods Running);
 *   - frames while 1,000 pods start and while they stop: the gaps between animation frames (a
 *     gap of 16.7 ms is a perfect 60 fps; a long one is a frozen page) and the main-thread long
 *     tasks (> 50 ms) Chromium reports;
 *   - interaction latency: from the input (typing in the search box, picking a phase, clicking a
 *     pod) to the second animation frame after it, i.e. until the result is on screen; at N pods
 *     idle, and typing while the N pods are being stopped;
 *   - the page's JS heap at N pods.
 * Without /usr/bin/chromium the worker reports `skipped`.
 */
import { existsSync } from 'node:fs';
import { type Browser, type Page, chromium } from 'playwright-core';
import { CriClient } from '../src/runtime/cri/client.ts';
import { buildVisualizer } from '../visualizer/build.ts';
import {
  IMAGE,
  argValue,
  emit,
  freeLoopbackPort,
  podName,
  progress,
  runWorker,
  stopAndClean,
  removeManifests,
  round,
  type BenchAgent,
  startBenchAgent,
  summarize,
  tempDir,
  writeManifests,
} from './lib.ts';
import type { PageResult } from './results.ts';

const chromiumPath = '/usr/bin/chromium';
const n = Number(argValue('n') ?? 1000);
const timeoutMs = Number(argValue('timeout-ms') ?? 240_000);

/**
 * Installed in the page before its own script: frame and long-task recording, and `measure`,
 * which runs an input and resolves with the time until two animation frames later.
 */
const instrumentation = `(() => {
  const rec = (window.__bench = { frames: [], longTasks: [], recording: false });
  const loop = (t) => { if (rec.recording) rec.frames.push(t); requestAnimationFrame(loop); };
  requestAnimationFrame(loop);
  new PerformanceObserver((list) => {
    if (rec.recording) for (const e of list.getEntries()) rec.longTasks.push(e.duration);
  }).observe({ type: 'longtask', buffered: false });
  rec.measure = (input) => new Promise((resolve) => {
    const t0 = performance.now();
    input();
    const syncMs = performance.now() - t0;
    requestAnimationFrame(() => requestAnimationFrame(() => resolve({ syncMs, toScreenMs: performance.now() - t0 })));
  });
})()`;

interface Recording {
  frames: number[];
  longTasks: number[];
}

async function record(page: Page, on: boolean): Promise<Recording | null> {
  if (on) {
    await page.evaluate('window.__bench.frames = []; window.__bench.longTasks = []; window.__bench.recording = true');
    return null;
  }
  return (await page.evaluate(
    '(() => { const b = window.__bench; b.recording = false; return { frames: b.frames, longTasks: b.longTasks }; })()',
  )) as Recording;
}

function frameSummary(r: Recording) {
  const gaps = r.frames.slice(1).map((t, i) => t - r.frames[i]!);
  return {
    frames: r.frames.length,
    frameGapMs: summarize(gaps),
    framesOver100Ms: gaps.filter((g) => g > 100).length,
    longTasks: r.longTasks.length,
    longTaskTotalMs: round(r.longTasks.reduce((a, b) => a + b, 0)),
    longTaskMaxMs: round(Math.max(0, ...r.longTasks)),
  };
}

/** Runs `input` (page-side source of a function body) and returns its latency to the screen. */
async function latency(page: Page, input: string): Promise<{ syncMs: number; toScreenMs: number }> {
  const r = (await page.evaluate(`window.__bench.measure(() => { ${input} })`)) as { syncMs: number; toScreenMs: number };
  return { syncMs: round(r.syncMs), toScreenMs: round(r.toScreenMs) };
}

const setSearch = (text: string) =>
  `const s = document.getElementById('search'); s.value = ${JSON.stringify(text)}; s.dispatchEvent(new Event('input'));`;
const setPhase = (phase: string) =>
  `const s = document.getElementById('phase-filter'); s.value = ${JSON.stringify(phase)}; s.dispatchEvent(new Event('change'));`;
const countRows = (selector: string) => `document.querySelectorAll(${JSON.stringify(selector)}).length`;

async function main() {
  if (!existsSync(chromiumPath)) {
    await emit({ scenario: 'page', skipped: `${chromiumPath} is missing (apt-get install chromium)` });
    return;
  }
  await buildVisualizer();
  const manifestDir = await tempDir('statelet-bench-manifests-');
  const rootDir = await tempDir('sb-');
  let bench: BenchAgent | undefined;
  let cri: CriClient | undefined;
  let browser: Browser | undefined;
  try {
    bench = await startBenchAgent({
      endpoint: 'sim://',
      manifestDir,
      rootDir,
      maxPods: Math.max(110, n),
      visualizerPort: await freeLoopbackPort(),
    });
    const { agent, timeline } = bench;
    cri = new CriClient(agent.runtimeEndpoint);
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--enable-precise-memory-info'],
    });
    await cri.pullImage(IMAGE);
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.addInitScript(instrumentation);
    await page.goto(agent.visualizerUrl!);
    await page.locator('#status[data-state="live"]').waitFor({ timeout: 10_000 });

    // Start: N manifests at once, the page watching.
    await record(page, true);
    const writtenAt = performance.now();
    await writeManifests(manifestDir, 0, n);
    await timeline.until(() => timeline.running.size >= n, timeoutMs, `${n} pods Running`);
    const agentAllRunningMs = round(Math.max(...timeline.running.values()) - writtenAt);
    await page.waitForFunction(`${countRows('#pod-rows [data-phase="Running"]')} >= ${n}`, undefined, { timeout: timeoutMs, polling: 100 });
    const pageAllRunningMs = round(performance.now() - writtenAt);
    const start = { agentAllRunningMs, pageAllRunningMs, pageBehindAgentMs: round(pageAllRunningMs - agentAllRunningMs), ...frameSummary((await record(page, false))!) };
    progress(`page N=${n}: agent all Running ${agentAllRunningMs} ms, page ${pageAllRunningMs} ms; frame gap p99 ${start.frameGapMs.p99} ms, ${start.longTasks} long tasks`);

    // Interactions at N pods, idle.
    const target = `default/${podName(Math.floor(n / 2))}-bench-node`;
    const idle = {
      searchOnePod: await latency(page, setSearch(podName(Math.floor(n / 2)))),
      rowsShownAfterSearch: (await page.evaluate(countRows('#pod-rows [data-pod]:not([hidden])'))) as number,
      clearSearch: await latency(page, setSearch('')),
      phaseFilterPending: await latency(page, setPhase('Pending')),
      phaseFilterAll: await latency(page, setPhase('')),
      selectPodToChartMs: 0,
    };
    const clickedAt = performance.now();
    await page.locator(`#pod-rows [data-pod="${target}"]`).click();
    await page.locator('#chart [data-state-id="pod.syncing.progress.running"].active').waitFor({ timeout: 30_000 });
    idle.selectPodToChartMs = round(performance.now() - clickedAt);
    const heap = (await page.evaluate('performance.memory ? performance.memory.usedJSHeapSize : null')) as number | null;
    progress(`page N=${n}: search ${idle.searchOnePod.toScreenMs} ms, clear ${idle.clearSearch.toScreenMs} ms, select→chart ${idle.selectPodToChartMs} ms`);

    // Stop: every manifest removed at once, typing in the search box while the pods go.
    await record(page, true);
    const removedAt = performance.now();
    await removeManifests(manifestDir, 0, n);
    await timeline.until(() => timeline.terminatingAt.size >= n / 2, timeoutMs, `${n / 2} pods terminating`);
    const typingDuringChurn = [await latency(page, setSearch('bench-00')), await latency(page, setSearch('bench-001')), await latency(page, setSearch(''))];
    await timeline.until(() => timeline.deleted.size >= n, timeoutMs, `${n} pods forgotten`);
    const agentAllGoneMs = round(Math.max(...timeline.deleted.values()) - removedAt);
    await page.waitForFunction(`${countRows('#pod-rows .stopped')} >= ${n}`, undefined, { timeout: timeoutMs, polling: 100 });
    const stop = {
      agentAllForgottenMs: agentAllGoneMs,
      pageAllStoppedMs: round(performance.now() - removedAt),
      typingDuringChurn,
      ...frameSummary((await record(page, false))!),
    };
    progress(`page N=${n}: stop frame gap p99 ${stop.frameGapMs.p99} ms, typing during churn ${typingDuringChurn.map((t) => t.toScreenMs).join('/')} ms`);

    const result = {
      scenario: 'page' as const,
      n,
      browser: `chromium ${browser.version()} headless`,
      start,
      idle,
      pageHeapMBAtN: heap === null ? null : round(heap / 1024 / 1024),
      stop,
    };
    await emit(result satisfies PageResult);
  } finally {
    await browser?.close();
    cri?.close();
    await stopAndClean(bench?.agent, manifestDir, rootDir);
  }
}

runWorker(main);
