/**
 * The node's CSIDriver objects (src/client/csiDriverObjects.ts): a live GET until the first list,
 * then the watched store (csi_plugin.go getCSIDriver reads the informer's lister).
 */
import { describe, expect, it } from 'vitest';
import type { CSIDriver } from '../../src/api/storage.ts';
import { ApiError } from '../../src/client/api.ts';
import { csiDriverObjects } from '../../src/client/csiDriverObjects.ts';
import { ManualClock } from '../support/manualClock.ts';
import { MemoryApi } from '../support/memoryApi.ts';

const driver = (name: string, attachRequired: boolean): CSIDriver & { metadata: { uid: string } } => ({ metadata: { name, uid: `uid-${name}` }, spec: { attachRequired } });
const quiet = () => {};
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('CSIDriver objects', () => {
  it('answer with a live GET before the first list (a 404 is no CSIDriver), then from the store without calling the API', async () => {
    const api = new MemoryApi();
    api.csiDrivers.set('a.test', driver('a.test', false));
    const objects = csiDriverObjects(api, new ManualClock(), quiet);
    expect(await objects.get('a.test')).toMatchObject({ spec: { attachRequired: false } });
    expect(await objects.get('none.test')).toBeNull();
    expect(api.count('getCSIDriver')).toBe(2);
    expect(objects.synced()).toBe(false);

    objects.start();
    await settled();
    expect(objects.synced()).toBe(true);
    expect(await objects.get('a.test')).toMatchObject({ spec: { attachRequired: false } });
    expect(await objects.get('none.test')).toBeNull();
    expect(api.count('getCSIDriver')).toBe(2);
    objects.stop();
  });

  it('follow the watch: a driver added, changed and deleted', async () => {
    const api = new MemoryApi();
    const clock = new ManualClock();
    const objects = csiDriverObjects(api, clock, quiet);
    objects.start();
    await settled();
    const [watch] = [...api.csiDriverWatchers];
    watch!.onEvent('ADDED', driver('b.test', true));
    clock.advance(10);
    expect(await objects.get('b.test')).toMatchObject({ spec: { attachRequired: true } });
    watch!.onEvent('MODIFIED', driver('b.test', false));
    clock.advance(10);
    expect(await objects.get('b.test')).toMatchObject({ spec: { attachRequired: false } });
    watch!.onEvent('DELETED', driver('b.test', false));
    clock.advance(10);
    expect(await objects.get('b.test')).toBeNull();
    expect(api.count('getCSIDriver')).toBe(0);
    objects.stop();
    expect(api.csiDriverWatchers.size).toBe(0);
  });

  it('fall back to the live GET while the list is refused, and pass on a failed GET', async () => {
    const api = new MemoryApi();
    api.csiDrivers.set('c.test', driver('c.test', false));
    api.failNext('listCSIDrivers', new ApiError(403, 'Forbidden', 'csidrivers.storage.k8s.io is forbidden', 'LIST csidrivers'));
    const objects = csiDriverObjects(api, new ManualClock(), quiet);
    objects.start();
    await settled();
    expect(objects.synced()).toBe(false);
    expect(await objects.get('c.test')).toMatchObject({ metadata: { name: 'c.test' } });
    api.failNext('getCSIDriver', new ApiError(0, '', 'connection refused', 'GET csidrivers c.test'));
    await expect(objects.get('c.test')).rejects.toThrow(/connection refused/);
    objects.stop();
  });
});
