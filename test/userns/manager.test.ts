/**
 * The pods' user namespaces on disk (pkg/kubelet/userns/userns_manager.go): a block per pod with
 * `hostUsers: false`, recorded in its directory, read back by a new manager (an agent restarted),
 * free again once released; the node's namespace for every other pod.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Logger, silentLogger } from '../../src/log.ts';
import { NamespaceMode, type RuntimeHandler } from '../../src/runtime/types.ts';
import { UserNamespaceManager } from '../../src/userns/manager.ts';
import { makePod } from '../support/pods.ts';

const SUPPORTED: RuntimeHandler[] = [{ name: '', features: { recursiveReadOnlyMounts: false, userNamespaces: true } }];
const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function podsDir(...uids: string[]): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-userns-'));
  dirs.push(dir);
  for (const uid of uids) await mkdir(path.join(dir, uid));
  return dir;
}

const ownUsers = (name: string) => makePod(name, { hostUsers: false });
const mapping = (hostId: number) => [{ hostId, containerId: 0, length: 65536 }];

describe('the user namespace manager', () => {
  it('puts pods without hostUsers: false in the node namespace, whatever the handler', async () => {
    const manager = new UserNamespaceManager(await podsDir(), () => null, silentLogger);
    expect(await manager.mappingsFor(makePod('a'), 'kata')).toEqual({ mode: NamespaceMode.NODE, uids: [], gids: [] });
    expect(await manager.mappingsFor(makePod('b', { hostUsers: true }), '')).toMatchObject({ mode: NamespaceMode.NODE });
  });

  it('refuses a pod of its own namespace on a handler without support, with the kubelet words', async () => {
    const manager = new UserNamespaceManager(await podsDir('uid-a'), () => [], silentLogger);
    await expect(manager.mappingsFor(ownUsers('a'), '')).rejects.toThrow('the handler "" is not known');
  });

  it('gives each pod the first free block, records it, and gives it again to a restarted agent', async () => {
    const dir = await podsDir('uid-a', 'uid-b', 'uid-c');
    const manager = new UserNamespaceManager(dir, () => SUPPORTED, silentLogger);
    expect(await manager.mappingsFor(ownUsers('a'), '')).toEqual({ mode: NamespaceMode.POD, uids: mapping(65536), gids: mapping(65536) });
    expect((await manager.mappingsFor(ownUsers('b'), '')).uids).toEqual(mapping(131072));
    // Asked again: the same block.
    expect((await manager.mappingsFor(ownUsers('a'), '')).uids).toEqual(mapping(65536));
    expect(JSON.parse(await readFile(path.join(dir, 'uid-b', 'userns'), 'utf8'))).toEqual({ uidMappings: mapping(131072), gidMappings: mapping(131072) });

    // A new manager reads the blocks back: b keeps its own, c gets the next free one, not b's.
    const restarted = new UserNamespaceManager(dir, () => SUPPORTED, silentLogger);
    expect((await restarted.mappingsFor(ownUsers('c'), '')).uids).toEqual(mapping(196608));
    expect((await restarted.mappingsFor(ownUsers('b'), '')).uids).toEqual(mapping(131072));
  });

  it("frees a released pod's block and removes its file", async () => {
    const dir = await podsDir('uid-a', 'uid-b');
    const manager = new UserNamespaceManager(dir, () => SUPPORTED, silentLogger);
    await manager.mappingsFor(ownUsers('a'), '');
    await manager.release('uid-a');
    await expect(readFile(path.join(dir, 'uid-a', 'userns'), 'utf8')).rejects.toThrow(/ENOENT/);
    expect((await manager.mappingsFor(ownUsers('b'), '')).uids).toEqual(mapping(65536));
  });

  it('reports a file it did not write at start and refuses that pod only', async () => {
    const dir = await podsDir('uid-a', 'uid-b');
    await writeFile(path.join(dir, 'uid-a', 'userns'), JSON.stringify({ uidMappings: mapping(70000), gidMappings: mapping(70000) }));
    const logged: string[] = [];
    const log: Logger = (_level, message, fields) => void logged.push(`${message}: ${String(fields?.['err'])}`);
    const manager = new UserNamespaceManager(dir, () => SUPPORTED, log);
    await expect(manager.mappingsFor(ownUsers('a'), '')).rejects.toThrow('wrong user namespace offset specified 70000');
    expect(logged).toEqual(['A pod user namespace mappings file is not valid: wrong user namespace offset specified 70000']);
    expect((await manager.mappingsFor(ownUsers('b'), '')).uids).toEqual(mapping(65536));
  });

  it('refuses a block two pods record', async () => {
    const dir = await podsDir('uid-a', 'uid-b');
    for (const uid of ['uid-a', 'uid-b']) await writeFile(path.join(dir, uid, 'userns'), JSON.stringify({ uidMappings: mapping(65536), gidMappings: mapping(65536) }));
    const manager = new UserNamespaceManager(dir, () => SUPPORTED, silentLogger);
    const [a, b] = await Promise.allSettled([manager.mappingsFor(ownUsers('a'), ''), manager.mappingsFor(ownUsers('b'), '')]);
    expect([a, b].filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect([a, b].find((r) => r.status === 'rejected')).toMatchObject({ reason: { message: expect.stringMatching(/^range picked for pod "uid-[ab]" already taken$/) } });
  });
});
