/**
 * Properties of `parseManifest`, the function that turns a manifest file's bytes into a pod or a
 * rejection, over generated manifests (test/chaos/manifestCases.ts): it never throws; it gives a
 * pod or errors, never both; every error starts with the file and, when it has a field, names it;
 * an accepted pod is valid and plain JSON; and each case's expectation holds (a wrong type or an
 * invalid value is rejected naming that field, nesting and size over the limits are rejected, a
 * valid pod is accepted). fast-check prints the seed and the shrunk case of a failure.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_MANIFEST_BYTES, parseManifest } from '../../src/sources/file.ts';
import { NODE } from '../chaos/chaosNode.ts';
import { type ManifestCase, deep, huge, judge, manifestCase } from '../chaos/manifestCases.ts';

const FILE = '/etc/kubernetes/manifests/fuzz.yaml';
const NAME = 'fuzz';

function holds(c: ManifestCase): void {
  const problems = judge(c, parseManifest(c.content, FILE, NODE), FILE, NAME);
  expect(problems, `${c.kind}: ${c.detail}`).toEqual([]);
}

describe('parseManifest over generated manifests', () => {
  it('keeps its promises for valid pods mutated field by field, edited text, broken YAML and JSON, and bytes', () => {
    fc.assert(fc.property(manifestCase(NAME), holds), { numRuns: 2_000 });
  }, 60_000);

  it('rejects nesting deeper than the limit, naming the field or the line, and accepts the rest', () => {
    fc.assert(fc.property(deep(NAME), holds), { numRuns: 100 });
  }, 60_000);

  it('rejects a manifest over the size limit, and accepts one just under it', () => {
    fc.assert(fc.property(huge(NAME), holds), { numRuns: 6 });
    holds(fc.sample(huge(NAME, fc.constant(5 * MAX_MANIFEST_BYTES)), { numRuns: 1, seed: 1 })[0]!);
  }, 60_000);
});
