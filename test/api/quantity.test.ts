import { describe, expect, it } from 'vitest';
import { formatCpu, formatKi, parseQuantity } from '../../src/api/quantity.ts';

describe('quantities', () => {
  it.each([
    ['100m', 0.1],
    ['2', 2],
    ['1.5', 1.5],
    ['128Mi', 128 * 2 ** 20],
    ['1Gi', 2 ** 30],
    ['1G', 1e9],
    ['1k', 1000],
    ['1e3', 1000],
    ['500u', 0.0005],
  ])('parses %s', (text, value) => {
    expect(parseQuantity(text)).toBeCloseTo(value, 12);
  });

  it.each(['', 'lots', '1Mb', '1.2.3', 'm'])('rejects %j with the API server\'s message', (text) => {
    expect(parseQuantity(text)).toBeInstanceOf(Error);
    expect(String(parseQuantity(text))).toMatch(/quantities must match the regular expression/);
  });

  it.each([
    [2, '2'],
    [1.5, '1500m'],
    [0.1, '100m'],
    [-1, '0'],
  ])('writes %s cores as %s', (cores, text) => expect(formatCpu(cores)).toBe(text));

  it('writes memory in Ki, rounded down and never negative', () => {
    expect(formatKi(2 ** 30 + 1000)).toBe('1048576Ki');
    expect(formatKi(-5)).toBe('0Ki');
  });
});
