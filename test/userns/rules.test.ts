/** The kubelet's user namespace rules (pkg/kubelet/userns/userns_manager.go, kubelet_getters.go HandlerSupportsUserNamespaces) as tables. */
import { describe, expect, it } from 'vitest';
import { MAX_USERNS_PODS, firstFreeBlock, mappingsFile, parseMappingsFile, userNamespaceRefusal } from '../../src/userns/rules.ts';

const handler = (name: string, userNamespaces: boolean) => ({ name, features: { recursiveReadOnlyMounts: false, userNamespaces } });

describe('whether a handler can give a pod its own user namespace', () => {
  it.each([
    ['before the runtime Status was read', null, '', 'runtime handlers are not set'],
    ['a runtime reporting no handlers (containerd 1.6)', [], '', 'the handler "" is not known'],
    ['a handler the runtime does not report', [handler('', true)], 'kata', 'the handler "kata" is not known'],
    ['a handler without the feature', [handler('', true), handler('kata', false)], 'kata', 'RuntimeClass handler "kata" does not support user namespaces'],
    ['the default handler with the feature', [handler('', true)], '', null],
  ])('%s', (_case, handlers, name, refusal) => {
    expect(userNamespaceRefusal(handlers, name)).toBe(refusal);
  });
});

describe('blocks of IDs', () => {
  it('gives the lowest free block of 65536, from 65536', () => {
    expect(firstFreeBlock(new Set())).toBe(65536);
    expect(firstFreeBlock(new Set([65536, 131072]))).toBe(196608);
    expect(firstFreeBlock(new Set([131072]))).toBe(65536);
  });

  it('has room for 65535 pods, no more', () => {
    expect(MAX_USERNS_PODS).toBe(65535);
    const blocks = new Set(Array.from({ length: MAX_USERNS_PODS }, (_, i) => 65536 * (i + 1)));
    expect(firstFreeBlock(blocks)).toBeNull();
  });
});

describe("a pod's mappings file", () => {
  it('is written as the kubelet marshals it and read back', () => {
    const text = mappingsFile(131072);
    expect(JSON.parse(text)).toEqual({
      uidMappings: [{ hostId: 131072, containerId: 0, length: 65536 }],
      gidMappings: [{ hostId: 131072, containerId: 0, length: 65536 }],
    });
    expect(parseMappingsFile(text)).toEqual({ hostId: 131072 });
  });

  const file = (uids: unknown[], gids: unknown[] = uids) => JSON.stringify({ uidMappings: uids, gidMappings: gids });
  const m = (hostId: number, containerId = 0, length = 65536) => ({ hostId, containerId, length });
  it.each([
    ['two mappings', file([m(65536), m(131072)]), 'invalid user namespace configuration: no more than one mapping allowed.'],
    ['no GID mapping', file([m(65536)], []), 'invalid user namespace configuration: GID and UID mappings should be identical.'],
    ['different GIDs', file([m(65536)], [m(131072)]), 'invalid user namespace configuration: GID and UID mapping should be identical'],
    ['root not mapped', file([m(65536, 1)]), 'invalid user namespace configuration: UID 0 must be mapped'],
    ['another length', file([m(65536, 0, 1000)]), 'wrong user namespace length 1000'],
    ['a block not aligned', file([m(70000)]), 'wrong user namespace offset specified 70000'],
    ['the host IDs below 65536', file([m(0)]), 'id 0 is out of range'],
  ])('refuses %s', (_case, text, error) => {
    expect(parseMappingsFile(text)).toEqual({ error });
  });

  it('refuses what is not JSON, naming the file', () => {
    expect(parseMappingsFile('{')).toMatchObject({ error: expect.stringMatching(/^invalid user namespace mappings file: /) });
  });
});
