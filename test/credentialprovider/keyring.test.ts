import { describe, expect, it } from 'vitest';
import {
  type PullSecret,
  PullSecretError,
  credentialHash,
  credentialsFor,
  decodeAuthField,
  keyringOfSecrets,
  lookup,
  repositoryOf,
} from '../../src/credentialprovider/keyring.ts';
import { urlsMatchStr } from '../../src/credentialprovider/urlGlob.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');

function jsonSecret(name: string, auths: unknown, extra: Partial<PullSecret> = {}): PullSecret {
  return { uid: `uid-${name}`, namespace: 'shop', name, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.from(JSON.stringify({ auths })) }, ...extra };
}

function users(secrets: PullSecret[], image: string): string[] {
  return lookup(keyringOfSecrets(secrets), repositoryOf(image)).map((c) => `${c.username}:${c.password}`);
}

describe('repositoryOf (pkg/util/parsers ParseImageName)', () => {
  it.each([
    ['busybox', 'docker.io/library/busybox'],
    ['busybox:1.36', 'docker.io/library/busybox'],
    ['library/busybox@sha256:' + 'a'.repeat(64), 'docker.io/library/busybox'],
    ['team/app:2', 'docker.io/team/app'],
    ['index.docker.io/team/app', 'docker.io/team/app'],
    ['registry.example.com/team/app:1', 'registry.example.com/team/app'],
    ['127.0.0.1:5000/app:1', '127.0.0.1:5000/app'],
    ['localhost/app', 'localhost/app'],
    ['localhost:5000/a/b/c:tag@sha256:' + 'b'.repeat(64), 'localhost:5000/a/b/c'],
  ])('%s ⇒ %s', (image, repository) => {
    expect(repositoryOf(image)).toBe(repository);
  });
});

describe('keys against repositories (keyring.go URLsMatchStr, as the keyring calls it)', () => {
  it.each([
    ['registry.example.com', 'registry.example.com/app', true],
    ['*.example.com', 'registry.example.com/app', true],
    ['*.example.com', 'example.com/app', false],
    ['*.example.com', 'a.b.example.com/app', false],
    ['reg*.io', 'registry.io/app', true],
    // `?` starts a URL's query, as Go's url.Parse reads the key: `reg?.io` is the host `reg`.
    ['reg?.io', 'reg1.io/app', false],
    ['reg?', 'reg/app', true],
    ['reg[0-9].io', 'reg7.io/app', true],
    ['reg[^0-9].io', 'reg7.io/app', false],
    ['reg[.io', 'reg[.io/app', false],
    ['127.0.0.1', '127.0.0.1:5000/app', false],
    ['127.0.0.1:5000', '127.0.0.1:5000/app', true],
    ['127.0.0.1:5000', '127.0.0.1:5001/app', false],
    ['registry.example.com/team', 'registry.example.com/team/app', true],
    ['registry.example.com/team', 'registry.example.com/other/app', false],
    // A string prefix, as the kubelet compares paths.
    ['registry.example.com/team', 'registry.example.com/teamwork/app', true],
  ])('%s vs %s ⇒ %s', (glob, target, matches) => {
    expect(urlsMatchStr(glob, target)).toBe(matches);
  });
});

describe('decodeAuthField (config.go decodeDockerConfigFieldAuth)', () => {
  it.each([
    ['padded', b64('alice:s3cret'), { username: 'alice', password: 's3cret' }],
    ['unpadded', b64('bob:pw').replace(/=+$/, ''), { username: 'bob', password: 'pw' }],
    ['a colon in the password', b64('carol:a:b'), { username: 'carol', password: 'a:b' }],
  ])('%s', (_name, field, expected) => {
    expect(decodeAuthField(field)).toEqual(expected);
  });

  it.each([
    ['no colon', b64('nocolon'), /must be formatted as base64\(username:password\)/],
    ['not base64', '!!!', /illegal base64 data/],
  ])('refuses %s', (_name, field, message) => {
    const result = decodeAuthField(field);
    expect(result).toBeInstanceOf(Error);
    expect((result as Error).message).toMatch(message);
  });
});

