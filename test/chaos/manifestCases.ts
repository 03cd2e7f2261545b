/**
 * Generated static pod manifests (issue 13, "10,000 generated manifests"), and what the agent must
 * do with each: valid pods that use the fields the agent reads, the same pods mutated field by
 * field (a value of the wrong JSON type, an invalid value, a member removed, set to null or added),
 * their text edited at random or truncated, YAML that cannot parse, several documents, nesting
 * deeper than the limit, files over the size limit, bytes that are not UTF-8 and bytes at random.
 *
 * Shared by the in-process property test of `parseManifest` (test/sources/manifestProperties.test.ts)
 * and the episode against the running agent (manifestFuzz.ts).
 */
import fc from 'fast-check';
import { stringify } from 'yaml';
import { validatePod } from '../../src/api/validate.ts';
import { MAX_MANIFEST_BYTES, MAX_MANIFEST_DEPTH, type ManifestError, type ParsedManifest } from '../../src/sources/file.ts';
import { NODE } from './chaosNode.ts';

const LONG_RUNNING = "trap 'exit 0' TERM; while true; do sleep 1; done";

export type Expectation =
  /** Listed as `<name>-<node>`. */
  | { outcome: 'accepted' }
  /**
   * Rejected, every error naming the file; with `field`, one error names exactly that field; with
   * `under`, one error names a field at or under that path, or a line.
   */
  | { outcome: 'rejected'; field?: string; under?: string }
  /** Either accepted, or rejected as above (what a random edit makes of a pod is not known). */
  | { outcome: 'either'; under?: string };

export interface ManifestCase {
  /** What was generated, for the report's counts: `valid`, `wrong type`, `deep`, … */
  kind: string;
  /** What exactly, for a failure's message: the mutated path, the depth, … */
  detail: string;
  content: string | Uint8Array;
  expect: Expectation;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const dnsLabel = fc.stringMatching(/^[a-z]([a-z0-9-]{0,6}[a-z0-9])?$/);
const labelKey = fc.oneof(dnsLabel, fc.tuple(dnsLabel, dnsLabel).map(([prefix, name]) => `${prefix}.example/${name}`));
const labelValue = fc.stringMatching(/^([a-zA-Z0-9]([-a-zA-Z0-9_.]{0,6}[a-zA-Z0-9])?)?$/);
/** Text the agent passes through untouched: any Unicode, in env values, annotations, commands. */
const anyText = fc.string({ unit: 'grapheme', maxLength: 12 });
const envName = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/);
const ipv4 = fc.ipV4();
const IMAGES = ['busybox', 'busybox:latest', 'registry.k8s.io/pause:3.9'];

function container(name: string, volumes: readonly string[], init: boolean): fc.Arbitrary<JsonObject> {
  const probe = fc.record({ exec: fc.constant({ command: ['true'] }), periodSeconds: fc.integer({ min: 1, max: 5 }), failureThreshold: fc.integer({ min: 1, max: 3 }) });
  return fc.record(
    {
      name: fc.constant(name),
      image: fc.constantFrom(...IMAGES),
      command: fc.constant(['sh', '-c', init ? 'true' : LONG_RUNNING]),
      args: fc.array(anyText, { maxLength: 2 }),
      workingDir: fc.constantFrom('/', '/tmp'),
      env: fc.array(
        fc.oneof(
          fc.record({ name: envName, value: anyText }),
          fc.record({ name: envName, valueFrom: fc.constant({ fieldRef: { fieldPath: 'metadata.name' } }) }),
          fc.record({ name: envName, valueFrom: fc.constant({ resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } }) }),
        ),
        { maxLength: 3 },
      ),
      volumeMounts: fc.subarray([...volumes]).map((names) => names.map((volume) => ({ name: volume, mountPath: `/mnt/${volume}` }))),
      ports: init ? fc.constant([]) : fc.array(fc.record({ containerPort: fc.integer({ min: 1, max: 65535 }), name: dnsLabel, protocol: fc.constantFrom('TCP', 'UDP') }, { requiredKeys: ['containerPort'] }), { maxLength: 2 }),
      readinessProbe: init ? fc.constant(undefined) : probe,
      livenessProbe: init ? fc.constant(undefined) : probe,
      lifecycle: init ? fc.constant(undefined) : fc.constant({ preStop: { exec: { command: ['true'] } } }),
      resources: fc.record({ requests: fc.record({ cpu: fc.constantFrom('1m', '2m'), memory: fc.constantFrom('1Mi', 1048576) }), limits: fc.record({ cpu: fc.constantFrom('100m', 1) }) }, { requiredKeys: [] }),
      terminationMessagePath: fc.constant('/dev/termination-log'),
      terminationMessagePolicy: fc.constantFrom('File', 'FallbackToLogsOnError'),
      stdin: fc.boolean(),
      tty: fc.boolean(),
    },
    { requiredKeys: ['name', 'image', 'command'] },
  ).map(withoutUndefined);
}

