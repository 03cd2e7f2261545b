/**
 * The config sources as the syncLoop runs them (src/sources/configSources.ts): the HTTP source
 * beside the file source, and the kubelet's event on a pod left out for a duplicate name
 * (pkg/kubelet/config/config.go filterInvalidPods).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type AnyEventObject, createActor, setup } from 'xstate';
import type { Pod } from '../../src/api/types.ts';
import type { ConfigEvent, SourceWarning } from '../../src/events.ts';
import { configuredSources, createConfigSourcesLogic } from '../../src/sources/configSources.ts';
import { parseManifest } from '../../src/sources/file.ts';
import { parsePodsBody } from '../../src/sources/http.ts';
import { duplicatePodEvent } from '../../src/sources/podConfig.ts';
import { ManualClock } from '../support/manualClock.ts';

const NODE = 'node-1';
const HOUR = 3_600_000;
const yamlPod = (name: string, image = 'nginx:1.25') => `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n    - name: app\n      image: ${image}\n`;
const jsonPod = (name: string, image = 'nginx:1.25') => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'app', image }] } });

let dir: string;
let server: Server | undefined;
let body: string;
let stops: (() => void)[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'statelet-sources-'));
  stops = [];
  server = undefined;
});

afterEach(async () => {
  for (const stop of stops) stop();
  if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

async function serve(): Promise<string> {
  server = createServer((_req, res) => res.end(body));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods`;
}

/** Runs the sources under a parent that keeps every event they send. */
function run(options: { podManifestPath?: string; manifestUrl?: string; manifestUrlHeaders?: Record<string, string[]> }) {
  const events: AnyEventObject[] = [];
  const logic = createConfigSourcesLogic({
    nodeName: NODE,
    fileCheckFrequencyMs: HOUR,
    httpCheckFrequencyMs: HOUR,
    clock: new ManualClock(),
    log: () => {},
    ...options,
  });
  const parent = createActor(
    setup({ actors: { sources: logic } }).createMachine({
      invoke: { src: 'sources' },
      on: { '*': { actions: ({ event }) => events.push(event) } },
    }),
  );
  parent.start();
  stops.push(() => parent.stop());
  const seen = (source: string) => events.some((e) => e.type === 'SOURCE.SEEN' && e.source === source);
  const added = (source: string) => events.filter((e): e is ConfigEvent => e.type === 'CONFIG.ADD' && e.source === source).flatMap((e) => e.pods);
  /** The events the sources asked to be recorded (SOURCE.ERROR with a warning), as `reason: message`. */
  const warnings = () => events.flatMap((e) => (e.type === 'SOURCE.ERROR' && e.warning ? [`${e.warning.reason}: ${e.warning.message}`] : []));
  const warnedPods = () => events.flatMap((e) => (e.type === 'SOURCE.ERROR' && e.warning ? [(e.warning as SourceWarning).pod.metadata.uid] : []));
  return { events, seen, added, warnings, warnedPods };
}

describe('configuredSources (kubelet.go makePodSourceConfig)', () => {
  it.each([
    [{}, []],
    [{ podManifestPath: '/etc/kubernetes/manifests' }, ['file']],
    [{ manifestUrl: 'http://x/pods' }, ['http']],
    [{ podManifestPath: '/m', manifestUrl: 'http://x/pods' }, ['file', 'http']],
  ] as const)('%j ⇒ %j', (options, expected) => {
    expect(configuredSources(options)).toEqual(expected);
  });
});

describe('the HTTP source among the sources', () => {
  it('hands its pods over as source http, then counts as seen', async () => {
    body = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [jsonPod('web'), jsonPod('db')] });
    const url = await serve();
    const s = run({ manifestUrl: url });
    await vi.waitFor(() => expect(s.seen('http')).toBe(true));
    const pods = s.added('http');
    expect(pods.map((p) => p.metadata.name)).toEqual(['web-node-1', 'db-node-1']);
    expect(pods.map((p) => p.metadata.annotations?.['kubernetes.io/config.source'])).toEqual(['http', 'http']);
    // CONFIG.ADD comes before SOURCE.SEEN: the source is seen once its pods are known.
    expect(s.events.findIndex((e) => e.type === 'CONFIG.ADD')).toBeLessThan(s.events.findIndex((e) => e.type === 'SOURCE.SEEN'));
  });

  it('runs beside the file source, each seen on its own', async () => {
    await writeFile(join(dir, 'a.yaml'), yamlPod('file-pod'));
    body = yamlPod('url-pod');
    const url = await serve();
    const s = run({ podManifestPath: dir, manifestUrl: url });
    await vi.waitFor(() => expect(s.seen('file') && s.seen('http')).toBe(true));
    expect(s.added('file').map((p) => p.metadata.name)).toEqual(['file-pod-node-1']);
    expect(s.added('http').map((p) => p.metadata.name)).toEqual(['url-pod-node-1']);
  });

  it('is not seen while the URL fails: a SOURCE.ERROR names the URL', async () => {
    const url = await serve();
    server!.removeAllListeners('request');
    server!.on('request', (_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    const s = run({ manifestUrl: url });
    await vi.waitFor(() => expect(s.events.some((e) => e.type === 'SOURCE.ERROR')).toBe(true));
    expect(s.events).toEqual([{ type: 'SOURCE.ERROR', source: 'http', message: `${url}: 503 Service Unavailable` }]);
    expect(s.seen('http')).toBe(false);
  });
});

describe("a duplicate static pod name: the kubelet's FailedValidation on the pod left out, for the node to record", () => {
  it('from the file source, which leaves out the later file', async () => {
    await writeFile(join(dir, 'a.yaml'), yamlPod('web'));
    await writeFile(join(dir, 'b.yaml'), yamlPod('web', 'nginx:1.26'));
    const s = run({ podManifestPath: dir });
    await vi.waitFor(() => expect(s.seen('file')).toBe(true));
    const left = parseManifest(yamlPod('web', 'nginx:1.26'), join(dir, 'b.yaml'), NODE).pod!;
    expect(s.added('file').map((p) => p.spec.containers[0]!.image)).toEqual(['nginx:1.25']);
    expect(s.warnings()).toEqual([`FailedValidation: Error validating pod web-node-1_default(${left.metadata.uid}) from file due to duplicate pod name "web-node-1", ignoring`]);
    expect(s.warnedPods()).toEqual([left.metadata.uid]);
  });

  it('from a PodList at the URL, left out by the merge', async () => {
    body = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [jsonPod('web'), jsonPod('web', 'nginx:1.26')] });
    const url = await serve();
    const s = run({ manifestUrl: url });
    await vi.waitFor(() => expect(s.seen('http')).toBe(true));
    const [, second] = (parsePodsBody(body, url, NODE) as { pods: Pod[] }).pods;
    expect(s.added('http')).toHaveLength(1);
    expect(s.warnings()).toEqual([`FailedValidation: ${duplicatePodEvent(second!, 'http').message}`]);
    expect(s.warnings()[0]).toBe(`FailedValidation: Error validating pod web-node-1_default(${second!.metadata.uid}) from http due to duplicate pod name "web-node-1", ignoring`);
  });
});