describe('keyringOfSecrets and lookup (secrets.go, keyring.go BasicDockerKeyring)', () => {
  it('reads both secret formats; auth overrides username and password', () => {
    const json = jsonSecret('a', { 'registry.example.com': { username: 'u1', password: 'p1', auth: b64('u2:p2') } });
    const cfg: PullSecret = { uid: 'uid-b', namespace: 'shop', name: 'b', type: 'kubernetes.io/dockercfg', data: { '.dockercfg': Buffer.from(JSON.stringify({ 'registry.example.com': { username: 'u3', password: 'p3' } })) } };
    expect(users([json, cfg], 'registry.example.com/app:1')).toEqual(['u2:p2', 'u3:p3']);
  });

  it('skips other types, a missing key and an empty key', () => {
    const opaque = jsonSecret('o', { 'registry.example.com': { username: 'x', password: 'y' } }, { type: 'Opaque' });
    const wrongKey: PullSecret = { uid: 'w', namespace: 'shop', name: 'w', type: 'kubernetes.io/dockercfg', data: { '.dockerconfigjson': Buffer.from('{}') } };
    const empty: PullSecret = { uid: 'e', namespace: 'shop', name: 'e', type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.alloc(0) } };
    expect(users([opaque, wrongKey, empty], 'registry.example.com/app')).toEqual([]);
  });

  it.each([
    ['not JSON', Buffer.from('{not json'), /invalid image pull secret "shop\/bad": \.dockerconfigjson: not valid JSON/],
    ['a bad auth field', Buffer.from(JSON.stringify({ auths: { r: { auth: '!!' } } })), /the entry for "r": unable to decode auth field/],
    ['a number for a username', Buffer.from(JSON.stringify({ auths: { r: { username: 3 } } })), /username is not a string/],
  ])('a secret with %s fails with a message naming it', (_name, bytes, message) => {
    const bad: PullSecret = { uid: 'x', namespace: 'shop', name: 'bad', type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': bytes } };
    expect(() => keyringOfSecrets([bad])).toThrow(PullSecretError);
    expect(() => keyringOfSecrets([bad])).toThrow(message);
  });

  it('drops the scheme and a leading /v1/ or /v2/; more specific keys come first', () => {
    const secret = jsonSecret('a', {
      'https://registry.example.com': { username: 'host', password: 'p' },
      'registry.example.com/v2/team': { username: 'team', password: 'p' },
      'http://registry.example.com/team/app': { username: 'app', password: 'p' },
      'other.example.com': { username: 'other', password: 'p' },
    });
    expect(users([secret], 'registry.example.com/team/app:1')).toEqual(['app:p', 'team:p', 'host:p']);
    expect(users([secret], 'registry.example.com/solo')).toEqual(['host:p']);
  });

  it('falls back to index.docker.io for Docker Hub images only', () => {
    const secret = jsonSecret('hub', { 'https://index.docker.io/v1/': { username: 'hub', password: 'p' } });
    expect(users([secret], 'busybox')).toEqual(['hub:p']);
    expect(users([secret], 'docker.io/team/app')).toEqual(['hub:p']);
    expect(users([secret], 'registry.example.com/app')).toEqual([]);
  });

  it('keeps every matching credential of every secret, in the secrets’ order under one key', () => {
    const first = jsonSecret('first', { 'registry.example.com': { username: 'old', password: 'p' } });
    const second = jsonSecret('second', { 'registry.example.com': { username: 'new', password: 'p' } });
    const credentials = lookup(keyringOfSecrets([first, second]), 'registry.example.com/app');
    expect(credentials.map((c) => [c.username, c.source?.name])).toEqual([
      ['old', 'first'],
      ['new', 'second'],
    ]);
  });

  it('hashes a credential as the kubelet does (sha256 of its Go JSON, empty fields left out, <&> escaped)', () => {
    // Computed apart with sha256sum over the JSON Go's encoder writes.
    expect(credentialHash({ username: 'alice', password: 's3cret' })).toBe('84e602bef66066d26999b4f32a2afb963a80f8384d3cdf9145038d3c3da62d2b');
    expect(credentialHash({ username: 'alice', password: 's3cret', email: '' })).toBe('84e602bef66066d26999b4f32a2afb963a80f8384d3cdf9145038d3c3da62d2b');
    expect(credentialHash({ username: 'a', password: '<&>', email: 'e@x' })).toBe('d2fc465c16f41efc33121659d70057eda25f87ab2331456cc7d807ff25f45079');
  });

  it('tries the pod’s secrets first, then the node’s (plugins’) credentials whose keys match, hashed and open to the node', async () => {
    const pod = jsonSecret('pull', { 'registry.example.com': { username: 'pod', password: 'p' } });
    const node = async () => [
      { matchKey: '*.example.com', username: 'plugin', password: 'q' },
      { matchKey: 'other.io', username: 'unused', password: 'r' },
    ];
    const credentials = await credentialsFor([pod], 'registry.example.com/app:1', [node]);
    expect(credentials.map((c) => [c.username, c.source?.name ?? null])).toEqual([
      ['pod', 'pull'],
      ['plugin', null],
    ]);
    expect(credentials[1]!.hash).toBe(credentialHash({ username: 'plugin', password: 'q' }));
  });
});
