import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { MAX_MANIFEST_BYTES, MAX_MANIFEST_DEPTH, createFileSource, parseManifest, type FileSource, type ManifestError } from '../../src/sources/file.ts';

const NODE = 'Node-1';
const HOUR = 3_600_000;

const yamlPod = (name: string, image = 'nginx:1.25'): string =>
  `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n    - name: app\n      image: ${image}\n`;

const jsonPod = (name: string): string =>
  JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'app', image: 'redis:7' }] } });

/** Records what a source emits; `next(test)` resolves on the first later snapshot passing `test`. */
class Recorder {
  snapshots: Pod[][] = [];
  errors: ManifestError[] = [];
  private waiters: { test: (pods: Pod[]) => boolean; resolve: (pods: Pod[]) => void }[] = [];

  onSnapshot = (pods: Pod[]): void => {
    this.snapshots.push(pods);
    this.waiters = this.waiters.filter((w) => {
      if (!w.test(pods)) return true;
      w.resolve(pods);
      return false;
    });
  };
  onError = (err: ManifestError): void => {
    this.errors.push(err);
  };
  next(test: (pods: Pod[]) => boolean): Promise<Pod[]> {
    return new Promise((resolve) => this.waiters.push({ test, resolve }));
  }
  get last(): Pod[] | undefined {
    return this.snapshots.at(-1);
  }
}

const names = (pods: Pod[] | undefined): string[] => (pods ?? []).map((p) => p.metadata.name);

let dir: string;
let sources: FileSource[];
let rec: Recorder;

function source(path = dir): FileSource {
  const s = createFileSource({ path, nodeName: NODE, checkFrequencyMs: HOUR, onSnapshot: rec.onSnapshot, onError: rec.onError });
  sources.push(s);
  return s;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'statelet-file-'));
  sources = [];
  rec = new Recorder();
});

