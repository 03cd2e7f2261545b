/**
 * The plugin manager's pure decisions: what its reconciler asks for from the desired and actual
 * states (reconciler.go reconcile), and the per-socket back-off (goroutinemap exponentialbackoff).
 */
import { describe, expect, it } from 'vitest';
import type { PluginRecord } from '../../src/events.ts';
import { afterFailure, INITIAL_DURATION_BEFORE_RETRY_MS, MAX_DURATION_BEFORE_RETRY_MS, safeToRetry } from '../../src/pluginmanager/backoff.ts';
import { reconcileOperations } from '../../src/pluginmanager/reconcile.ts';

const plugin = (path: string, uuid: string): PluginRecord => ({ path, uuid, type: 'CSIPlugin', name: path.replace(/.*\//, ''), endpoint: `${path}.csi` });

describe('reconcileOperations', () => {
  it.each([
    ['nothing seen, nothing registered', {}, {}, [], []],
    ['a new socket is registered', { '/r/a.sock': '1' }, {}, [], [{ path: '/r/a.sock', uuid: '1' }]],
    ['a registered socket of the same generation is left alone', { '/r/a.sock': '1' }, { '/r/a.sock': plugin('/r/a.sock', '1') }, [], []],
    ['a removed socket is unregistered', {}, { '/r/a.sock': plugin('/r/a.sock', '1') }, ['/r/a.sock'], []],
    ['a recreated socket is unregistered first, registered in a later round', { '/r/a.sock': '2' }, { '/r/a.sock': plugin('/r/a.sock', '1') }, ['/r/a.sock'], []],
    [
      'each socket on its own',
      { '/r/a.sock': '1', '/r/b.sock': '3', '/r/c.sock': '4' },
      { '/r/a.sock': plugin('/r/a.sock', '1'), '/r/d.sock': plugin('/r/d.sock', '2') },
      ['/r/d.sock'],
      [
        { path: '/r/b.sock', uuid: '3' },
        { path: '/r/c.sock', uuid: '4' },
      ],
    ],
  ])('%s', (_name, desired, actual, unregister, register) => {
    const operations = reconcileOperations(desired, actual);
    expect(operations.unregister.map((p) => p.path)).toEqual(unregister);
    expect(operations.register).toEqual(register);
  });
});

describe('the per-socket back-off', () => {
  it('starts at 500 ms and doubles up to 2 m 2 s', () => {
    let backoff = afterFailure(undefined, 0);
    const durations = [backoff.durationBeforeRetryMs];
    for (let i = 0; i < 10; i++) {
      backoff = afterFailure(backoff, i);
      durations.push(backoff.durationBeforeRetryMs);
    }
    expect(durations).toEqual([500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 122_000, 122_000, 122_000]);
    expect([INITIAL_DURATION_BEFORE_RETRY_MS, MAX_DURATION_BEFORE_RETRY_MS]).toEqual([500, 122_000]);
  });

  it.each([
    ['no failure yet', undefined, 0, true],
    ['within the wait', { lastErrorAt: 10_000, durationBeforeRetryMs: 500 }, 10_499, false],
    ['when the wait is over', { lastErrorAt: 10_000, durationBeforeRetryMs: 500 }, 10_500, true],
  ])('safeToRetry: %s', (_name, backoff, now, safe) => {
    expect(safeToRetry(backoff, now)).toBe(safe);
  });
});
