/** What deleted pods leave behind (test/chaos/claims.ts deletedPodsLeftovers), shown to catch it. */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { deletedPodsLeftovers } from './claims.ts';

let dir = '';
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('deletedPodsLeftovers', () => {
  it("names a deleted pod's directory left under <root-dir>/pods, and nothing for one removed or a live pod's", async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-leftovers-'));
    await mkdir(path.join(dir, 'pods', 'uid-left', 'volumes', 'kubernetes.io~local-volume', 'pv-1'), { recursive: true });
    await mkdir(path.join(dir, 'pods', 'uid-live'), { recursive: true });
    const gone = new Map([
      ['uid-left', 'p1'],
      ['uid-removed', 'p2'],
    ]);
    expect(await deletedPodsLeftovers(dir, gone)).toEqual(['the directory of deleted pod p1 (uid-left) is still there']);
    await rm(path.join(dir, 'pods', 'uid-left'), { recursive: true });
    expect(await deletedPodsLeftovers(dir, gone)).toEqual([]);
  });
});
