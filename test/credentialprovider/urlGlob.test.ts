/**
 * The registry glob rule of matchImages (src/credentialprovider/urlGlob.ts;
 * pkg/credentialprovider/keyring.go URLsMatch, ParseSchemelessURL), from tables.
 */
import { describe, expect, it } from 'vitest';
import { filepathMatch, parseSchemelessUrl, urlsMatchStr } from '../../src/credentialprovider/urlGlob.ts';

describe('urlsMatchStr', () => {
  it.each([
    // host parts, each a glob
    ['*.azurecr.io', 'myregistry.azurecr.io/app', true],
    ['*.azurecr.io', 'azurecr.io/app', false],
    ['*.azurecr.io', 'a.b.azurecr.io/app', false],
    ['*.*.registry.io', 'foo.bar.registry.io/app', true],
    ['reg*.io', 'registry.io/app', true],
    // `?` starts a URL's query, so in a match image it ends the host (url.Parse), as in the kubelet
    ['reg?.io', 'regs.io/app', false],
    ['r[a-c]g.io', 'rbg.io/x', true],
    ['r[^a-c]g.io', 'rbg.io/x', false],
    ['r[a-cg.io', 'rag.io/x', false],
    // a host starting with `[` is an IPv6 literal to url.Parse: this one does not parse
    ['[a-c]r.io', 'br.io/x', false],
    ['gcr.io', 'gcr.io/project/app', true],
    ['gcr.io', 'k8s.gcr.io/app', false],
    ['123456789.dkr.ecr.us-east-1.amazonaws.com', '123456789.dkr.ecr.us-east-1.amazonaws.com/app', true],
    // ports must be equal
    ['127.0.0.1', '127.0.0.1:5000/app', false],
    ['127.0.0.1:5000', '127.0.0.1:5000/app', true],
    ['127.0.0.1:5000', '127.0.0.1/app', false],
    ['registry.io:*', 'registry.io:5000/app', false],
    // the glob's path is a string prefix of the image's
    ['registry.io/team', 'registry.io/team/app', true],
    ['registry.io/team', 'registry.io/other/app', false],
    ['registry.io/team', 'registry.io/teamwork', true],
    ['registry.io/team/app/more', 'registry.io/team/app', false],
    // docker hub is docker.io once the keyring has normalized the image
    ['docker.io', 'docker.io/library/busybox', true],
  ])('%s against %s → %s', (glob, image, expected) => {
    expect(urlsMatchStr(glob, image)).toBe(expected);
  });
});

describe('parseSchemelessUrl', () => {
  it.each([
    ['registry.io:5000/team/app', { host: 'registry.io:5000', path: '/team/app' }],
    ['registry.io', { host: 'registry.io', path: '' }],
    ['*.azurecr.io', { host: '*.azurecr.io', path: '' }],
    ['registry.io/a%20b', { host: 'registry.io', path: '/a b' }],
  ])('%s parses', (text, expected) => {
    expect(parseSchemelessUrl(text)).toEqual(expected);
  });

  it.each([
    ['registry.io:port', 'parse "https://registry.io:port": invalid port ":port" after host'],
    ['reg istry.io', 'parse "https://reg istry.io": invalid character " " in host name'],
    ['registry.io/%zz', 'parse "https://registry.io/%zz": invalid URL escape "%zz"'],
    ['registry.io\n', 'parse "https://registry.io\\n": net/url: invalid control character in URL'],
  ])('%j is refused as Go words it', (text, message) => {
    expect(parseSchemelessUrl(text)).toBe(message);
  });
});

describe('filepathMatch', () => {
  it.each([
    ['*', 'anything', true],
    ['a?c', 'abc', true],
    ['a?c', 'abbc', false],
    ['a*c', 'abbbc', true],
    ['a*c', 'abd', false],
    ['\\*', '*', true],
    ['\\*', 'x', false],
    ['[', 'x', false],
    ['a\\', 'a', false],
  ])('%s on %s → %s', (pattern, name, expected) => {
    expect(filepathMatch(pattern, name)).toBe(expected);
  });
});
