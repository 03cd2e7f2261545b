/**
 * The agent's real `/metrics` and `/metrics/probes`, scraped from the read-only port and the
 * authenticated API of an agent on sim:// running pods with probes, the end-to-end scenarios' pods
 * (a crash loop among them), a container that cannot start and a static pod restarted under the
 * same UID, so every family of
 * the kubelet's has samples; Prometheus's own linter (`promtool check metrics`, Debian's
 * `prometheus` package) must find nothing wrong with either.
 *
 * Without /usr/bin/promtool the test is skipped loudly, except under CI=true where it fails.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../support/agentProcess.ts';
import { type KubeletClientPki, writeKubeletClientPki } from '../support/kubeletClientPki.ts';
import { type SimAgent, startSimAgent } from '../support/inProcessAgent.ts';
import { manifests } from '../e2e/scenarios.ts';

const promtool = '/usr/bin/promtool';
const havePromtool = existsSync(promtool);
const onCi = process.env.CI === 'true';
if (!havePromtool && !onCi) {
  console.warn(`\n*** SKIPPING the promtool check of /metrics: ${promtool} is missing (apt-get install prometheus). Under CI=true this fails. ***\n`);
}

const IMAGE = 'statelet.local/busybox:1';
const files: Record<string, string> = {
  // The end-to-end scenarios' pods: init containers, several containers, a crash loop.
  ...manifests(IMAGE),
  'web.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: web }
spec:
  containers:
    - name: httpd
      image: ${IMAGE}
      command: ["sh", "-c", "mkdir -p /www; echo ok > /www/healthz; trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]
      startupProbe: { exec: { command: ["test", "-e", "/www/healthz"] }, periodSeconds: 1 }
      readinessProbe: { httpGet: { path: /healthz, port: 8080 }, periodSeconds: 1 }
      livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 }
    - name: never
      image: nowhere.local/none:1
      imagePullPolicy: Never
`,
};
/** Takes 3 s to stop (its preStop hook sleeps), so its manifest can come back while it terminates. */
const slowStop = `
apiVersion: v1
kind: Pod
metadata: { name: slow }
spec:
  containers:
    - name: app
      image: ${IMAGE}
      command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
      lifecycle: { preStop: { sleep: { seconds: 3 } } }
`;

let dir: string;
let pki: KubeletClientPki;
let sim: SimAgent;
let readOnlyPort: number;
let securePort: number;

function check(text: string): { status: number | null; problems: string } {
  const result = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: result.status, problems: `${result.stdout}${result.stderr}`.trim() };
}

async function readOnly(urlPath: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${readOnlyPort}${urlPath}`);
  expect(res.status).toBe(200);
  return res.text();
}

async function authenticated(urlPath: string): Promise<string> {
  const [cert, key] = await Promise.all([readFile(pki.certFile), readFile(pki.keyFile)]);
  return new Promise((resolve, reject) => {
    const req = https.request(`https://127.0.0.1:${securePort}${urlPath}`, { rejectUnauthorized: false, cert, key }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${urlPath}: ${res.statusCode} ${body}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The value of the sample `line` starts (its name and labels), or undefined. */
const sample = (text: string, line: string) => {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
};

describe.skipIf(!havePromtool && !onCi)('promtool check metrics', () => {
  beforeAll(async () => {
    if (!havePromtool) throw new Error(`CI needs ${promtool} (Debian's prometheus package) for the metrics check`);
    dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-promtool-'));
    pki = await writeKubeletClientPki(dir);
    [readOnlyPort, securePort] = [await freePort(), await freePort()];
    sim = await startSimAgent('promtool', ['--read-only-port', String(readOnlyPort), '--port', String(securePort), '--client-ca-file', pki.caFile], {
      ...files,
      'slow.yaml': slowStop,
    });
  });

  afterAll(async () => {
    await sim?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('finds no problem in /metrics and /metrics/probes with every family sampled', async () => {
    const slow = path.join(sim.manifests, 'slow.yaml');
    const phase = (name: string) => sim.agent.view.pods().find((p) => p.metadata.name === `${name}-promtool`)?.status?.phase;
    await vi.waitFor(() => expect(phase('slow')).toBe('Running'), { timeout: 20_000, interval: 50 });
    // Removed, and back while its preStop hook holds it in terminating: the same UID restarts.
    await unlink(slow);
    await vi.waitFor(() => expect(phase('slow')).toBeUndefined(), { timeout: 10_000, interval: 20 });
    await writeFile(slow, slowStop);
    await vi.waitFor(
      async () => {
        const text = await readOnly('/metrics');
        expect(sample(text, 'kubelet_restarted_pods_total{static="true"}')).toBe(1);
        expect(sample(text, 'kubelet_pod_start_duration_seconds_count')).toBeGreaterThanOrEqual(3);
        expect(sample(text, 'kubelet_started_containers_errors_total{container_type="container",code="ErrImageNeverPull"}')).toBeGreaterThan(0);
        expect(sample(text, 'kubelet_pod_worker_duration_seconds_count{operation_type="kill"}')).toBeGreaterThan(0);
      },
      { timeout: 30_000, interval: 200 },
    );
    const webUid = sim.agent.view.pods().find((p) => p.metadata.name === 'web-promtool')?.metadata.uid;
    await vi.waitFor(
      async () => {
        const probes = await readOnly('/metrics/probes');
        for (const type of ['Startup', 'Readiness', 'Liveness']) {
          const labels = `probe_type="${type}",container="httpd",pod="web-promtool",namespace="default",pod_uid="${webUid}",result="successful"`;
          expect(sample(probes, `prober_probe_total{${labels}}`)).toBeGreaterThan(0);
        }
      },
      { timeout: 20_000, interval: 200 },
    );

    const metrics = await readOnly('/metrics');
    const probes = await readOnly('/metrics/probes');
    const families = (text: string) => [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
    const processFamilies = ['process_resident_memory_bytes', 'process_open_fds', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_p99_seconds'];
    for (const family of ['kubelet_pod_start_duration_seconds', 'kubelet_pod_start_sli_duration_seconds', 'kubelet_pod_worker_duration_seconds', 'kubelet_restarted_pods_total', ...processFamilies]) {
      expect(families(metrics)).toContain(family);
    }
    expect(families(probes)).toEqual(['prober_probe_total', 'prober_probe_duration_seconds', 'process_start_time_seconds']);
    expect(check(metrics)).toEqual({ status: 0, problems: '' });
    expect(check(probes)).toEqual({ status: 0, problems: '' });
    // The authenticated API serves the same families (its values move on between scrapes).
    expect(families(await authenticated('/metrics/probes'))).toEqual(families(probes));
    expect(families(await authenticated('/metrics'))).toEqual(families(metrics));
  }, 90_000);

  it('reports a problem promtool does find (the check is not a no-op)', () => {
    const broken = '# HELP bad_counter Counts.\n# TYPE bad_counter counter\nbad_counter 1\n';
    const result = check(broken);
    expect(result.status).not.toBe(0);
    expect(result.problems).toContain('bad_counter');
  });
});
