/**
 * The HTTP pod source (src/sources/http.ts, the kubelet's pkg/kubelet/config/http.go): what a body
 * gives (a Pod or a PodList, YAML or JSON), what an answer does (non-200, unchanged, empty), and
 * the source itself against a real HTTP server on 127.0.0.1, stepped by a manual clock.
 */
import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { type AnswerOutcome, type HttpSourceError, MAX_HTTP_BODY_BYTES, createHttpSource, parsePodsBody, readAnswer } from '../../src/sources/http.ts';
import { staticPodUid } from '../../src/sources/static.ts';
import { ManualClock } from '../support/manualClock.ts';

const URL_ = 'http://config.example/pods';
const NODE = 'Node-1';

const podManifest = (name: string, image = 'nginx:1.25') => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'app', image }] } });
const yamlPod = (name: string, image = 'nginx:1.25') => `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n    - name: app\n      image: ${image}\n`;
const podList = (...items: unknown[]) => JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items });
const bytes = (text: string) => new TextEncoder().encode(text);
const names = (pods: Pod[] | undefined) => (pods ?? []).map((pod) => pod.metadata.name);

describe('parsePodsBody (common.go tryDecodeSinglePod, then tryDecodePodList)', () => {
  const good: { name: string; body: string; pods: string[] }[] = [
    { name: 'a single Pod in YAML', body: yamlPod('web'), pods: ['web-node-1'] },
    { name: 'a single Pod in JSON', body: JSON.stringify(podManifest('web')), pods: ['web-node-1'] },
    { name: 'a v1 PodList in JSON', body: podList(podManifest('a'), podManifest('b')), pods: ['a-node-1', 'b-node-1'] },
    {
      name: 'a PodList in YAML (items without kind)',
      body: 'apiVersion: v1\nkind: PodList\nitems:\n  - metadata: {name: a}\n    spec: {containers: [{name: app, image: busybox}]}\n',
      pods: ['a-node-1'],
    },
    { name: 'a PodList with no items', body: podList(), pods: [] },
    { name: 'a PodList without an items field', body: '{"apiVersion":"v1","kind":"PodList"}', pods: [] },
  ];
  it.each(good)('reads $name', ({ body, pods }) => {
    const parsed = parsePodsBody(bytes(body), URL_, NODE);
    expect(parsed).toHaveProperty('pods');
    expect(names((parsed as { pods: Pod[] }).pods)).toEqual(pods);
  });

  it('defaults each pod as a static pod of the URL: node suffix, UID hashed from the URL and the manifest, hash annotation, no NoExecute toleration', () => {
    const manifest = podManifest('web');
    const parsed = parsePodsBody(bytes(podList(manifest)), URL_, NODE) as { pods: Pod[] };
    const [pod] = parsed.pods;
    const uid = staticPodUid(manifest, { kind: 'url', url: URL_ }, NODE);
    expect(pod!.metadata).toMatchObject({ name: 'web-node-1', namespace: 'default', uid, annotations: { 'kubernetes.io/config.hash': uid } });
    expect(pod!.spec.nodeName).toBe(NODE);
    // File pods tolerate every NoExecute taint (common.go applyDefaults, isFile); URL pods do not.
    expect(pod!.spec.tolerations ?? []).toEqual([]);
    // The same manifest served alone gives the same pod.
    expect((parsePodsBody(bytes(JSON.stringify(manifest)), URL_, NODE) as { pods: Pod[] }).pods[0]!.metadata.uid).toBe(uid);
    // Another URL, another UID.
    expect((parsePodsBody(bytes(JSON.stringify(manifest)), `${URL_}2`, NODE) as { pods: Pod[] }).pods[0]!.metadata.uid).not.toBe(uid);
  });

  const bad: { name: string; body: string; error: HttpSourceError }[] = [
    {
      name: 'an invalid Pod: the URL, the field and the pod',
      body: JSON.stringify({ ...podManifest('web'), spec: { containers: [{ name: 'app' }] } }),
      error: { url: URL_, field: 'spec.containers[0].image', pod: 'web', message: `${URL_}: spec.containers[0].image: Required value (pod "web")` },
    },
    {
      name: 'one invalid pod of a PodList: the whole list, with the item',
      body: podList(podManifest('a'), { metadata: { name: 'b' }, spec: { containers: [{ name: 'app' }] } }),
      error: { url: URL_, field: 'items[1].spec.containers[0].image', pod: 'b', message: `${URL_}: items[1].spec.containers[0].image: Required value (pod "b")` },
    },
    {
      name: 'a pod without a name',
      body: JSON.stringify({ kind: 'Pod', spec: { containers: [{ name: 'app', image: 'x' }] } }),
      error: { url: URL_, field: 'metadata.name', message: `${URL_}: metadata.name: Required value` },
    },
    {
      name: 'another kind',
      body: '{"apiVersion":"apps/v1","kind":"Deployment"}',
      error: { url: URL_, field: 'kind', message: `${URL_}: kind: Unsupported value: "Deployment": supported values: "Pod", "PodList"` },
    },
    {
      name: 'a PodList of another version',
      body: '{"apiVersion":"v2","kind":"PodList","items":[]}',
      error: { url: URL_, field: 'apiVersion', message: `${URL_}: apiVersion: Unsupported value: "v2": supported values: "v1"` },
    },
    { name: 'items that are not a list', body: '{"kind":"PodList","items":{}}', error: { url: URL_, field: 'items', message: `${URL_}: items: expected a list of pods` } },
    {
      name: 'a web page',
      body: 'Service Unavailable',
      error: { url: URL_, message: `${URL_}: expected a Pod or a v1 PodList (YAML or JSON), got the text "Service Unavailable"` },
    },
    {
      name: 'two YAML documents',
      body: `${yamlPod('a')}---\n${yamlPod('b')}`,
      error: { url: URL_, message: `${URL_}:9: one Pod or PodList per answer, found 2 YAML documents` },
    },
    { name: 'YAML that does not parse', body: 'kind: Pod\nmetadata: [\n', error: { url: URL_, message: expect.stringMatching(new RegExp(`^${URL_}:\\d+: `)) as unknown as string } },
  ];
  it.each(bad)('reports $name', ({ body, error }) => {
    expect(parsePodsBody(bytes(body), URL_, NODE)).toEqual({ error });
  });

  it('refuses a body over 10 MiB (common.go maxConfigLength)', () => {
    const parsed = parsePodsBody(new Uint8Array(MAX_HTTP_BODY_BYTES + 1).fill(0x20), URL_, NODE);
    expect(parsed).toEqual({ error: { url: URL_, message: `${URL_}: larger than ${MAX_HTTP_BODY_BYTES} bytes, the most a manifest may have` } });
  });
});