afterEach(async () => {
  for (const s of sources) s.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('file source', () => {
  it('reads YAML and JSON pods in file-name order, defaulted as static pods', async () => {
    await writeFile(join(dir, 'b.json'), jsonPod('cache'));
    await writeFile(join(dir, 'a.yaml'), yamlPod('web'));
    await source().start();
    expect(rec.snapshots).toHaveLength(1);
    expect(names(rec.last)).toEqual(['web-node-1', 'cache-node-1']);
    const [web] = rec.last ?? [];
    expect(web?.spec.nodeName).toBe(NODE);
    expect(web?.metadata.uid).toMatch(/^[0-9a-f]{32}$/);
    expect(rec.errors).toEqual([]);
  });

  it('skips dotfiles and does not recurse into directories', async () => {
    await writeFile(join(dir, '.hidden.yaml'), yamlPod('hidden'));
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'sub', 'nested.yaml'), yamlPod('nested'));
    await writeFile(join(dir, 'web.yaml'), yamlPod('web'));
    await source().start();
    expect(names(rec.last)).toEqual(['web-node-1']);
    expect(rec.errors.map((e) => e.file)).toEqual([join(dir, 'sub')]);
  });

  it('reports malformed YAML with file and line, and still delivers the good pod', async () => {
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n bad: 1\n');
    await writeFile(join(dir, 'good.yaml'), yamlPod('good'));
    await source().start();
    expect(names(rec.last)).toEqual(['good-node-1']);
    expect(rec.errors).toHaveLength(1);
    expect(rec.errors[0]).toMatchObject({ file: bad, line: 5 });
    expect(rec.errors[0]?.message).toMatch(new RegExp(`^${bad}:5: \\S`));
  });

  it('reports a pod without containers with the field', async () => {
    const file = join(dir, 'empty.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec: {}\n');
    await source().start();
    expect(rec.last).toEqual([]);
    expect(rec.errors).toEqual([{ file, field: 'spec.containers', message: `${file}: spec.containers: Required value` }]);
  });

  it('reports duplicate container names on the second one', async () => {
    const file = join(dir, 'dup.yaml');
    await writeFile(
      file,
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n    - {name: a, image: x}\n    - {name: a, image: y}\n',
    );
    await source().start();
    expect(rec.last).toEqual([]);
    expect(rec.errors).toEqual([{ file, field: 'spec.containers[1].name', message: `${file}: spec.containers[1].name: Duplicate value: "a"` }]);
  });

  it('rejects a file with several documents', async () => {
    const file = join(dir, 'two.yaml');
    await writeFile(file, `${yamlPod('one')}---\n${yamlPod('two')}`);
    await source().start();
    expect(rec.last).toEqual([]);
    expect(rec.errors).toMatchObject([{ file, line: 9 }]);
    expect(rec.errors[0]?.message).toContain('one Pod per file');
  });

  it('drops a removed file from the next snapshot', async () => {
    await writeFile(join(dir, 'a.yaml'), yamlPod('a'));
    await writeFile(join(dir, 'b.yaml'), yamlPod('b'));
    const s = source();
    await s.start();
    expect(names(rec.last)).toEqual(['a-node-1', 'b-node-1']);
    await rm(join(dir, 'a.yaml'));
    await s.rescan();
    expect(names(rec.last)).toEqual(['b-node-1']);
  });

  it('picks up a new file through fs.watch, without waiting for the periodic rescan', async () => {
    await source().start();
    expect(rec.last).toEqual([]);
    const seen = rec.next((pods) => pods.length > 0);
    await writeFile(join(dir, 'new.yaml'), yamlPod('fresh'));
    expect(names(await seen)).toEqual(['fresh-node-1']);
  });

  it('re-reads a changed file: new content gives a new UID', async () => {
    const file = join(dir, 'web.yaml');
    await writeFile(file, yamlPod('web'));
    const s = source();
    await s.start();
    const before = rec.last?.[0]?.metadata.uid;
    await writeFile(file, yamlPod('web', 'nginx:1.26'));
    await s.rescan();
    expect(rec.last?.[0]?.spec.containers[0]?.image).toBe('nginx:1.26');
    expect(rec.last?.[0]?.metadata.uid).not.toBe(before);
  });

  it('gives the same UID after a restart', async () => {
    await writeFile(join(dir, 'web.yaml'), yamlPod('web'));
    await source().start();
    const first = rec.last?.[0]?.metadata.uid;
    await source().start();
    expect(rec.snapshots).toHaveLength(2);
    expect(rec.last?.[0]?.metadata.uid).toBe(first);
  });

  it('reports a broken file once, not on every rescan, and again once it changes', async () => {
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'kind: [\n');
    const s = source();
    await s.start();
    await s.rescan();
    await s.rescan();
    expect(rec.snapshots).toHaveLength(3);
    expect(rec.errors).toHaveLength(1);
    await writeFile(bad, 'kind: [[\n');
    await s.rescan();
    expect(rec.errors).toHaveLength(2);
  });

  it('reads a single-file path', async () => {
    const file = join(dir, 'only.yaml');
    await writeFile(file, yamlPod('only'));
    await writeFile(join(dir, 'other.yaml'), yamlPod('other'));
    await source(file).start();
    expect(names(rec.last)).toEqual(['only-node-1']);
  });

  it('emits an empty snapshot for a missing path and reports it once', async () => {
    const missing = join(dir, 'nope');
    const s = source(missing);
    await s.start();
    await s.rescan();
    expect(rec.snapshots).toEqual([[], []]);
    expect(rec.errors).toEqual([{ file: missing, message: `${missing}: path does not exist, ignoring` }]);

    await mkdir(missing);
    await writeFile(join(missing, 'late.yaml'), yamlPod('late'));
    await s.rescan();
    expect(names(rec.last)).toEqual(['late-node-1']);
  });

  it('emits an empty snapshot for an empty directory', async () => {
    await source().start();
    expect(rec.snapshots).toEqual([[]]);
    expect(rec.errors).toEqual([]);
  });

  // Found by the manifest fuzz (test/chaos/manifestFuzz.ts): these entries were left out without a word.
  it('reports a symlink to nothing, once', async () => {
    const link = join(dir, 'gone.yaml');
    await symlink(join(dir, 'nothing'), link);
    const s = source();
    await s.start();
    await s.rescan();
    expect(rec.errors).toEqual([{ file: link, message: `${link}: symlink to ${join(dir, 'nothing')}, which does not exist` }]);
  });

  it('reports a file name that is not UTF-8 rather than reading a name that does not exist', async () => {
    await writeFile(Buffer.concat([Buffer.from(join(dir, 'caf')), Buffer.from([0xe9]), Buffer.from('.yaml')]), yamlPod('cafe'));
    await source().start();
    expect(rec.last).toEqual([]);
    expect(rec.errors.map((e) => e.message)).toEqual([`${join(dir, 'caf�.yaml')}: file name is not UTF-8; rename the file`]);
  });

  it('reports a FIFO as not a regular file, and the scan does not wait for a writer', async () => {
    const fifo = join(dir, 'pipe.yaml');
    execFileSync('mkfifo', [fifo]);
    await writeFile(join(dir, 'web.yaml'), yamlPod('web'));
    await source().start();
    expect(names(rec.last)).toEqual(['web-node-1']);
    expect(rec.errors).toEqual([{ file: fifo, message: `${fifo}: not a regular file` }]);
  });

  it('rejects the later of two files whose pods have one name, or one UID, naming both files', async () => {
    await writeFile(join(dir, 'a.yaml'), yamlPod('web'));
    await writeFile(join(dir, 'b.yaml'), yamlPod('web', 'nginx:1.26'));
    const withUid = (name: string) => `${yamlPod(name).replace('metadata:\n', 'metadata:\n  uid: same\n')}`;
    await writeFile(join(dir, 'c.yaml'), withUid('one'));
    await writeFile(join(dir, 'd.yaml'), withUid('two'));
    await source().start();
    expect(names(rec.last)).toEqual(['web-node-1', 'one-node-1']);
    expect(rec.errors).toEqual([
      {
        file: join(dir, 'b.yaml'),
        field: 'metadata.name',
        message: `${join(dir, 'b.yaml')}: metadata.name: Duplicate value: "web-node-1" in namespace "default": the pod of ${join(dir, 'a.yaml')} has this name`,
        // The pod left out, for the kubelet's FailedValidation event on it (configSources.ts).
        duplicate: expect.objectContaining({ metadata: expect.objectContaining({ name: 'web-node-1' }), spec: expect.objectContaining({ containers: [expect.objectContaining({ image: 'nginx:1.26' })] }) }),
      },
      { file: join(dir, 'd.yaml'), field: 'metadata.uid', message: `${join(dir, 'd.yaml')}: metadata.uid: Duplicate value: "same": the pod of ${join(dir, 'c.yaml')} has this UID` },
    ]);
  });

  it('keeps a pod that runs when a new file whose name sorts first repeats its name', async () => {
    await writeFile(join(dir, 'web.yaml'), yamlPod('web'));
    const s = source();
    await s.start();
    const running = rec.last?.[0]?.metadata.uid;
    await writeFile(join(dir, 'a-web.yaml'), yamlPod('web', 'nginx:1.26'));
    await s.rescan();
    expect(rec.last?.map((p) => p.metadata.uid)).toEqual([running]);
    expect(rec.errors.map((e) => [e.file, e.field])).toEqual([[join(dir, 'a-web.yaml'), 'metadata.name']]);
    // Once the running pod's file goes, the other file's pod takes the name.
    await rm(join(dir, 'web.yaml'));
    await s.rescan();
    expect(rec.last?.map((p) => p.spec.containers[0]?.image)).toEqual(['nginx:1.26']);
  });

  it('emits nothing after stop', async () => {
    const s = source();
    await s.start();
    s.stop();
    await s.rescan();
    expect(rec.snapshots).toHaveLength(1);
  });
});

