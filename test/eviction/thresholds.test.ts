/**
 * Eviction thresholds (src/eviction/thresholds.ts; pkg/kubelet/eviction/helpers.go
 * ParseThresholdConfig, parseThresholdStatement, parseMinimumReclaims, GetThresholdQuantity): the
 * four eviction settings read into thresholds, with the kubelet's rules and messages.
 */
import { describe, expect, it } from 'vitest';
import {
  type EvictionSettings,
  type Threshold,
  formatQuantity,
  formatThresholdValue,
  isHard,
  parseThresholds,
  thresholdQuantity,
} from '../../src/eviction/thresholds.ts';

const Mi = 1024 * 1024;

function settings(extra: Partial<EvictionSettings> = {}): EvictionSettings {
  return { evictionHard: {}, evictionSoft: {}, evictionSoftGracePeriod: {}, evictionMinimumReclaim: {}, ...extra };
}

/** The kubelet's default --eviction-hard on Linux. */
const DEFAULT_HARD = { 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' };

describe('parseThresholds: hard thresholds', () => {
  it('reads the default --eviction-hard as four hard thresholds, quantities in bytes and percentages as fractions', () => {
    const thresholds = parseThresholds(settings({ evictionHard: DEFAULT_HARD }));
    expect(thresholds).toEqual([
      { signal: 'memory.available', value: { quantity: 100 * Mi }, gracePeriodMs: 0 },
      { signal: 'nodefs.available', value: { percentage: 0.1 }, gracePeriodMs: 0 },
      { signal: 'nodefs.inodesFree', value: { percentage: 0.05 }, gracePeriodMs: 0 },
      { signal: 'imagefs.available', value: { percentage: 0.15 }, gracePeriodMs: 0 },
    ]);
    expect(thresholds.every(isHard)).toBe(true);
    expect(thresholds[0]!.value).toEqual({ quantity: 104857600 });
  });

  it.each([
    ['1Gi', { quantity: 1024 * Mi }],
    ['500M', { quantity: 500_000_000 }],
    ['2000', { quantity: 2000 }],
    ['12.5%', { percentage: 0.125 }],
    [' 10% ', { percentage: 0.1 }],
  ])('reads memory.available<%j as %j', (text, value) => {
    expect(parseThresholds(settings({ evictionHard: { 'memory.available': text } }))).toEqual([{ signal: 'memory.available', value, gracePeriodMs: 0 }]);
  });

  it.each(['0%', '100%'])('ignores a threshold of %s, as the kubelet does', (text) => {
    expect(parseThresholds(settings({ evictionHard: { 'nodefs.available': text, 'memory.available': '100Mi' } }))).toEqual([
      { signal: 'memory.available', value: { quantity: 100 * Mi }, gracePeriodMs: 0 },
    ]);
    expect(parseThresholds(settings({ evictionSoft: { 'nodefs.available': text } }))).toEqual([]);
  });

  it.each([
    ['-5%', /eviction percentage threshold memory\.available must be >= 0%: -5%/],
    ['150%', /eviction percentage threshold memory\.available must be <= 100%: 150%/],
    ['0', /eviction threshold memory\.available must be positive: 0/],
    ['-1Mi', /eviction threshold memory\.available must be positive/],
    ['abc', /eviction threshold memory\.available: quantities must match/],
    ['x%', /eviction threshold memory\.available: "x%" is not a percentage/],
  ])('rejects memory.available<%j', (text, message) => {
    expect(() => parseThresholds(settings({ evictionHard: { 'memory.available': text } }))).toThrow(message);
  });

  it.each([
    ['foo.available', /unsupported eviction signal foo\.available/],
    ['containerfs.available', /eviction signal containerfs\.available follows nodefs .*set nodefs\.available instead/],
    ['containerfs.inodesFree', /set nodefs\.inodesFree instead/],
    ['allocatableMemory.available', /eviction signal allocatableMemory\.available needs node allocatable enforced/],
  ])('rejects the signal %s', (signal, message) => {
    expect(() => parseThresholds(settings({ evictionHard: { [signal]: '10%' } }))).toThrow(message);
    expect(() => parseThresholds(settings({ evictionSoft: { [signal]: '10%' }, evictionSoftGracePeriod: { [signal]: '1m' } }))).toThrow(message);
    expect(() => parseThresholds(settings({ evictionMinimumReclaim: { [signal]: '10%' } }))).toThrow(message);
  });

  it.each(['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'])('accepts the signal %s', (signal) => {
    expect(parseThresholds(settings({ evictionHard: { [signal]: '5%' } }))).toEqual([{ signal, value: { percentage: 0.05 }, gracePeriodMs: 0 }]);
  });
});

describe('parseThresholds: soft thresholds', () => {
  it.each([
    ['1m30s', 90_000],
    ['90s', 90_000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['500ms', 500],
  ])('takes the grace period %s from --eviction-soft-grace-period as %d ms', (grace, ms) => {
    const [threshold] = parseThresholds(settings({ evictionSoft: { 'memory.available': '1.5Gi' }, evictionSoftGracePeriod: { 'memory.available': grace } }));
    expect(threshold).toEqual({ signal: 'memory.available', value: { quantity: 1536 * Mi }, gracePeriodMs: ms });
    expect(isHard(threshold!)).toBe(false);
  });

  it('refuses a soft threshold without a grace period for its signal', () => {
    expect(() => parseThresholds(settings({ evictionSoft: { 'memory.available': '1Gi' } }))).toThrow('grace period must be specified for the soft eviction threshold memory.available');
    // A grace period of another signal does not count.
    expect(() => parseThresholds(settings({ evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'nodefs.available': '1m' } }))).toThrow(
      'grace period must be specified for the soft eviction threshold memory.available',
    );
  });

  it("refuses a negative grace period with the kubelet's message (parseGracePeriods)", () => {
    expect(() => parseThresholds(settings({ evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '-1m' } }))).toThrow(
      'invalid eviction grace period specified: -1m, must be a positive value',
    );
  });

  it('lists hard thresholds before soft ones, and keeps both for one signal', () => {
    const thresholds = parseThresholds(
      settings({
        evictionSoft: { 'memory.available': '1Gi' },
        evictionSoftGracePeriod: { 'memory.available': '1m' },
        evictionHard: { 'memory.available': '100Mi' },
      }),
    );
    expect(thresholds.map((t) => [t.signal, t.gracePeriodMs])).toEqual([
      ['memory.available', 0],
      ['memory.available', 60_000],
    ]);
    expect(thresholds.map(isHard)).toEqual([true, false]);
  });
});

