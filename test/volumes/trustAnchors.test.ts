/** The trust anchors of a clusterTrustBundle source: which bundles, deduplicated and ordered, and the kubelet's errors. */
import { describe, expect, it } from 'vitest';
import type { ClusterTrustBundle } from '../../src/api/cluster.ts';
import { normalizeTrustAnchors, selectorMatches, trustAnchorsFor, type ClusterTrustBundleProjection, type LabelSelector } from '../../src/volumes/trustAnchors.ts';

/** A PEM block of `type` around `der` (the manager never parses the certificate inside). */
const pem = (der: string, type = 'CERTIFICATE') => `-----BEGIN ${type}-----\n${Buffer.from(der).toString('base64')}\n-----END ${type}-----\n`;
const bundle = (name: string, signerName: string | undefined, ders: string[], labels?: Record<string, string>): ClusterTrustBundle => ({
  metadata: { name, ...(labels ? { labels } : {}) },
  spec: { ...(signerName ? { signerName } : {}), trustBundle: ders.map((der) => pem(der)).join('') },
});
/** The DER contents of a normalized file, sorted (the order is tested on its own). */
const contents = (file: Buffer | Error) => {
  if (file instanceof Error) return file.message;
  return [...file.toString().matchAll(/-----BEGIN CERTIFICATE-----\n([\s\S]*?)\n-----END CERTIFICATE-----\n/g)].map(([, body]) => Buffer.from(body!, 'base64').toString()).sort();
};

const BUNDLES = [
  bundle('plain', undefined, ['p1', 'p2']),
  bundle('ex-a', 'example.com/signer', ['a1', 'shared'], { env: 'prod', tier: 'web' }),
  bundle('ex-b', 'example.com/signer', ['b1', 'shared'], { env: 'dev' }),
  bundle('other', 'other.io/signer', ['o1'], { env: 'prod' }),
];

describe('trustAnchorsFor', () => {
  const cases: [string, Omit<ClusterTrustBundleProjection, 'path'>, string[] | string][] = [
    ['a bundle by name', { name: 'plain' }, ['p1', 'p2']],
    ['a missing bundle by name', { name: 'gone' }, 'while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "gone" not found'],
    ['a missing optional bundle by name: an empty file', { name: 'gone', optional: true }, []],
    ['a signer with no selector: nothing matches', { signerName: 'example.com/signer' }, 'combination of signerName and labelSelector matched zero ClusterTrustBundles'],
    ['a signer with no selector, optional: an empty file', { signerName: 'example.com/signer', optional: true }, []],
    ['a signer with an empty selector: all its bundles, each anchor once', { signerName: 'example.com/signer', labelSelector: {} }, ['a1', 'b1', 'shared']],
    ['a signer and matchLabels', { signerName: 'example.com/signer', labelSelector: { matchLabels: { env: 'prod' } } }, ['a1', 'shared']],
    ['a signer and an expression', { signerName: 'example.com/signer', labelSelector: { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] } }, ['b1', 'shared']],
    ['a selector matching only another signer', { signerName: 'other.io/signer', labelSelector: { matchLabels: { env: 'dev' } } }, 'combination of signerName and labelSelector matched zero ClusterTrustBundles'],
    ['a bad operator, even with nothing to match', { signerName: 'none.io/x', labelSelector: { matchExpressions: [{ key: 'a', operator: 'Has' }] } }, 'while parsing label selector: "Has" is not a valid label selector operator'],
    ['neither name nor signer', {}, 'ClusterTrustBundle projection requires either name or signerName to be set'],
  ];
  it.each(cases)('%s', (_, source, expected) => {
    expect(contents(trustAnchorsFor({ ...source, path: 'ca.pem' }, BUNDLES))).toEqual(expected);
  });
});

describe('selectorMatches', () => {
  const labels = { env: 'prod', tier: 'web' };
  const cases: [string, LabelSelector | undefined, boolean][] = [
    ['no selector', undefined, false],
    ['an empty selector', {}, true],
    ['matchLabels met', { matchLabels: { env: 'prod' } }, true],
    ['matchLabels unmet', { matchLabels: { env: 'dev' } }, false],
    ['In', { matchExpressions: [{ key: 'env', operator: 'In', values: ['dev', 'prod'] }] }, true],
    ['In without the key', { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }, false],
    ['NotIn', { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, false],
    ['NotIn without the key', { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }, true],
    ['Exists', { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, true],
    ['DoesNotExist', { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, false],
    ['all requirements must hold', { matchLabels: { env: 'prod' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['db'] }] }, false],
  ];
  it.each(cases)('%s', (_, selector, expected) => {
    expect(selectorMatches(selector, labels)).toBe(expected);
  });
});

describe('normalizeTrustAnchors', () => {
  const seed = (n: number) => Buffer.from([n]);

  it('keeps every PEM block of any type once, re-encoded as CERTIFICATE, and skips what is not PEM', () => {
    const messy: ClusterTrustBundle = {
      metadata: { name: 'messy' },
      spec: { trustBundle: `junk before\n${pem('x1')}between\n${pem('x2', 'TRUSTED CERTIFICATE')}${pem('x1')}-----BEGIN CERTIFICATE-----\n!!not base64!!\n-----END CERTIFICATE-----\n` },
    };
    const file = normalizeTrustAnchors([messy], seed(1));
    expect(contents(file)).toEqual(['x1', 'x2']);
    expect(file.toString()).not.toContain('TRUSTED');
  });

  it('wraps base64 at 64 characters, as pem.EncodeToMemory', () => {
    const long = 'y'.repeat(100);
    const file = normalizeTrustAnchors([bundle('long', undefined, [long])], seed(1)).toString();
    const body = Buffer.from(long).toString('base64');
    expect(file).toBe(`-----BEGIN CERTIFICATE-----\n${body.slice(0, 64)}\n${body.slice(64, 128)}\n${body.slice(128)}\n-----END CERTIFICATE-----\n`);
  });

  it('orders the anchors by the seed: the same for one seed whatever the bundles list order, another for another seed', () => {
    const ders = Array.from({ length: 12 }, (_, i) => `anchor-${i}`);
    const forward = [bundle('one', undefined, ders)];
    const backward = [bundle('two', undefined, [...ders].reverse())];
    expect(normalizeTrustAnchors(forward, seed(1))).toEqual(normalizeTrustAnchors(backward, seed(1)));
    const orders = new Set([1, 2, 3].map((n) => normalizeTrustAnchors(forward, seed(n)).toString()));
    expect(orders.size).toBe(3);
  });

  it('gives an empty file for bundles with no blocks', () => {
    expect(normalizeTrustAnchors([bundle('empty', undefined, [])], seed(1))).toEqual(Buffer.alloc(0));
  });
});
