/**
 * The layer lint (scripts/lint-layers.mjs) on small trees made for the purpose: it must report an
 * upward import, a cycle, and I/O in a machine or a decision, and pass the real src/.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const script = path.resolve(import.meta.dirname, '../../scripts/lint-layers.mjs');
const dirs: string[] = [];

async function tree(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-lint-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), text);
  }
  return dir;
}

function lint(dir: string): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, [script, '--src', dir], { encoding: 'utf8' });
  return { status: run.status, out: run.stdout + run.stderr };
}

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('lint-layers', () => {
  it('passes a tree whose imports only point down', async () => {
    const dir = await tree({
      'api/types.ts': 'export type Pod = { name: string };\n',
      'pod/pod.ts': "import type { Pod } from '../api/types.ts';\nexport const pods: Pod[] = [];\n",
    });
    expect(lint(dir)).toMatchObject({ status: 0 });
  });

  it('fails on an upward import and names it', async () => {
    const dir = await tree({
      'kuberuntime/plan.ts': "import { pods } from '../pod/pod.ts';\nexport const n = pods.length;\n",
      'pod/pod.ts': 'export const pods: string[] = [];\n',
    });
    const { status, out } = lint(dir);
    expect(status).toBe(1);
    expect(out).toContain('upward imports: 1');
    expect(out).toContain('kuberuntime/plan.ts → pod/pod.ts');
  });

  it('fails on an import between units of the same layer', async () => {
    const dir = await tree({
      'pod/pod.ts': "import { relist } from '../pleg/pleg.ts';\nexport const p = relist;\n",
      'pleg/pleg.ts': 'export const relist = 1;\n',
    });
    expect(lint(dir).out).toContain('pod/pod.ts → pleg/pleg.ts');
  });

  it('fails on a cycle between files of one unit', async () => {
    const dir = await tree({
      'pod/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
      'pod/b.ts': "import type { a } from './a.ts';\nexport const b = 1 as unknown as typeof a;\n",
    });
    const { status, out } = lint(dir);
    expect(status).toBe(1);
    expect(out).toContain('cycles: 1');
    expect(out).toContain('pod/a.ts ↔ pod/b.ts');
  });

  it('fails on I/O in a machine or a decision, and on xstate in a decision', async () => {
    const dir = await tree({
      'pod/pod.ts': "import { readFile } from 'node:fs/promises';\nimport { setup } from 'xstate';\nexport const m = setup({});\nexport const r = readFile;\n",
      'kuberuntime/computePodActions.ts': "import { setup } from 'xstate';\nexport const s = setup;\n",
    });
    const { status, out } = lint(dir);
    expect(status).toBe(1);
    expect(out).toContain('pod/pod.ts imports node:fs/promises');
    expect(out).toContain('kuberuntime/computePodActions.ts (a decision) imports xstate');
  });

  it('fails on a unit that is in no layer', async () => {
    const dir = await tree({ 'gadgets/x.ts': 'export const x = 1;\n' });
    expect(lint(dir).out).toContain('unit "gadgets" is in no layer');
  });

  it('ranks a folder with a loop.ts as a node loop: above the pods, below the kubelet, never importing another loop', async () => {
    const dir = await tree({
      'pod/pod.ts': 'export const pods: string[] = [];\n',
      'eviction/loop.ts': "import { pods } from '../pod/pod.ts';\nimport { rank } from './rank.ts';\nexport const loop = { pods, rank };\n",
      'eviction/rank.ts': "import { statfs } from 'node:fs/promises';\nexport const rank = statfs;\n",
      'nodelease/loop.ts': "import { loop } from '../eviction/loop.ts';\nexport const lease = loop;\n",
      'kubelet/nodeLoops.ts': "import { loop } from '../eviction/loop.ts';\nexport const loops = [loop];\n",
    });
    const { status, out } = lint(dir);
    expect(status).toBe(1);
    expect(out).toContain('upward imports: 1');
    expect(out).toContain('nodelease/loop.ts → eviction/loop.ts');
    // A loop's files other than its machine, effects.ts and loop.ts are its decisions.
    expect(out).toContain('eviction/rank.ts imports node:fs/promises');
    expect(out).not.toContain('in no layer');
  });

  it("fails on a part that reads another actor's state, and passes an actor reading its own and the visualizer reading them all", async () => {
    const reader = await tree({
      'kubelet/compose.ts': "export const health = (loop: { getSnapshot(): unknown }) => loop.getSnapshot();\n",
      'kubelet/lookup.ts': "export const pod = (system: { get(id: string): unknown }) => system.get('pod/1');\n",
    });
    const result = lint(reader);
    expect(result.status).toBe(1);
    expect(result.out).toContain("reads of another actor's state: 2");
    expect(result.out).toContain('kubelet/compose.ts reads an actor\'s state: loop.getSnapshot()');
    expect(result.out).toContain("kubelet/lookup.ts reads an actor's state: system.get(");
    const allowed = await tree({
      'pod/pod.ts': 'export const alive = (self: { getSnapshot(): { status: string } }) => self.getSnapshot().status;\n',
      'visualizer/stream.ts': "export const all = (system: { getAll(): object }) => system.getAll();\n",
    });
    expect(lint(allowed)).toMatchObject({ status: 0 });
  });

  it('passes the real src/', () => {
    const out = execFileSync(process.execPath, [script], { encoding: 'utf8' });
    expect(out).toContain('upward imports: 0');
    expect(out).toContain("reads of another actor's state: 0");
  });
});