describe('parseThresholds: minimum reclaim', () => {
  it('attaches to every threshold of its signal, and to no other', () => {
    const thresholds = parseThresholds(
      settings({
        evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' },
        evictionSoft: { 'memory.available': '1Gi' },
        evictionSoftGracePeriod: { 'memory.available': '1m' },
        evictionMinimumReclaim: { 'memory.available': '0.5Gi', 'pid.available': '100' },
      }),
    );
    const bySignal = (t: Threshold) => [t.signal, t.gracePeriodMs, t.minReclaim];
    expect(thresholds.map(bySignal)).toEqual([
      ['memory.available', 0, { quantity: 512 * Mi }],
      ['nodefs.available', 0, undefined],
      ['memory.available', 60_000, { quantity: 512 * Mi }],
    ]);
  });

  it.each([
    ['5%', { percentage: 0.05 }],
    ['0', { quantity: 0 }],
    ['200Mi', { quantity: 200 * Mi }],
  ])('reads %j', (text, value) => {
    const [threshold] = parseThresholds(settings({ evictionHard: { 'nodefs.available': '10%' }, evictionMinimumReclaim: { 'nodefs.available': text } }));
    expect(threshold!.minReclaim).toEqual(value);
  });

  it.each([
    ['-1Mi', /negative eviction minimum reclaim specified for nodefs\.available/],
    ['0%', /eviction percentage minimum reclaim nodefs\.available must be positive: 0%/],
    ['-5%', /eviction percentage minimum reclaim nodefs\.available must be positive: -5%/],
    ['lots', /eviction minimum reclaim nodefs\.available: quantities must match/],
  ])('rejects %j', (text, message) => {
    expect(() => parseThresholds(settings({ evictionHard: { 'nodefs.available': '10%' }, evictionMinimumReclaim: { 'nodefs.available': text } }))).toThrow(message);
  });
});

describe('thresholdQuantity', () => {
  it.each([
    ['10% of 1000', { percentage: 0.1 }, 1000, 100],
    ['5% of 999 (rounded down)', { percentage: 0.05 }, 999, 49],
    ['15% of 0', { percentage: 0.15 }, 0, 0],
    ['a quantity, whatever the capacity', { quantity: 104857600 }, 1, 104857600],
  ])('%s', (_case, value, capacity, expected) => {
    expect(thresholdQuantity(value, capacity)).toBe(expected);
  });
});

describe('formatQuantity and formatThresholdValue', () => {
  it.each([
    [104857600, '100Mi'],
    [1610612736, '1536Mi'],
    [2 * 1024 ** 3, '2Gi'],
    [1536 * 1024, '1536Ki'],
    [1024, '1Ki'],
    [1023, '1023'],
    [2000, '2000'],
    [1001, '1001'],
    [999, '999'],
    [123, '123'],
    [0, '0'],
  ])('formats %d as %s', (value, text) => {
    expect(formatQuantity(value)).toBe(text);
  });

  it('formats 1000 as 1k, as resource.Quantity prints a BinarySI value under 1024 (CanonicalizeBytes switches it to DecimalSI)', () => {
    // apimachinery quantity.go CanonicalizeBytes: a BinarySI value in (-1024, 1024) is written as
    // DecimalSI, whose canonical form of 1000 is 1k (resource.NewQuantity(1000, BinarySI).String() == "1k").
    expect(formatQuantity(1000)).toBe('1k');
  });

  it.each([
    [{ percentage: 0.1 }, '10%'],
    [{ percentage: 0.05 }, '5%'],
    [{ percentage: 0.125 }, '12.5%'],
    [{ quantity: 104857600 }, '100Mi'],
    [{ quantity: 2000 }, '2000'],
  ])('writes %j as %s', (value, text) => {
    expect(formatThresholdValue(value)).toBe(text);
  });
});