function withoutUndefined<T extends Record<string, unknown>>(value: T): JsonObject {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as JsonObject;
}

/** A valid pod named `name`, using the fields the agent reads. Containers run until stopped (on sim://). */
export function validPod(name: string): fc.Arbitrary<JsonObject> {
  const volumes = fc.uniqueArray(dnsLabel, { maxLength: 2 });
  return volumes.chain((volumeNames) =>
    fc
      .record({
        containerNames: fc.uniqueArray(dnsLabel, { minLength: 2, maxLength: 4 }),
        init: fc.boolean(),
        metadata: fc.record(
          {
            name: fc.constant(name),
            namespace: fc.constantFrom('default', 'kube-system', 'fuzz'),
            labels: fc.dictionary(labelKey, labelValue, { maxKeys: 3 }),
            annotations: fc.dictionary(labelKey, anyText, { maxKeys: 2 }),
          },
          { requiredKeys: ['name'] },
        ),
        spec: fc.record(
          {
            terminationGracePeriodSeconds: fc.integer({ min: 0, max: 2 }),
            restartPolicy: fc.constantFrom('Always', 'OnFailure', 'Never'),
            volumes: fc.constant(volumeNames.map((volume, i) => (i % 2 === 0 ? { name: volume, emptyDir: {} } : { name: volume, emptyDir: { sizeLimit: '1Mi' } }))),
            hostAliases: fc.array(fc.record({ ip: ipv4, hostnames: fc.array(dnsLabel, { minLength: 1, maxLength: 2 }) }), { maxLength: 1 }),
            dnsPolicy: fc.constantFrom('ClusterFirst', 'Default'),
            dnsConfig: fc.record({ nameservers: fc.array(ipv4, { maxLength: 1 }), searches: fc.array(dnsLabel, { maxLength: 2 }), options: fc.constant([{ name: 'ndots', value: '2' }]) }),
            hostname: dnsLabel,
            subdomain: dnsLabel,
            enableServiceLinks: fc.boolean(),
            priority: fc.integer({ min: 0, max: 1000 }),
            tolerations: fc.array(fc.record({ key: labelKey, operator: fc.constant('Exists'), effect: fc.constantFrom('NoSchedule', 'PreferNoSchedule') }), { maxLength: 1 }),
            activeDeadlineSeconds: fc.integer({ min: 3600, max: 1_000_000 }),
            readinessGates: fc.constant([{ conditionType: 'example.com/ready' }]),
            os: fc.constant({ name: 'linux' }),
          },
          { requiredKeys: ['terminationGracePeriodSeconds'] },
        ),
      })
      .chain(({ containerNames, init, metadata, spec }) => {
        const [first, ...rest] = containerNames;
        return fc
          .tuple(fc.tuple(...rest.map((c) => container(c, volumeNames, false))), init ? container(first!, volumeNames, true).map((c) => [c]) : fc.constant<JsonObject[]>([]))
          .map(([containers, initContainers]) => ({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: withoutUndefined(metadata),
            spec: { ...withoutUndefined(spec), containers, ...(initContainers.length > 0 ? { initContainers } : {}) },
          }));
      }),
  );
}

