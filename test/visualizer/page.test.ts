/**
 * The visualizer page in a real browser (Debian's chromium driven by playwright-core): the
 * `statelet` command, as `npm start` runs it, on sim:// with two static pods and
 * --visualizer-port; the page lists both Running by namespace/name (as a person reads the rows),
 * filters them, draws the selected pod's statechart with `running` highlighted and its CRI calls
 * in the log, plays its transitions back through `terminating` to `terminated` when its manifest
 * is removed, and shows the syncLoop's chart and routing counts, its log free of timer ticks until
 * they are asked for. Takes the README's screenshot (`npm run screenshot`). A second test, on the
 * agent in-process, restarts the agent under the page (it reconnects and shows the new agent's
 * pods only) and opens a page late (the pod's past comes from the history).
 *
 * Without /usr/bin/chromium the test is skipped loudly, except under CI=true where it fails.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildVisualizer } from '../../visualizer/build.ts';
import { type AgentProcess, freePort, runStatelet } from '../support/agentProcess.ts';
import { type SimAgent, startSimAgent } from '../support/inProcessAgent.ts';

const chromiumPath = '/usr/bin/chromium';
const haveChromium = existsSync(chromiumPath);
const onCi = process.env.CI === 'true';
if (!haveChromium && !onCi) {
  console.warn(`\n*** SKIPPING the visualizer browser test: ${chromiumPath} is missing (apt-get install chromium). Under CI=true this fails. ***\n`);
}
// `npm run screenshot` refreshes the README's picture; ordinary runs leave the work tree alone.
const screenshot = process.env.STATELET_SCREENSHOT
  ? path.resolve(process.env.STATELET_SCREENSHOT)
  : path.join(os.tmpdir(), `statelet-visualizer-${process.pid}.png`);

/** `web` ignores SIGTERM, so it stays in `terminating` for its grace period (2 s) when removed. */
const manifest = (name: string, command = "trap 'exit 0' TERM; while true; do sleep 1; done", resources = '') => `
apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 2
  containers:
    - name: app
      image: statelet.local/busybox:1
      command: ["sh", "-c", "${command}"]${resources}
`;

/**
 * Run in the page (as source: this project's type check has no DOM): records, in order, each state
 * group that becomes `active` and each edge that gets `fired`, into `window.seen`.
 */
const recordChartChanges = `(() => {
  const seen = (window.seen = []);
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      const el = m.target;
      const was = ' ' + (m.oldValue || '') + ' ';
      if (el.classList.contains('active') && !was.includes(' active ')) seen.push('active ' + el.getAttribute('data-state-id'));
      if (el.classList.contains('fired') && !was.includes(' fired ')) seen.push('fired ' + el.getAttribute('data-source') + '>' + el.getAttribute('data-target'));
    }
  }).observe(document.getElementById('chart'), { subtree: true, attributes: true, attributeFilter: ['class'], attributeOldValue: true });
})()`;

let sim: SimAgent | undefined;
let proc: AgentProcess | undefined;
let manifestsDir: string | undefined;
let browser: Browser | undefined;

async function launch(): Promise<Browser> {
  browser ??= await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return browser;
}

beforeAll(async () => {
  if (!haveChromium) return;
  await buildVisualizer();
});

afterAll(async () => {
  await browser?.close();
  await sim?.stop();
  await proc?.stop();
  if (manifestsDir) await rm(manifestsDir, { recursive: true, force: true });
});

