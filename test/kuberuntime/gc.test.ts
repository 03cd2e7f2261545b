import { describe, expect, it } from 'vitest';
import { collectContainerGarbage } from '../../src/kuberuntime/gc.ts';
import { Label } from '../../src/kuberuntime/labels.ts';
import { defaultContainerGcPolicy } from '../../src/kuberuntime/containerGC.ts';
import { ManualClock } from '../support/manualClock.ts';
import { TestRuntime } from '../support/testRuntime.ts';
import type { KeyValueMap } from '../../src/runtime/types.ts';
import { containerConfig, podSandboxConfig } from '../runtime/support.ts';
import { IMAGE } from '../support/pods.ts';

function rig() {
  const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
  const now = () => clock.now();
  const runtime = new TestRuntime({ clock });
  runtime.addImage(IMAGE);
  const logs: { message: string; fields?: Record<string, unknown> }[] = [];
  /** A sandbox of pod `uid` with `attempts` exited instances of container `name` (oldest first). */
  const deadContainers = async (uid: string, name: string, attempts: number, labels: KeyValueMap = { [Label.podUid]: uid }) => {
    const config = podSandboxConfig(uid, { labels });
    const sandbox = await runtime.runPodSandbox(config);
    const ids: string[] = [];
    for (let attempt = 0; attempt < attempts; attempt++) {
      clock.advance(1_000);
      const id = await runtime.createContainer(sandbox, containerConfig(name, { metadata: { name, attempt }, image: { image: IMAGE }, labels }), config);
      await runtime.startContainer(id);
      runtime.exitContainer(id, 0);
      ids.push(id);
    }
    return { sandbox, ids };
  };
  const collect = (isPodDeleted: (uid: string) => boolean = () => false) =>
    collectContainerGarbage({ runtime, now, log: (_level, message, fields) => logs.push({ message, ...(fields ? { fields } : {}) }) }, defaultContainerGcPolicy, isPodDeleted, true);
  return { runtime, deadContainers, collect, logs };
}

describe('collectContainerGarbage', () => {
  it("removes what the policy lets go and leaves what is not the agent's", async () => {
    const r = rig();
    const web = await r.deadContainers('p1', 'web', 3);
    const foreign = await r.deadContainers('x', 'tool', 2, {}); // no pod UID label: someone else's
    const result = await r.collect();
    expect(result).toEqual({ containersRemoved: 2, sandboxesRemoved: 0, failures: 0 });
    const left = (await r.runtime.listContainers()).map((c) => c.id).sort();
    expect(left).toEqual([web.ids[2]!, ...foreign.ids].sort());
    expect(r.logs).toContainEqual({ message: 'Container garbage collection', fields: { containersRemoved: 2, sandboxesRemoved: 0, failures: 0 } });
  });

  it('goes on after a failed removal, logs it naming the container, and counts what was already gone as removed', async () => {
    const r = rig();
    const a = await r.deadContainers('p1', 'a', 2);
    const b = await r.deadContainers('p2', 'b', 2);
    r.runtime.failNext('removeContainer', 'INTERNAL', 'device busy');
    r.runtime.failNext('removeContainer', 'NOT_FOUND', 'already gone');
    const result = await r.collect();
    expect(result).toEqual({ containersRemoved: 1, sandboxesRemoved: 0, failures: 1 });
    const failed = r.logs.find((l) => l.message === 'Failed to remove dead container');
    expect(failed?.fields?.id).toBe(a.ids[0]);
    expect(String(failed?.fields?.err)).toContain('device busy');
    // The failed one is tried again next time (and so is b's old instance: the scripted NOT_FOUND left it in place).
    expect((await r.collect()).containersRemoved).toBe(2);
    expect((await r.runtime.listContainers()).map((c) => c.id).sort()).toEqual([a.ids[1]!, b.ids[1]!].sort());
  });

  it("removes a deleted pod's dead containers and its stopped sandbox", async () => {
    const r = rig();
    const gone = await r.deadContainers('gone', 'app', 2);
    await r.runtime.stopPodSandbox(gone.sandbox);
    const result = await r.collect((uid) => uid === 'gone');
    expect(result).toEqual({ containersRemoved: 2, sandboxesRemoved: 1, failures: 0 });
    expect(await r.runtime.listPodSandbox()).toEqual([]);
  });
});