describe('parseManifest', () => {
  it('treats a trailing document separator as one document', () => {
    const { pod, errors } = parseManifest(`---\n${yamlPod('web')}---\n`, 'm.yaml', 'n');
    expect(errors).toEqual([]);
    expect(pod?.metadata.name).toBe('web-n');
  });

  it('reports an empty file', () => {
    expect(parseManifest('# nothing\n', 'm.yaml', 'n').errors).toEqual([{ file: 'm.yaml', message: 'm.yaml: no Pod in manifest' }]);
  });

  // Found by the manifest fuzz: what these did is in each test's name.
  it('rejects bytes that are not UTF-8, at their line (they were read as U+FFFD and the pod accepted)', () => {
    const bytes = Buffer.concat([Buffer.from(`${yamlPod('web')}  annotations:\n    note: caf`), Buffer.from([0xe9]), Buffer.from('\n')]);
    expect(parseManifest(bytes, 'm.yaml', 'n').errors).toEqual([{ file: 'm.yaml', line: 10, message: `m.yaml:10: not UTF-8 text (byte ${bytes.length - 2})` }]);
    expect(parseManifest(Buffer.from(yamlPod('web')), 'm.yaml', 'n').pod?.metadata.name).toBe('web-n');
  });

  it('rejects a manifest over the size limit (5 MB of JSON held the event loop 5 s), and takes one at the limit', () => {
    const padded = (size: number) => {
      const base = JSON.stringify({ metadata: { name: 'web', annotations: { pad: '' } }, spec: { containers: [{ name: 'a', image: 'b' }] } });
      return base.replace('"pad":""', `"pad":"${'x'.repeat(size - base.length)}"`);
    };
    expect(parseManifest(padded(MAX_MANIFEST_BYTES), 'm.json', 'n').pod).toBeDefined();
    expect(parseManifest(padded(MAX_MANIFEST_BYTES + 1), 'm.json', 'n').errors).toEqual([{ file: 'm.json', message: `m.json: larger than ${MAX_MANIFEST_BYTES} bytes, the most a manifest may have` }]);
  });

  it('rejects nesting deeper than the limit with the field, or the line where the parser gave up (it said "Maximum call stack size exceeded", and whether it did depended on the caller\'s stack)', () => {
    const nested = (depth: number) => `{"metadata":{"name":"web"},"spec":{"containers":[{"name":"a","image":"b"}],"x":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    // spec is level 2, x level 3: its innermost list is at level 2 + depth.
    expect(parseManifest(nested(MAX_MANIFEST_DEPTH - 2), 'm.json', 'n').pod).toBeDefined();
    const [error] = parseManifest(nested(MAX_MANIFEST_DEPTH - 1), 'm.json', 'n').errors;
    expect(error?.field).toMatch(/^spec\.x(\[0\])+$/);
    expect(error?.message).toBe(`m.json: ${error?.field}: nested deeper than ${MAX_MANIFEST_DEPTH} levels`);
    expect(parseManifest(nested(20_000), 'm.json', 'n').errors).toEqual([{ file: 'm.json', line: 1, message: `m.json:1: nested deeper than ${MAX_MANIFEST_DEPTH} levels` }]);
  });
});