/** Objects whose members are map entries (`labels[key]`), not fields. */
const MAPS = new Set(['labels', 'annotations', 'nodeSelector', 'requests', 'limits', 'overhead']);
/** Fields that take a number or a string alike. */
const NUMBER_OR_STRING = new Set(['port', 'divisor', 'sizeLimit']);

interface Member {
  /** The validator's name for it: `spec.containers[0].image`, `metadata.labels[app]`. */
  path: string;
  /** Its parent's path: where a member's absence is reported. */
  parentPath: string;
  parent: JsonObject | Json[];
  key: string | number;
  value: Json;
  /** It is an entry of a map, or a field that takes a number or a string: its kinds are both. */
  numberOrString: boolean;
}

/** Every member of the pod at any depth, the pod itself excepted. */
function members(root: JsonObject): Member[] {
  const out: Member[] = [];
  const walk = (value: Json, path: string, mapLike: boolean) => {
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        out.push({ path: `${path}[${i}]`, parentPath: path, parent: value, key: i, value: item, numberOrString: false });
        walk(item, `${path}[${i}]`, false);
      });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        const at = mapLike ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`;
        out.push({ path: at, parentPath: path, parent: value, key, value: item, numberOrString: NUMBER_OR_STRING.has(key) || (mapLike && ['requests', 'limits', 'overhead'].includes(path.split('.').at(-1)!)) });
        walk(item, at, MAPS.has(key));
      }
    }
  };
  walk(root, '', false);
  return out;
}

type JsonKind = 'string' | 'number' | 'boolean' | 'object' | 'list';
const kindOf = (value: Json): JsonKind | 'null' => (value === null ? 'null' : Array.isArray(value) ? 'list' : typeof value === 'object' ? 'object' : (typeof value as JsonKind));
const VALUES_OF_KIND: Record<JsonKind, fc.Arbitrary<Json>> = {
  string: fc.oneof(anyText, fc.constantFrom('5', 'true', 'null', '{}')),
  number: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })),
  boolean: fc.boolean(),
  object: fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 1 }) as fc.Arbitrary<Json>, { maxKeys: 2 }),
  list: fc.array(fc.jsonValue({ maxDepth: 1 }) as fc.Arbitrary<Json>, { maxLength: 2 }),
};

/** A value of a JSON type the member cannot take. */
function wrongValue(member: Member): fc.Arbitrary<Json> {
  const allowed = new Set<string>([kindOf(member.value), ...(member.numberOrString ? ['number', 'string'] : [])]);
  return fc.constantFrom(...(Object.keys(VALUES_OF_KIND) as JsonKind[]).filter((kind) => !allowed.has(kind))).chain((kind) => VALUES_OF_KIND[kind]);
}

function set(member: Member, value: Json | undefined): void {
  if (Array.isArray(member.parent)) member.parent[member.key as number] = value ?? null;
  else if (value === undefined) delete member.parent[member.key as string];
  else member.parent[member.key as string] = value;
}

const copy = (pod: JsonObject): JsonObject => structuredClone(pod);

/**
 * Invalid values the validator knows by field, each with the field it must name. `pod` is a copy
 * to change; a change that does not apply to it returns null.
 */
const INVALID: ((pod: JsonObject, pick: number) => string | null)[] = [
  (pod, pick) => {
    const names = ['Ünïcödé', '日本語', 'pod😀', 'UPPER', 'a_b', 'x'.repeat(254), '-dash', 'dot.', 'sp ace'];
    (pod['metadata'] as JsonObject)['name'] = names[pick % names.length]!;
    return 'metadata.name';
  },
  (pod, pick) => {
    (pod['metadata'] as JsonObject)['namespace'] = ['Default', 'ns_1', 'n'.repeat(64), 'ñ'][pick % 4]!;
    return 'metadata.namespace';
  },
  (pod, pick) => {
    ((pod['spec'] as JsonObject)['containers'] as JsonObject[])[0]!['name'] = ['App', 'ünï', 'c_1', 'c'.repeat(64)][pick % 4]!;
    return 'spec.containers[0].name';
  },
  (pod) => {
    ((pod['spec'] as JsonObject)['containers'] as JsonObject[])[0]!['image'] = ' busybox';
    return 'spec.containers[0].image';
  },
  (pod) => {
    const containers = (pod['spec'] as JsonObject)['containers'] as JsonObject[];
    if (containers.length < 2) return null;
    containers[1]!['name'] = containers[0]!['name']!;
    return 'spec.containers[1].name';
  },
  (pod) => {
    (pod['spec'] as JsonObject)['restartPolicy'] = 'Sometimes';
    return 'spec.restartPolicy';
  },
  (pod) => {
    ((pod['spec'] as JsonObject)['containers'] as JsonObject[])[0]!['imagePullPolicy'] = 'Maybe';
    return 'spec.containers[0].imagePullPolicy';
  },
  (pod, pick) => {
    ((pod['spec'] as JsonObject)['containers'] as JsonObject[])[0]!['ports'] = [{ containerPort: [0, 65536, -1, 1.5][pick % 4]! }];
    return 'spec.containers[0].ports[0].containerPort';
  },
  (pod) => {
    ((pod['spec'] as JsonObject)['containers'] as JsonObject[])[0]!['ports'] = [{ containerPort: 80, protocol: 'HTTP' }];
    return 'spec.containers[0].ports[0].protocol';
  },
  (pod) => {
    (pod['spec'] as JsonObject)['terminationGracePeriodSeconds'] = -1;
    return 'spec.terminationGracePeriodSeconds';
  },
  (pod) => {
    (pod['spec'] as JsonObject)['activeDeadlineSeconds'] = 0;
    return 'spec.activeDeadlineSeconds';
  },
  (pod, pick) => {
    const key = ['bad key', 'Ü', '-x', 'a/b/c', `${'k'.repeat(64)}`][pick % 5]!;
    (pod['metadata'] as JsonObject)['labels'] = { [key]: 'v' };
    return `metadata.labels[${key}]`;
  },
  (pod) => {
    (pod['metadata'] as JsonObject)['labels'] = { app: 'not valid!' };
    return 'metadata.labels[app]';
  },
  (pod) => {
    ((pod['spec'] as JsonObject)['containers'] as JsonObject[])[0]!['livenessProbe'] = { exec: { command: ['true'] }, successThreshold: 2 };
    return 'spec.containers[0].livenessProbe.successThreshold';
  },
  (pod) => {
    ((pod['spec'] as JsonObject)['containers'] as JsonObject[])[0]!['readinessProbe'] = { periodSeconds: 1 };
    return 'spec.containers[0].readinessProbe';
  },
  (pod, pick) => {
    ((pod['spec'] as JsonObject)['containers'] as JsonObject[])[0]!['resources'] = { requests: { cpu: ['lots', '1.2.3', '', '10 m'][pick % 4]! } };
    return 'spec.containers[0].resources.requests[cpu]';
  },
  (pod) => {
    (pod['spec'] as JsonObject)['dnsPolicy'] = 'Sometimes';
    return 'spec.dnsPolicy';
  },
  (pod) => {
    (pod as JsonObject)['kind'] = 'Deployment';
    return 'kind';
  },
  (pod) => {
    (pod as JsonObject)['apiVersion'] = 'apps/v1';
    return 'apiVersion';
  },
];

/** A member added under any object that is not a map: unknown fields are carried through. */
const UNKNOWN_KEY = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }).map((key) => `x-${key}`);

type Render = 'yaml' | 'json' | 'json-pretty';
const render = (value: unknown, how: Render): string =>
  how === 'yaml' ? stringify(value, { aliasDuplicateObjects: false }) : how === 'json' ? JSON.stringify(value) : JSON.stringify(value, null, 2);
const renderArb = fc.constantFrom<Render>('yaml', 'json', 'json-pretty');

/** The pod as it stands, rendered. */
function rendered(kind: string, detail: string, pod: JsonObject, expect: Expectation): fc.Arbitrary<ManifestCase> {
  return renderArb.map((how) => ({ kind, detail: `${detail} (${how})`, content: render(pod, how), expect }));
}

function mutated(name: string): fc.Arbitrary<ManifestCase> {
  return validPod(name).chain((pod) => {
    const all = members(pod);
    const objects = all.filter((m) => kindOf(m.value) === 'object' && !MAPS.has(String(m.key)));
    return fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...all).chain((m) => wrongValue(m).chain((value) => {
        const changed = copy(pod);
        set(members(changed).find((c) => c.path === m.path)!, value);
        return rendered('wrong type', `${m.path} = ${JSON.stringify(value)}`, changed, { outcome: 'rejected', field: m.path });
      })) },
      { weight: 3, arbitrary: fc.tuple(fc.nat(INVALID.length - 1), fc.nat()).chain(([which, pick]) => {
        const changed = copy(pod);
        const field = INVALID[which]!(changed, pick);
        return field === null ? rendered('valid', 'as generated', pod, { outcome: 'accepted' }) : rendered('invalid value', field, changed, { outcome: 'rejected', field });
      }) },
      { weight: 2, arbitrary: fc.constantFrom(...all.filter((m) => !Array.isArray(m.parent))).chain((m) => {
        const changed = copy(pod);
        set(members(changed).find((c) => c.path === m.path)!, undefined);
        return rendered('removed', m.path, changed, { outcome: 'either', under: m.parentPath });
      }) },
      { weight: 2, arbitrary: fc.constantFrom(...all).chain((m) => {
        const changed = copy(pod);
        set(members(changed).find((c) => c.path === m.path)!, null);
        // A member set to null is not set (as the Go decoder has it): judged as a removal. A null list item stays one.
        return rendered('null', m.path, changed, { outcome: 'either', under: Array.isArray(m.parent) ? m.path : m.parentPath });
      }) },
      { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...objects), UNKNOWN_KEY, fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>).chain(([m, key, value]) => {
        const changed = copy(pod);
        (members(changed).find((c) => c.path === m.path)!.value as JsonObject)[key] = value;
        return rendered('unknown field', `${m.path}.${key}`, changed, { outcome: 'accepted' });
      }) },
    );
  });
}

/** The text of a valid pod cut, spliced or with a line repeated: anything may come of it. */
function edited(name: string): fc.Arbitrary<ManifestCase> {
  return fc.tuple(validPod(name), renderArb, fc.nat(), fc.nat(), fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom('cut', 'insert', 'delete', 'repeat line')).map(([pod, how, a, b, text, edit]) => {
    const source = render(pod, how);
    const at = a % (source.length + 1);
    const to = Math.min(source.length, at + (b % 40));
    const lines = source.split('\n');
    const line = a % lines.length;
    const content =
      edit === 'cut' ? source.slice(0, at)
      : edit === 'insert' ? source.slice(0, at) + text + source.slice(at)
      : edit === 'delete' ? source.slice(0, at) + source.slice(to)
      : [...lines.slice(0, line + 1), ...lines.slice(line)].join('\n');
    const expect: Expectation = { outcome: 'either' };
    return { kind: 'text edit', detail: `${edit} at ${at} (${how})`, content, expect };
  });
}

/** Rejected, naming a line or a field. */
const AT_A_LINE: Expectation = { outcome: 'rejected', under: '' };
const REJECTED: Expectation = { outcome: 'rejected' };

/** Text that cannot parse, or parses to something that is not one Pod. */
function broken(name: string): fc.Arbitrary<ManifestCase> {
  const pod = validPod(name);
  return fc.oneof(
    // JSON is one flow collection: cut anywhere inside, it is never closed.
    fc.tuple(pod, fc.nat()).map(([p, at]) => {
      const json = JSON.stringify(p);
      const cut = 1 + (at % (json.length - 1));
      return { kind: 'syntax', detail: `JSON cut at ${cut}`, content: json.slice(0, cut), expect: AT_A_LINE };
    }),
    pod.map((p) => ({ kind: 'syntax', detail: 'unclosed flow sequence', content: `${render(p, 'yaml')}extra: [a, b\n`, expect: AT_A_LINE })),
    pod.map((p) => ({ kind: 'syntax', detail: 'tab indentation', content: render(p, 'yaml').replace(/\n {2}/, '\n\t'), expect: AT_A_LINE })),
    pod.map((p) => ({ kind: 'syntax', detail: 'a key twice', content: `${render(p, 'yaml')}kind: Pod\n`, expect: AT_A_LINE })),
    fc.tuple(pod, validPod(`${name}-b`)).map(([a, b]) => ({ kind: 'several documents', detail: 'two pods', content: `${render(a, 'yaml')}---\n${render(b, 'yaml')}`, expect: AT_A_LINE })),
    fc.constantFrom('', '\n', '# only a comment\n', '---\n', '   \t\n').map((text) => ({ kind: 'not a pod', detail: JSON.stringify(text), content: text, expect: REJECTED })),
    fc.oneof(fc.jsonValue({ maxDepth: 2 }).filter((v) => v === null || typeof v !== 'object' || Array.isArray(v)), fc.string({ unit: 'grapheme', maxLength: 20 })).map((value) => ({ kind: 'not a pod', detail: 'a scalar or a list', content: JSON.stringify(value), expect: REJECTED })),
    fc.uint8Array({ minLength: 1, maxLength: 300 }).map((bytes) => ({ kind: 'random bytes', detail: `${bytes.length} bytes`, content: bytes, expect: REJECTED })),
    fc.tuple(pod, fc.constantFrom([0xff], [0xc3], [0x80], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80])).map(([p, bad]) => {
      const text = render({ ...p, metadata: { ...(p['metadata'] as JsonObject), annotations: { note: '@@' } } }, 'yaml');
      const [before, after] = text.split('@@') as [string, string];
      const bytes = Buffer.concat([Buffer.from(before), Buffer.from(bad), Buffer.from(after)]);
      return { kind: 'not UTF-8', detail: `bytes ${bad.map((x) => x.toString(16)).join(' ')} in an annotation`, content: new Uint8Array(bytes), expect: AT_A_LINE };
    }),
  );
}

/** Block YAML indents each level further, so its size grows with the square of its depth: at most this deep. */
const BLOCK_DEPTH_MAX = 300;

/** An unknown field nested `depth` levels below the pod's spec, as flow YAML, JSON or block YAML. */
export function deep(name: string): fc.Arbitrary<ManifestCase> {
  return fc.tuple(validPod(name), fc.oneof(fc.integer({ min: 1, max: MAX_MANIFEST_DEPTH + 5 }), fc.integer({ min: 1, max: 3000 })), fc.constantFrom('flow', 'json', 'block')).map(([pod, depth, style]) => {
    // spec is level 2 and x-deep level 3: its innermost collection is at 2 + depth.
    const levels = 2 + depth;
    let content: string;
    if (style === 'block') {
      const levels = Math.min(depth, BLOCK_DEPTH_MAX);
      const nested = Array.from({ length: levels }, (_, i) => `${' '.repeat(2 * i + 4)}k:`).join('\n');
      // spec is the rendered pod's last member: a line indented by 2 adds to it.
      content = `${render(pod, 'yaml')}  x-deep:\n${nested} 1\n`;
      return { kind: 'deep', detail: `${levels} levels of block YAML`, content, expect: levels + 2 > MAX_MANIFEST_DEPTH ? { outcome: 'rejected', under: 'spec.x-deep' } : { outcome: 'accepted' } };
    }
    const inner = style === 'flow' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"k":'.repeat(depth)}1${'}'.repeat(depth)}`;
    content = JSON.stringify({ ...pod, spec: { ...(pod['spec'] as JsonObject), 'x-deep': '@@' } }).replace('"@@"', inner);
    return { kind: 'deep', detail: `${depth} levels of ${style}`, content, expect: levels > MAX_MANIFEST_DEPTH ? { outcome: 'rejected', under: 'spec.x-deep' } : { outcome: 'accepted' } };
  });
}

