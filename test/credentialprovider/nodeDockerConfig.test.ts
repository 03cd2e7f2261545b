/**
 * The node's docker config files (pkg/credentialprovider/config.go ReadDockerConfigFile and its
 * search paths, provider.go CachingDockerConfigProvider): the two formats, where they are looked
 * for and in which order, a file that cannot be decoded, the 5-minute cache.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { credentialsFor } from '../../src/credentialprovider/keyring.ts';
import {
  type DockerConfigDirs,
  NODE_DOCKER_CONFIG_LIFETIME_MS,
  dockerConfigCandidates,
  nodeDockerConfigSource,
  readNodeDockerConfig,
} from '../../src/credentialprovider/nodeDockerConfig.ts';
import type { LogFields, LogLevel } from '../../src/log.ts';

const auth = (user: string, password: string) => Buffer.from(`${user}:${password}`).toString('base64');

let tmp: string;
let dirs: DockerConfigDirs;
beforeEach(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'statelet-nodecfg-'));
  dirs = { rootDir: path.join(tmp, 'root'), workingDir: path.join(tmp, 'cwd'), homeDir: path.join(tmp, 'home') };
  for (const dir of Object.values(dirs)) await mkdir(dir, { recursive: true });
  await mkdir(path.join(dirs.homeDir, '.docker'));
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Only the candidates under the test's directory: `/.docker` and `/` belong to the machine. */
const ownCandidates = () => dockerConfigCandidates(dirs).filter((c) => c.file.startsWith(tmp));

function capture() {
  const lines: { level: LogLevel; message: string; fields?: LogFields }[] = [];
  return { lines, log: (level: LogLevel, message: string, fields?: LogFields) => void lines.push({ level, message, ...(fields ? { fields } : {}) }) };
}

describe('where the node’s docker config is looked for', () => {
  it('config.json in the root dir, the working dir, ~/.docker, /.docker; then .dockercfg in the root dir, the working dir, ~, /', () => {
    expect(dockerConfigCandidates({ rootDir: '/var/lib/statelet', workingDir: '/srv', homeDir: '/root' })).toEqual([
      { file: '/var/lib/statelet/config.json', format: 'config.json' },
      { file: '/srv/config.json', format: 'config.json' },
      { file: '/root/.docker/config.json', format: 'config.json' },
      { file: '/.docker/config.json', format: 'config.json' },
      { file: '/var/lib/statelet/.dockercfg', format: '.dockercfg' },
      { file: '/srv/.dockercfg', format: '.dockercfg' },
      { file: '/root/.dockercfg', format: '.dockercfg' },
      { file: '/.dockercfg', format: '.dockercfg' },
    ]);
  });

  it.each([
    ['the root dir’s config.json before the working dir’s', ['root/config.json', 'cwd/config.json'], 'root/config.json'],
    ['the working dir’s config.json before ~/.docker’s', ['cwd/config.json', 'home/.docker/config.json'], 'cwd/config.json'],
    ['any config.json before any .dockercfg, even the root dir’s', ['root/.dockercfg', 'home/.docker/config.json'], 'home/.docker/config.json'],
    ['a .dockercfg when there is no config.json', ['home/.dockercfg'], 'home/.dockercfg'],
    ['~/config.json is not a place', ['home/config.json', 'home/.dockercfg'], 'home/.dockercfg'],
  ])('%s', async (_name, files, winner) => {
    for (const file of files) {
      const entry = { 'registry.example.com': { auth: auth(file, 'pw') } };
      await writeFile(path.join(tmp, file), JSON.stringify(file.endsWith('.dockercfg') ? entry : { auths: entry }));
    }
    const found = await readNodeDockerConfig(ownCandidates(), capture().log);
    expect(found.file).toBe(path.join(tmp, winner));
    expect(found.entries.get('registry.example.com')?.username).toBe(winner);
  });

  it('finds nothing, silently, where there is no file', async () => {
    const { lines, log } = capture();
    expect(await readNodeDockerConfig(ownCandidates(), log)).toEqual({ file: null, entries: new Map() });
    expect(lines).toEqual([]);
  });
});

