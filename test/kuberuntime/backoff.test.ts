/** Per-key exponential backoff (k8s.io/client-go/util/flowcontrol/backoff.go, as the kubelet uses it), as plain data. */
import { describe, expect, it } from 'vitest';
import {
  type BackoffPolicy,
  type BackoffTable,
  backoffRemainingMs,
  crashLoopPolicy,
  nextBackoff,
} from '../../src/kuberuntime/backoff.ts';

const P: BackoffPolicy = crashLoopPolicy; // 10 s initial, 300 s cap
const KEY = 'web_default_uid-web_foo1_abc123';
const T = 1_000_000;

/** Records `n` consecutive failures one second apart, starting at `start`. */
function failures(n: number, start = T): { table: BackoffTable; at: number } {
  let table: BackoffTable = {};
  let at = start;
  for (let i = 0; i < n; i++) {
    table = nextBackoff(table, KEY, at, at, P);
    at += 1_000;
  }
  return { table, at: at - 1_000 };
}

describe('nextBackoff', () => {
  it('starts at the initial delay', () => {
    const table = nextBackoff({}, KEY, T, T, P);
    expect(table[KEY]).toEqual({ delayMs: 10_000, lastUpdateMs: T });
  });

  it('doubles on every further failure: 10, 20, 40, 80, 160 s', () => {
    const delays: number[] = [];
    let table: BackoffTable = {};
    for (let i = 0; i < 5; i++) {
      table = nextBackoff(table, KEY, T + i, T + i, P);
      delays.push(table[KEY]!.delayMs);
    }
    expect(delays).toEqual([10_000, 20_000, 40_000, 80_000, 160_000]);
  });

  it('is capped at the maximum', () => {
    expect(failures(6).table[KEY]!.delayMs).toBe(300_000);
    expect(failures(12).table[KEY]!.delayMs).toBe(300_000);
  });

  it('records lastUpdate as now, not as the event time', () => {
    const table = nextBackoff({}, KEY, T, T + 7_000, P);
    expect(table[KEY]!.lastUpdateMs).toBe(T + 7_000);
  });

  it('starts over after more than 2×max without an update', () => {
    const { table, at } = failures(5);
    const later = at + 2 * P.maxMs + 1;
    expect(nextBackoff(table, KEY, later, later, P)[KEY]!.delayMs).toBe(10_000);
    const justInside = at + 2 * P.maxMs;
    expect(nextBackoff(table, KEY, justInside, justInside, P)[KEY]!.delayMs).toBe(300_000);
  });

  it('keys are independent and the input table is not modified', () => {
    const before = nextBackoff({}, 'other', T, T, P);
    const after = nextBackoff(before, KEY, T, T, P);
    expect(before[KEY]).toBeUndefined();
    expect(after.other).toEqual(before.other);
    expect(after[KEY]!.delayMs).toBe(10_000);
  });
});

describe('backoffRemainingMs', () => {
  it('is 0 for an unknown key: the first restart is immediate', () => {
    expect(backoffRemainingMs({}, KEY, T, T, P)).toBe(0);
  });

  it('counts the delay from the failure (eventMs), not from now', () => {
    const table = nextBackoff({}, KEY, T, T, P); // 10 s
    expect(backoffRemainingMs(table, KEY, T, T + 4_000, P)).toBe(6_000);
    expect(backoffRemainingMs(table, KEY, T + 2_000, T + 4_000, P)).toBe(8_000);
  });

  it('is 0 once the delay has passed', () => {
    const table = nextBackoff({}, KEY, T, T, P);
    expect(backoffRemainingMs(table, KEY, T, T + 10_000, P)).toBe(0);
    expect(backoffRemainingMs(table, KEY, T, T + 60_000, P)).toBe(0);
  });

  it('uses the current (doubled) delay', () => {
    const { table, at } = failures(3); // 40 s
    expect(backoffRemainingMs(table, KEY, at, at + 30_000, P)).toBe(10_000);
  });

  it('is 0 when the failure came more than 2×max after the last update (container ran long enough)', () => {
    const { table, at } = failures(6);
    const event = at + 2 * P.maxMs + 1;
    expect(backoffRemainingMs(table, KEY, event, event, P)).toBe(0);
    const recent = at + 2 * P.maxMs;
    expect(backoffRemainingMs(table, KEY, recent, recent, P)).toBe(300_000);
  });
});

describe('another policy', () => {
  it('follows the same rules (image pulls share them)', () => {
    const quick: BackoffPolicy = { initialMs: 1_000, maxMs: 4_000 };
    let table: BackoffTable = {};
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      table = nextBackoff(table, KEY, T, T, quick);
      delays.push(table[KEY]!.delayMs);
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 4_000]);
    expect(backoffRemainingMs(table, KEY, T + 8_001, T + 8_001, quick)).toBe(0);
  });
});
