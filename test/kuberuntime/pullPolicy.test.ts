import { describe, expect, it } from 'vitest';
import { type PulledRecord, type RecordedSecret, type RecordedServiceAccount, mergeIntoRecord, mustAttemptPull, parseAllowlist, requiresVerification } from '../../src/kuberuntime/pullPolicy.ts';

const REPO = 'registry.example.com/team/app';
const secretA: RecordedSecret = { uid: 'ua', namespace: 'shop', name: 'a', credentialHash: 'hash-a' };
const record = (credentials: PulledRecord['credentialMapping'][string]): PulledRecord => ({ lastUpdatedTime: 't0', imageRef: 'sha256:1', credentialMapping: { [REPO]: credentials } });

describe('parseAllowlist (image_pull_policies.go getAllowlistImagePattern)', () => {
  it.each([
    [['registry.example.com/team/*'], null],
    [['docker.io/library/busybox'], null],
    [[' registry.example.com/*'], 'leading/trailing spaces are not allowed:  registry.example.com/*'],
    [['/*'], 'at least registry hostname is required'],
    [['*'], "not a valid wildcard pattern, only patterns ending with '/*' are allowed: *"],
    [['registry.example.com/*/app'], "not a valid wildcard pattern, only patterns ending with '/*' are allowed: registry.example.com/*/app"],
    [['busybox'], 'neither tag nor digest is accepted in an image reference: busybox'],
    [['registry.example.com/app:1'], 'neither tag nor digest is accepted in an image reference: registry.example.com/app:1'],
    [['Registry.Example.com/App'], 'failed to parse as an image name: Registry.Example.com/App'],
  ])('%j ⇒ %s', (patterns, error) => {
    const parsed = parseAllowlist(patterns);
    if (error === null) expect(typeof parsed).toBe('object');
    else expect(parsed).toBe(error);
  });
});

describe('requiresVerification (RequireCredentialVerificationForImage)', () => {
  const allowlist = parseAllowlist(['registry.example.com/team/*', 'docker.io/library/busybox']);
  if (typeof allowlist === 'string') throw new Error(allowlist);
  it.each([
    ['NeverVerify', 'registry.example.com/x:1', true, false],
    ['NeverVerifyPreloadedImages', 'registry.example.com/x:1', false, false],
    ['NeverVerifyPreloadedImages', 'registry.example.com/x:1', true, true],
    ['NeverVerifyAllowlistedImages', 'registry.example.com/team/app:1', true, false],
    ['NeverVerifyAllowlistedImages', 'registry.example.com/other/app:1', false, true],
    // An exact entry matches the image as the container names it, untagged.
    ['NeverVerifyAllowlistedImages', 'docker.io/library/busybox', true, false],
    ['NeverVerifyAllowlistedImages', 'docker.io/library/busybox:1', true, true],
    ['AlwaysVerify', 'registry.example.com/x:1', false, true],
  ] as const)('%s, %s, pulled by the kubelet: %s ⇒ %s', (policy, image, pulled, verify) => {
    expect(requiresVerification(policy, allowlist, image, pulled)).toBe(verify);
  });
});

describe('mustAttemptPull (image_pull_manager.go MustAttemptImagePull)', () => {
  it.each([
    ['no record', null, [secretA], { pull: true }],
    ['no entry for the repository', { lastUpdatedTime: 't', imageRef: 'sha256:1', credentialMapping: {} }, [secretA], { pull: true }],
    ['open to the node', record({ nodePodsAccessible: true }), [], { pull: false }],
    ['an entry with no credentials', record({}), [secretA], { pull: true }],
    ['the same secret', record({ kubernetesSecrets: [secretA] }), [secretA], { pull: false }],
    ['another secret with the same hash', record({ kubernetesSecrets: [secretA] }), [{ ...secretA, uid: 'ub', name: 'b' }], { pull: false, remember: { ...secretA, uid: 'ub', name: 'b' } }],
    ['the same secret with a new hash', record({ kubernetesSecrets: [secretA] }), [{ ...secretA, credentialHash: 'rotated' }], { pull: false, remember: { ...secretA, credentialHash: 'rotated' } }],
    ['no matching secret', record({ kubernetesSecrets: [secretA] }), [{ uid: 'uc', namespace: 'shop', name: 'c', credentialHash: 'other' }], { pull: true }],
    ['no secrets at all', record({ kubernetesSecrets: [secretA] }), [], { pull: true }],
  ] as const)('%s', (_name, existing, podSecrets, expected) => {
    expect(mustAttemptPull(existing as PulledRecord | null, REPO, () => [...podSecrets])).toEqual(expected);
  });
});