describe('reading each format', () => {
  it.each([
    ['config.json with username and password', 'config.json', { auths: { 'reg.io': { username: 'u', password: 'p', email: 'e@x' } } }, { username: 'u', password: 'p', email: 'e@x' }],
    ['config.json with auth (it wins over username and password)', 'config.json', { auths: { 'reg.io': { username: 'x', password: 'y', auth: auth('u', 'p:q') } } }, { username: 'u', password: 'p:q', email: '' }],
    ['config.json with Go’s case-insensitive field names', 'config.json', { Auths: { 'reg.io': { Username: 'u', Password: 'p' } } }, { username: 'u', password: 'p', email: '' }],
    ['a legacy .dockercfg, the bare map', '.dockercfg', { 'reg.io': { auth: auth('u', 'p') } }, { username: 'u', password: 'p', email: '' }],
  ])('%s', async (_name, file, content, entry) => {
    await writeFile(path.join(dirs.rootDir, file), JSON.stringify(content));
    const found = await readNodeDockerConfig(ownCandidates(), capture().log);
    expect(found.entries).toEqual(new Map([['reg.io', entry]]));
  });

  it.each([
    ['not JSON', '{"auths": {"reg.io": {"password": "hunter2"', /: not valid JSON$/],
    ['an auth field that is not base64', JSON.stringify({ auths: { 'reg.io': { auth: 'hunter2!' } } }), /the entry for "reg\.io": unable to decode auth field/],
    ['an auth field without a colon', JSON.stringify({ auths: { 'reg.io': { auth: Buffer.from('hunter2').toString('base64') } } }), /must be formatted as base64\(username:password\)/],
    ['a password that is not a string', JSON.stringify({ auths: { 'reg.io': { password: 42 } } }), /the entry for "reg\.io": password is not a string/],
  ])('a malformed file (%s) is named in the log, never its content, and the next place is read', async (_name, text, why) => {
    await writeFile(path.join(dirs.rootDir, 'config.json'), text);
    await writeFile(path.join(dirs.homeDir, '.docker', 'config.json'), JSON.stringify({ auths: { 'reg.io': { username: 'next', password: 'p' } } }));
    const { lines, log } = capture();
    const found = await readNodeDockerConfig(ownCandidates(), log);
    expect(found.file).toBe(path.join(dirs.homeDir, '.docker', 'config.json'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', fields: { file: path.join(dirs.rootDir, 'config.json') } });
    expect(String(lines[0]!.fields?.err)).toMatch(why);
    expect(JSON.stringify(lines)).not.toContain('hunter2');
  });
});

describe('the node’s config as a keyring after the pod’s secrets', () => {
  it('its matching entries come after the pod’s, open to the node; read once per 5 minutes', async () => {
    const file = path.join(dirs.rootDir, 'config.json');
    await writeFile(file, JSON.stringify({ auths: { 'https://registry.example.com/v1/': { username: 'node', password: 'n' }, 'other.io': { username: 'x', password: 'y' } } }));
    let now = 0;
    let reads = 0;
    const source = nodeDockerConfigSource({
      candidates: ownCandidates(),
      now: () => now,
      log: capture().log,
      read: (f) => {
        reads++;
        return readFile(f);
      },
    });
    const pod = {
      uid: 'u1',
      namespace: 'shop',
      name: 'pull',
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': Buffer.from(JSON.stringify({ auths: { 'registry.example.com': { username: 'pod', password: 'p' } } })) },
    };
    const first = await credentialsFor([pod], 'registry.example.com/app:1', [source]);
    expect(first.map((c) => [c.username, c.source?.name ?? null])).toEqual([
      ['pod', 'pull'],
      ['node', null],
    ]);
    const readsAfterFirst = reads;
    await writeFile(file, JSON.stringify({ auths: { 'registry.example.com': { username: 'rotated', password: 'r' } } }));
    now = NODE_DOCKER_CONFIG_LIFETIME_MS - 1;
    expect((await credentialsFor([], 'registry.example.com/app:1', [source])).map((c) => c.username)).toEqual(['node']);
    expect(reads).toBe(readsAfterFirst);
    now = NODE_DOCKER_CONFIG_LIFETIME_MS;
    expect((await credentialsFor([], 'registry.example.com/app:1', [source])).map((c) => c.username)).toEqual(['rotated']);
  });

  it('each node keyring is looked up on its own, in order: the files’, then the plugins’', async () => {
    const files = async () => [{ matchKey: 'registry.example.com', username: 'file', password: 'f' }];
    const plugins = async () => [{ matchKey: 'registry.example.com/app', username: 'plugin', password: 'q' }];
    // One keyring would put the more specific plugin key first; the union keeps the files’ first.
    expect((await credentialsFor([], 'registry.example.com/app:1', [files, plugins])).map((c) => c.username)).toEqual(['file', 'plugin']);
  });
});
