/** jsonEqual: structural equality of JSON values as the API server sees them. */
import { describe, expect, it } from 'vitest';
import { jsonEqual } from '../../src/api/json.ts';

describe('jsonEqual', () => {
  it.each<[string, unknown, unknown, boolean]>([
    ['the same scalars', 'a', 'a', true],
    ['different scalars', 1, 2, false],
    ['a number and its string', 1, '1', false],
    ['key order does not count', { a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 }, true],
    ['a null member reads as absent', { a: 1, lastProbeTime: null }, { a: 1 }, true],
    ['an undefined member reads as absent, on either side', { a: 1 }, { a: 1, b: undefined }, true],
    ['a member one side lacks', { a: 1 }, { a: 1, b: 0 }, false],
    ['a member the other side lacks', { a: 1, b: false }, { a: 1 }, false],
    ['as many members, different names', { a: 1, b: 2 }, { a: 1, c: 2 }, false],
    ['a nested difference', { a: { b: { c: 'x' } } }, { a: { b: { c: 'y' } } }, false],
    ['arrays in order', [1, { a: 2 }], [1, { a: 2 }], true],
    ['arrays in another order', [1, 2], [2, 1], false],
    ['arrays of other lengths', [1], [1, 1], false],
    ['an array is not an object', [], {}, false],
    ['an object is not null', {}, null, false],
    ['empty objects', {}, { gone: null }, true],
  ])('%s', (_name, a, b, equal) => {
    expect(jsonEqual(a, b)).toBe(equal);
    expect(jsonEqual(b, a)).toBe(equal);
  });
});