describe('mustAttemptPull with service accounts (a token-mode plugin\'s credentials)', () => {
  const builder: RecordedServiceAccount = { uid: 'sa-1', namespace: 'shop', name: 'builder' };
  it.each([
    ['the same service account', record({ kubernetesServiceAccounts: [builder] }), builder, { pull: false }],
    ['another service account', record({ kubernetesServiceAccounts: [builder] }), { uid: 'sa-2', namespace: 'shop', name: 'other' }, { pull: true }],
    ['an account of the same name recreated (another uid)', record({ kubernetesServiceAccounts: [builder] }), { ...builder, uid: 'sa-9' }, { pull: true }],
    ['an account of the same name in another namespace', record({ kubernetesServiceAccounts: [builder] }), { ...builder, namespace: 'other' }, { pull: true }],
    ['no service account credentials', record({ kubernetesServiceAccounts: [builder] }), null, { pull: true }],
    ['a record of secrets only', record({ kubernetesSecrets: [secretA] }), builder, { pull: true }],
  ] as const)('%s', (_name, existing, account, expected) => {
    expect(mustAttemptPull(existing, REPO, () => [], () => account)).toEqual(expected);
  });
});

describe('mergeIntoRecord (pulledRecordMergeNewCreds)', () => {
  it('adds service accounts as a set sorted by namespace, name, uid; a known one is no change; secrets are kept', () => {
    const builder = { uid: 'sa-1', namespace: 'shop', name: 'builder' };
    const alpha = { uid: 'sa-2', namespace: 'alpha', name: 'z' };
    expect(mergeIntoRecord(record({ kubernetesSecrets: [secretA], kubernetesServiceAccounts: [builder] }), 'sha256:1', REPO, { kubernetesServiceAccounts: [alpha] }, 't1')?.credentialMapping[REPO]).toEqual({
      kubernetesSecrets: [secretA],
      kubernetesServiceAccounts: [alpha, builder],
    });
    expect(mergeIntoRecord(record({ kubernetesServiceAccounts: [builder] }), 'sha256:1', REPO, { kubernetesServiceAccounts: [builder] }, 't1')).toBeNull();
    expect(mergeIntoRecord(record({ nodePodsAccessible: true }), 'sha256:1', REPO, { kubernetesServiceAccounts: [builder] }, 't1')).toBeNull();
  });

  it('a first record keeps what it is given, and none when pulled under unknown circumstances', () => {
    expect(mergeIntoRecord(null, 'sha256:1', REPO, { kubernetesSecrets: [secretA] }, 't1')).toEqual({ lastUpdatedTime: 't1', imageRef: 'sha256:1', credentialMapping: { [REPO]: { kubernetesSecrets: [secretA] } } });
    expect(mergeIntoRecord(null, 'sha256:1', REPO, null, 't1')).toEqual({ lastUpdatedTime: 't1', imageRef: 'sha256:1', credentialMapping: {} });
  });

  it('adds secrets sorted by namespace, name, uid; a known one is no change', () => {
    const secretB = { uid: 'ub', namespace: 'alpha', name: 'b', credentialHash: 'hash-b' };
    expect(mergeIntoRecord(record({ kubernetesSecrets: [secretA] }), 'sha256:1', REPO, { kubernetesSecrets: [secretB] }, 't1')?.credentialMapping[REPO]).toEqual({ kubernetesSecrets: [secretB, secretA] });
    expect(mergeIntoRecord(record({ kubernetesSecrets: [secretA] }), 'sha256:1', REPO, { kubernetesSecrets: [secretA] }, 't1')).toBeNull();
  });

  it('open to the node wins and stays', () => {
    expect(mergeIntoRecord(record({ kubernetesSecrets: [secretA] }), 'sha256:1', REPO, { nodePodsAccessible: true }, 't1')?.credentialMapping[REPO]).toEqual({ nodePodsAccessible: true });
    expect(mergeIntoRecord(record({ nodePodsAccessible: true }), 'sha256:1', REPO, { kubernetesSecrets: [secretA] }, 't1')).toBeNull();
  });
});