/** A valid pod padded with an annotation to `bytes` bytes in all: over the limit it is rejected. */
export function huge(name: string, bytes: fc.Arbitrary<number> = fc.integer({ min: MAX_MANIFEST_BYTES - 64, max: MAX_MANIFEST_BYTES + 64 })): fc.Arbitrary<ManifestCase> {
  return fc.tuple(validPod(name), bytes).map(([pod, size]) => {
    const base = render({ ...pod, metadata: { ...(pod['metadata'] as JsonObject), annotations: { pad: '' } } }, 'json');
    const content = base.replace('"pad":""', `"pad":"${'x'.repeat(Math.max(0, size - Buffer.byteLength(base)))}"`);
    const over = Buffer.byteLength(content) > MAX_MANIFEST_BYTES;
    return { kind: 'huge', detail: `${Buffer.byteLength(content)} bytes`, content, expect: over ? { outcome: 'rejected' } : { outcome: 'accepted' } };
  });
}

/** Any case for a pod named `name` (when it is valid), in the mix the episode writes. */
export function manifestCase(name: string): fc.Arbitrary<ManifestCase> {
  return fc.oneof(
    { weight: 30, arbitrary: validPod(name).chain((pod) => rendered('valid', 'as generated', pod, { outcome: 'accepted' })) },
    { weight: 35, arbitrary: mutated(name) },
    { weight: 12, arbitrary: edited(name) },
    { weight: 15, arbitrary: broken(name) },
    { weight: 5, arbitrary: deep(name) },
  );
}