describe('readAnswer (http.go extractFromURL)', () => {
  const body = bytes(yamlPod('web'));
  const broken = bytes('kind: Pod\n');
  const brokenProblem = parsePodsBody(broken, URL_, NODE) as { error: HttpSourceError };
  const summary = (outcome: AnswerOutcome) => ({
    snapshot: outcome.snapshot && names(outcome.snapshot),
    problem: outcome.problem?.message,
    remembers: outcome.last && new TextDecoder().decode(outcome.last.body),
  });
  const cases: { name: string; status?: number; statusText?: string; body: Uint8Array; last?: { body: Uint8Array; problem?: HttpSourceError }; expected: ReturnType<typeof summary> }[] = [
    { name: 'a first good body: its pods', body, expected: { snapshot: ['web-node-1'], problem: undefined, remembers: yamlPod('web') } },
    { name: 'the same body again: nothing to hand over', body, last: { body }, expected: { snapshot: undefined, problem: undefined, remembers: undefined } },
    { name: 'a changed body: its pods', body: bytes(yamlPod('db')), last: { body }, expected: { snapshot: ['db-node-1'], problem: undefined, remembers: yamlPod('db') } },
    {
      name: 'not 200: the status, and the last pods stay',
      status: 404,
      statusText: 'Not Found',
      body: bytes('no such page'),
      last: { body },
      expected: { snapshot: undefined, problem: `${URL_}: 404 Not Found`, remembers: undefined },
    },
    { name: '204 is not 200 either', status: 204, statusText: 'No Content', body: bytes(''), expected: { snapshot: undefined, problem: `${URL_}: 204 No Content`, remembers: undefined } },
    {
      name: 'an empty body: an empty set, and said',
      body: bytes(''),
      last: { body },
      expected: { snapshot: [], problem: `${URL_}: zero-length data received; no pods from this URL`, remembers: '' },
    },
    { name: 'after an empty body, the earlier pods again are read again', body, last: { body: bytes('') }, expected: { snapshot: ['web-node-1'], problem: undefined, remembers: yamlPod('web') } },
    {
      name: 'a body that does not decode: the problem, the last pods stay',
      body: broken,
      last: { body },
      expected: { snapshot: undefined, problem: brokenProblem.error.message, remembers: 'kind: Pod\n' },
    },
    {
      name: 'the same broken body again: the same problem, nothing decoded',
      body: broken,
      last: { body: broken, problem: brokenProblem.error },
      expected: { snapshot: undefined, problem: brokenProblem.error.message, remembers: undefined },
    },
  ];
  it.each(cases)('$name', ({ status, statusText, body: answerBody, last, expected }) => {
    expect(summary(readAnswer({ status: status ?? 200, statusText: statusText ?? 'OK', body: answerBody }, last, URL_, NODE))).toEqual(expected);
  });
});

