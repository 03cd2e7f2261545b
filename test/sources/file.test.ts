import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { createFileSource, parseManifest, type FileSource, type ManifestError } from '../../src/sources/file.ts';

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
});