describe.skipIf(!haveChromium && !onCi)('visualizer page in chromium', () => {
  it('lists the pods, highlights the selected pod\'s state and follows it into termination', { timeout: 90_000 }, async () => {
    expect(haveChromium, `${chromiumPath} is required under CI=true`).toBe(true);
    const port = await freePort();
    const manifests = (manifestsDir = await mkdtemp(path.join(os.tmpdir(), 'statelet-page-manifests-')));
    proc = await runStatelet([
      '--container-runtime-endpoint', 'sim://',
      '--pod-manifest-path', manifests,
      '--file-check-frequency', '1s',
      '--visualizer-port', String(port),
      '--hostname-override=page-node',
    ]);

    const page = await (await launch()).newPage({ viewport: { width: 1440, height: 860 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.locator('#status[data-state="live"]').waitFor({ timeout: 10_000 });
    // The pods appear while the page watches, so their event logs start at their creation.
    await writeFile(path.join(manifests, 'web.yaml'), manifest('web', "echo hello-from-web; trap '' TERM; while true; do sleep 1; done"));
    await writeFile(path.join(manifests, 'worker.yaml'), manifest('worker', undefined, '\n      resources: { limits: { cpu: 100m, memory: 64Mi } }'));

    const row = (name: string) => page.locator(`#pod-rows [data-pod="default/${name}-page-node"]`);
    for (const name of ['web', 'worker']) {
      await row(name).locator('.phase-Running', { hasText: 'Running' }).waitFor({ timeout: 30_000 });
      expect(await row(name).getAttribute('data-phase')).toBe('Running');
    }
    // What a person reads in the list: the pods' namespace/name, never an actor id; their QoS class, and limits on hover.
    expect(await page.locator('#pod-rows .name').allTextContents()).toEqual(['default/web-page-node', 'default/worker-page-node']);
    expect(await page.locator('#pod-rows .qos').allTextContents()).toEqual(['BestEffort', 'Guaranteed']);
    expect(await row('worker').locator('.qos').getAttribute('title')).toBe('limits: cpu 100m · memory 64Mi');

    // The search box filters by name, the phase filter by phase.
    await page.fill('#search', 'work');
    await expect.poll(() => row('web').isHidden()).toBe(true);
    expect(await row('worker').isVisible()).toBe(true);
    await page.fill('#search', '');
    await expect.poll(() => row('web').isVisible()).toBe(true);
    await page.selectOption('#phase-filter', 'Pending');
    await expect.poll(() => row('web').isHidden()).toBe(true);
    expect(await row('worker').isHidden()).toBe(true);
    await page.selectOption('#phase-filter', 'Running');
    await expect.poll(() => row('web').isVisible()).toBe(true);
    await page.selectOption('#phase-filter', '');

    await row('web').click();
    const state = (id: string) => page.locator(`#chart [data-state-id="${id}"]`);
    await page.locator('#chart [data-state-id="pod.syncing.progress.running"].active').waitFor({ timeout: 15_000 });
    expect(await state('pod.syncing').getAttribute('class')).toContain('active');
    expect(await state('pod').getAttribute('class')).toContain('active');
    expect(await state('pod.terminating').getAttribute('class')).not.toContain('active');
    // The pod's log tail, read by the agent's own log reader.
    await page.click('#title button');
    await page.locator('#logs-body pre', { hasText: 'hello-from-web' }).waitFor({ timeout: 10_000 });
    expect(await page.locator('#logs-body h3').allTextContents()).toEqual(['app']);
    await page.click('#logs-close');
    expect(await page.locator('#logs').isHidden()).toBe(true);
    // Nested: the parallel state's regions are drawn inside it.
    expect(await page.locator('#chart [data-state-id="pod.syncing.worker"]').count()).toBe(1);
    expect(await page.locator('#chart .edge').count()).toBeGreaterThan(5);
    // The log starts with the pod's creation (its pod summarized), then its transitions and its CRI calls with their durations.
    const log = page.locator('#event-list');
    await log.locator('li[data-event-type="xstate.init"]', { hasText: 'created' }).first().waitFor({ timeout: 10_000 });
    expect(await log.locator('li[data-event-type="xstate.init"] .payload').first().textContent()).toContain('pod=web-page-node');
    const started = log.locator('li[data-event-type="CRI.FINISHED"]', { hasText: 'StartContainer' }).first();
    await started.waitFor({ timeout: 10_000 });
    expect(await started.locator('.target').textContent()).toBe(' app');
    expect(await started.locator('.duration').textContent()).toMatch(/^ \d+(\.\d)? m?s$/);
    expect(await started.locator('.via').textContent()).toBe('syncPod');
    // A call is one line, started then completed in place.
    expect(await log.locator('li[data-event-type="CRI.FINISHED"]', { hasText: 'RunPodSandbox' }).count()).toBe(1);
    expect(await log.locator('li[data-event-type="CRI.STARTED"]').count()).toBe(0);
    expect(await log.locator('li.step[data-step~="pod.syncing.progress.running"]').count()).toBeGreaterThan(0);
    await mkdir(path.dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot });

    // From here on, record every state the chart highlights and every edge it fires, in order.
    await page.evaluate(recordChartChanges);
    const seen = () => page.evaluate('window.seen') as Promise<string[]>;

    await rm(path.join(manifests, 'web.yaml'));
    // The playback walks the highlight through every state, even those a batch went past.
    await expect.poll(seen, { timeout: 30_000 }).toContain('active pod.terminated.finished');
    const order = await seen();
    const at = (entry: string) => order.indexOf(entry);
    expect(at('fired pod.syncing>pod.terminating')).toBeGreaterThanOrEqual(0);
    expect(at('active pod.terminating.killing')).toBeGreaterThan(at('fired pod.syncing>pod.terminating'));
    expect(at('active pod.terminated.cleaning')).toBeGreaterThan(at('active pod.terminating.killing'));
    expect(at('active pod.terminated.finished')).toBeGreaterThan(at('active pod.terminated.cleaning'));
    expect(await state('pod.syncing.progress.running').getAttribute('class')).not.toContain('active');
    await log.locator('li[data-event-type="POD.KILL"]').first().waitFor({ timeout: 5_000 });
    await log.locator('li[data-event-type="CRI.FINISHED"]', { hasText: 'StopContainer' }).first().waitFor({ timeout: 5_000 });
    await log.locator('li[data-event-type="CRI.FINISHED"]', { hasText: 'RemovePodSandbox' }).first().waitFor({ timeout: 5_000 });
    // Every call line was completed by its own finish (calls under way together are told apart by id).
    expect(await log.locator('li.cri.pending').count()).toBe(0);
    // The other pod is untouched.
    expect(await row('worker').getAttribute('data-phase')).toBe('Running');

    // The system table stays in its column, however long a summary grows (it went over the chart,
    // which then took the clicks meant for its rows).
    const box = async (selector: string) => (await page.locator(selector).boundingBox())!;
    const [table, column] = [await box('#system'), await box('#pods')];
    const overflow = table.x + table.width - (column.x + column.width);
    expect(overflow).toBeLessThanOrEqual(0);
    // What the column cuts short is whole in the cell's title.
    for (const cell of await page.locator('#system-rows tr[data-actor="syncLoop"] td:not(.name)').all()) expect(await cell.getAttribute('title')).toBe(await cell.textContent());

    // The syncLoop view: its chart, and what it routed to the pods by event type.
    await page.locator('#system-rows tr[data-actor="syncLoop"]').click();
    await page.locator('#chart svg[data-machine-id="syncLoop"]').waitFor({ timeout: 10_000 });
    await page.locator('#chart [data-state-id="syncLoop.sources.ready"].active').waitFor({ timeout: 10_000 });
    const routed = async (type: string) => Number((await page.locator(`#routing tr[data-routed="${type}"] td.num`).textContent())?.replace(/\D/g, ''));
    expect(await routed('CONFIG.ADD')).toBeGreaterThanOrEqual(1);
    expect(await routed('PLEG.CONTAINER_STARTED')).toBeGreaterThanOrEqual(2);
    // Its log leaves the timers' ticks out (the ticker re-enters its state every second)…
    const ticks = log.locator('li.step[data-step="syncLoop.ticker.waiting"]');
    await log.locator('li[data-event-type="PLEG.RELISTED"]').first().waitFor({ timeout: 10_000 });
    expect(await ticks.count()).toBe(0);
    expect(await log.locator('li[data-event-type^="xstate.after."]').count()).toBe(0);
    // …until they are asked for.
    await page.check('#show-timers');
    await ticks.first().waitFor({ timeout: 10_000 });
    expect(await ticks.first().textContent()).toContain('after syncTick: ticker.waiting → ticker.waiting');
    await page.uncheck('#show-timers');
    await expect.poll(() => ticks.count()).toBe(0);
    expect(errors).toEqual([]);
    await proc.stop();
    proc = undefined;
  });

  it("shows each volume of a pod on its own line, and why one is not mounted; once it is, the pod runs", { timeout: 90_000 }, async () => {
    const port = await freePort();
    const manifests = await mkdtemp(path.join(os.tmpdir(), 'statelet-page-volumes-'));
    const missing = path.join(manifests, 'not-yet');
    await writeFile(
      path.join(manifests, 'stuck.yaml'),
      `${manifest('stuck')}      volumeMounts: [{name: scratch, mountPath: /scratch}, {name: data, mountPath: /data}]
  volumes:
    - {name: scratch, emptyDir: {}}
    - {name: data, hostPath: {path: ${missing}, type: Directory}}
`,
    );
    const agent = await runStatelet(['--container-runtime-endpoint', 'sim://', '--pod-manifest-path', manifests, '--visualizer-port', String(port), '--hostname-override=volume-node']);
    try {
      const page = await (await launch()).newPage({ viewport: { width: 1440, height: 860 } });
      await page.goto(`http://127.0.0.1:${port}/`);
      await page.locator('#status[data-state="live"]').waitFor({ timeout: 10_000 });
      const volumeRow = (volume: string) => page.locator('#system-rows tr', { hasText: `default/stuck-volume-node · ${volume}` });
      await volumeRow('scratch').locator('td.state', { hasText: 'mounted' }).waitFor({ timeout: 30_000 });
      const data = volumeRow('data');
      await data.locator('td.state', { hasText: 'backingOff' }).waitFor({ timeout: 30_000 });
      expect(await data.locator('td').nth(2).textContent()).toMatch(new RegExp(`^default/stuck-volume-node · data · backing off after \\d+ failures?: MountVolume\\.SetUp failed for volume "data" : hostPath ${missing.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} doesn't exist$`));
      // The pod waits for its volumes.
      const pod = page.locator('#pod-rows [data-pod="default/stuck-volume-node"]');
      expect(await pod.getAttribute('data-phase')).toBe('Pending');

      await mkdir(missing);
      await data.locator('td.state', { hasText: 'mounted' }).waitFor({ timeout: 30_000 });
      await pod.locator('.phase-Running').waitFor({ timeout: 30_000 });
    } finally {
      await agent.stop();
      await rm(manifests, { recursive: true, force: true });
    }
  });

  it('with --nodes, picks the node to show: the first by default, another from the picker', { timeout: 90_000 }, async () => {
    const port = await freePort();
    const manifests = await mkdtemp(path.join(os.tmpdir(), 'statelet-page-nodes-'));
    let nodes: AgentProcess | undefined;
    try {
      await writeFile(path.join(manifests, 'one.yaml'), manifest('one'));
      nodes = await runStatelet(['--container-runtime-endpoint', 'sim://', '--nodes=2', '--hostname-override=pick', '--pod-manifest-path', manifests, '--visualizer-port', String(port)], { nodeAddresses: true });
      const page = await (await launch()).newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      // The visualizer listens on the first node's address (127.0.1.1 when --node-ip is not given).
      await page.goto(`http://127.0.1.1:${port}/`);
      const row = (key: string) => page.locator(`#pod-rows [data-pod="${key}"]`);
      await row('default/one-pick-0').locator('.phase-Running').waitFor({ timeout: 30_000 });
      const picker = page.locator('#node');
      await picker.waitFor({ state: 'visible', timeout: 10_000 });
      expect(await picker.locator('option').allTextContents()).toEqual(['pick-0', 'pick-1']);
      await picker.selectOption('pick-1');
      await page.waitForURL(/\?node=pick-1$/);
      await row('default/one-pick-1').locator('.phase-Running').waitFor({ timeout: 30_000 });
      expect(await row('default/one-pick-0').count()).toBe(0);
      expect(await picker.inputValue()).toBe('pick-1');
      expect(await page.title()).toBe('pick-1 — statelet visualizer');
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      await nodes?.stop();
      await rm(manifests, { recursive: true, force: true });
    }
  });

  it("reconnects by itself when the agent restarts, shows the new agent's pods, and a late page their past", { timeout: 90_000 }, async () => {
    const port = await freePort();
    sim = await startSimAgent('before', ['--visualizer-port', String(port)], { 'one.yaml': manifest('one') });
    const page = await (await launch()).newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(sim.agent.visualizerUrl!);
    const row = (key: string) => page.locator(`#pod-rows [data-pod="${key}"]`);
    await row('default/one-before').locator('.phase-Running').waitFor({ timeout: 30_000 });

    await sim.stop();
    sim = undefined;
    await page.locator('#status[data-state="reconnecting"]').waitFor({ timeout: 10_000 });

    sim = await startSimAgent('after', ['--visualizer-port', String(port)], { 'two.yaml': manifest('two') });
    await page.locator('#status[data-state="live"]').waitFor({ timeout: 15_000 });
    await row('default/two-after').locator('.phase-Running').waitFor({ timeout: 30_000 });
    // The new agent's picture replaced the old one.
    expect(await row('default/one-before').count()).toBe(0);

    // A page opened now still shows how the pod got here: the agent keeps each actor's recent past.
    const late = await browser!.newPage();
    late.on('pageerror', (e) => errors.push(String(e)));
    await late.goto(sim.agent.visualizerUrl!);
    await late.locator('#pod-rows [data-pod="default/two-after"]').click();
    const log = late.locator('#event-list');
    await log.locator('li[data-event-type="xstate.init"]', { hasText: 'created' }).waitFor({ timeout: 10_000 });
    expect(await log.locator('li[data-event-type="CRI.FINISHED"]', { hasText: 'StartContainer' }).count()).toBe(1);
    expect(await log.locator('li.step').count()).toBeGreaterThan(0);
    expect(errors).toEqual([]);
  });
});