describe('the HTTP source against a server', () => {
  /** What the server answers next; every request it got, with its headers. */
  let answer: { status: number; body: string };
  let requests: IncomingHttpHeaders[];
  let server: Server;
  let url: string;
  let clock: ManualClock;
  let stops: (() => void)[];

  beforeEach(async () => {
    answer = { status: 200, body: yamlPod('web') };
    requests = [];
    stops = [];
    clock = new ManualClock();
    server = createServer((req, res) => {
      requests.push(req.headers);
      res.writeHead(answer.status, { 'content-type': 'application/yaml' });
      res.end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods`;
  });

  afterEach(async () => {
    for (const stop of stops) stop();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function start(headers: Record<string, string[]> = {}) {
    const snapshots: Pod[][] = [];
    const errors: HttpSourceError[] = [];
    let recovered = 0;
    const source = createHttpSource({
      url,
      headers,
      nodeName: NODE,
      checkFrequencyMs: 20_000,
      clock,
      onSnapshot: (pods) => snapshots.push(pods),
      onError: (err) => errors.push(err),
      onRecovered: () => recovered++,
    });
    stops.push(() => source.stop());
    return { source, snapshots, errors, recovered: () => recovered };
  }

  it('fetches at start with the headers, hands over the pods, then fetches again each period', async () => {
    const s = start({ Authorization: ['Bearer abc'], 'X-Node': ['a', 'b'] });
    await s.source.start();
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ authorization: 'Bearer abc', 'x-node': 'a, b' });
    expect(s.snapshots.map(names)).toEqual([['web-node-1']]);
    expect(s.snapshots[0]![0]!.metadata.uid).toBe(staticPodUid(podManifest('web'), { kind: 'url', url }, NODE));

    // Not before the period: one fetch.
    clock.advance(19_999);
    expect(requests).toHaveLength(1);
    // The same body: fetched, nothing handed over.
    clock.advance(1);
    await vi.waitFor(() => expect(requests).toHaveLength(2));
    await vi.waitFor(() => expect(clock.pendingTimers).toBe(1));
    expect(s.snapshots).toHaveLength(1);

    // A PodList of two: both, in one snapshot.
    answer = { status: 200, body: podList(podManifest('web'), podManifest('db')) };
    clock.advance(20_000);
    await vi.waitFor(() => expect(s.snapshots.map(names)).toEqual([['web-node-1'], ['web-node-1', 'db-node-1']]));
    expect(s.errors).toEqual([]);
  });

  it('keeps the last good set on an error answer and on a bad body, says each once, and says when it reads pods again', async () => {
    const s = start();
    await s.source.start();
    const nextFetch = async (count: number) => {
      clock.advance(20_000);
      await vi.waitFor(() => expect(requests).toHaveLength(count));
      await vi.waitFor(() => expect(clock.pendingTimers).toBe(1));
    };

    answer = { status: 500, body: 'oops' };
    await nextFetch(2);
    await nextFetch(3);
    expect(s.errors.map((e) => e.message)).toEqual([`${url}: 500 Internal Server Error`]);

    answer = { status: 200, body: JSON.stringify({ ...podManifest('web'), spec: { containers: [{ name: 'app', image: '' }] } }) };
    await nextFetch(4);
    await nextFetch(5);
    expect(s.errors.slice(1)).toEqual([
      { url, field: 'spec.containers[0].image', pod: 'web', message: `${url}: spec.containers[0].image: Required value (pod "web")` },
    ]);
    // Neither changed the pods: the only snapshot is the first.
    expect(s.snapshots.map(names)).toEqual([['web-node-1']]);
    expect(s.recovered()).toBe(0);

    answer = { status: 200, body: yamlPod('web', 'nginx:1.26') };
    await nextFetch(6);
    expect(s.snapshots.map(names)).toEqual([['web-node-1'], ['web-node-1']]);
    expect(s.snapshots[1]![0]!.spec.containers[0]!.image).toBe('nginx:1.26');
    expect(s.recovered()).toBe(1);
  });

  it('an empty body empties the set', async () => {
    const s = start();
    await s.source.start();
    answer = { status: 200, body: '' };
    clock.advance(20_000);
    await vi.waitFor(() => expect(s.snapshots.map(names)).toEqual([['web-node-1'], []]));
    expect(s.errors.map((e) => e.message)).toEqual([`${url}: zero-length data received; no pods from this URL`]);
  });

  it('a server that does not answer: said with the URL, and no snapshot, so the source is not seen', async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const s = start();
    await s.source.start();
    expect(s.snapshots).toEqual([]);
    expect(s.errors).toEqual([{ url, message: expect.stringMatching(new RegExp(`^${url}: .*ECONNREFUSED`)) }]);
  });

  it('a request with no answer within 10 s is given up and said, naming the URL', async () => {
    const hung = createServer((req) => requests.push(req.headers));
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(hung.address() as AddressInfo).port}/pods`;
    const s = start();
    const started = s.source.start();
    await vi.waitFor(() => expect(requests).toHaveLength(1));
    clock.advance(10_000);
    await started;
    expect(s.errors.map((e) => e.message)).toEqual([`${url}: no answer within 10s`]);
    s.source.stop();
    hung.closeAllConnections();
    await new Promise<void>((resolve) => hung.close(() => resolve()));
  });

  it('stops: nothing is fetched or handed over afterwards', async () => {
    const s = start();
    await s.source.start();
    s.source.stop();
    expect(clock.pendingTimers).toBe(0);
    clock.advance(60_000);
    expect(requests).toHaveLength(1);
    expect(s.snapshots).toHaveLength(1);
  });
});