/** Only null, booleans, finite numbers, strings, arrays and plain objects: what a JSON document holds (no Date, Map, bytes). */
function isPlainJson(value: unknown): boolean {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isPlainJson);
  return typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype && Object.values(value).every(isPlainJson);
}

/** The error names a field at or under `under` (any field, if empty), or a line. */
function locates(error: ManifestError, under: string): boolean {
  if (error.line !== undefined) return true;
  const { field } = error;
  return field !== undefined && (under === '' || field === under || field.startsWith(`${under}.`) || field.startsWith(`${under}[`));
}

/**
 * What is wrong with what `parseManifest` made of a case read from `file` (empty when nothing):
 * a pod and errors at once, or neither; an error that does not start with the file (and its
 * field, when it has one); an accepted pod that is not valid or not plain JSON; and the case's
 * expectation broken. `name` is the pod's name in a valid case.
 */
export function judge(c: ManifestCase, parsed: ParsedManifest, file: string, name: string): string[] {
  const problems: string[] = [];
  const { pod, errors } = parsed;
  if (pod && errors.length > 0) problems.push('both a pod and errors');
  if (!pod && errors.length === 0) problems.push('neither a pod nor an error');
  for (const error of errors) {
    if (error.file !== file || !error.message.startsWith(`${file}:`)) problems.push(`an error does not start with the file: ${error.message}`);
    else if (error.field !== undefined && !error.message.startsWith(`${file}: ${error.field}: `)) problems.push(`an error does not name its field ${error.field}: ${error.message}`);
  }
  if (pod) {
    const again = validatePod(pod);
    if (again.errors.length > 0) problems.push(`the accepted pod is not valid: ${JSON.stringify(again.errors)}`);
    if (!isPlainJson(pod)) problems.push('the accepted pod is not plain JSON');
  }
  const said = errors.map((e) => e.message).join(' | ');
  const expect = c.expect;
  if (expect.outcome === 'accepted') {
    if (!pod) problems.push(`rejected: ${said}`);
    else if (pod.metadata.name !== `${name}-${NODE}`) problems.push(`accepted as ${pod.metadata.name}`);
  } else if (expect.outcome === 'rejected' && pod) {
    problems.push('accepted');
  } else if (!pod) {
    const field = expect.outcome === 'rejected' ? expect.field : undefined;
    if (field !== undefined && !errors.some((e) => e.field === field)) problems.push(`no error names ${field}: ${said}`);
    if (expect.under !== undefined && !errors.some((e) => locates(e, expect.under!))) problems.push(`no error names a line or a field under "${expect.under}": ${said}`);
  }
  return problems;
}
