/** A claim-backed volume resolved to its PersistentVolume, each refusal worded as the kubelet's populator words it. */
import { describe, expect, it } from 'vitest';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/api/storage.ts';
import type { Pod } from '../../src/api/types.ts';
import { ApiError } from '../../src/client/api.ts';
import { type ClaimReader, resolveClaim } from '../../src/volumes/claims.ts';

const pod = { metadata: { name: 'web-0', namespace: 'shop', uid: 'pod-uid' }, spec: { containers: [] } } as unknown as Pod;
const claimed = { name: 'data', persistentVolumeClaim: { claimName: 'data-web-0' } };

const boundClaim = (extra: Partial<PersistentVolumeClaim> = {}): PersistentVolumeClaim => ({
  metadata: { name: 'data-web-0', namespace: 'shop', uid: 'claim-uid', ...extra.metadata },
  spec: { volumeName: 'pv-1', ...extra.spec },
  status: { phase: 'Bound', ...extra.status },
});
const boundVolume = (extra: Partial<NonNullable<PersistentVolume['spec']>> = {}, annotations?: Record<string, string>): PersistentVolume => ({
  metadata: { name: 'pv-1', ...(annotations ? { annotations } : {}) },
  spec: { claimRef: { namespace: 'shop', name: 'data-web-0', uid: 'claim-uid' }, local: { path: '/mnt/disks/a' }, ...extra },
});

function reader(claim: PersistentVolumeClaim | Error, volume: PersistentVolume | Error): ClaimReader {
  return {
    claim: async () => (claim instanceof Error ? Promise.reject(claim) : claim),
    volume: async () => (volume instanceof Error ? Promise.reject(volume) : volume),
  };
}

const notFound = (what: string) => new ApiError(404, 'NotFound', `${what} not found`, `GET ${what}`);
const wrapped = (why: string) => `error processing PVC shop/data-web-0: ${why}`;

describe('resolveClaim', () => {
  it('gives the bound volume, read-only as the pod says, with the group its annotation names', async () => {
    const resolved = await resolveClaim(reader(boundClaim(), boundVolume({}, { 'pv.beta.kubernetes.io/gid': '1234' })), pod, { name: 'data', persistentVolumeClaim: { claimName: 'data-web-0', readOnly: true } }, 'mount');
    expect(resolved).toMatchObject({ claim: { namespace: 'shop', name: 'data-web-0', uid: 'claim-uid' }, readOnly: true, supplementalGroup: 1234 });
    expect(resolved.pv.metadata.name).toBe('pv-1');
  });

  it.each<[string, PersistentVolumeClaim | Error, PersistentVolume | Error, string]>([
    ['a claim that is not there', notFound('persistentvolumeclaims "data-web-0"'), boundVolume(), wrapped('failed to fetch PVC from API server: persistentvolumeclaims "data-web-0" not found')],
    ['a claim being deleted without protection', boundClaim({ metadata: { name: 'data-web-0', namespace: 'shop', deletionTimestamp: '2026-12-07T00:00:00Z' } }), boundVolume(), wrapped('PVC is being deleted')],
    ['a claim not bound', boundClaim({ status: { phase: 'Pending' } }), boundVolume(), wrapped('PVC is not bound')],
    ['a claim lost', boundClaim({ status: { phase: 'Lost' } }), boundVolume(), wrapped('PVC is not bound')],
    ['a bound claim without a volume name', boundClaim({ spec: { volumeName: '' } }), boundVolume(), wrapped('PVC has empty pvc.Spec.VolumeName')],
    ['a volume that is not there', boundClaim(), notFound('persistentvolumes "pv-1"'), wrapped('failed to fetch PV pv-1 from API server: persistentvolumes "pv-1" not found')],
    ['a volume bound to no claim', boundClaim(), boundVolume({ claimRef: null }), wrapped('found PV object pv-1 but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim')],
    ['a volume bound to another claim', boundClaim(), boundVolume({ claimRef: { uid: 'other' } }), wrapped('found PV object pv-1 but its pv.Spec.ClaimRef.UID other does not point to claim.UID claim-uid')],
    ['a block volume mounted as a filesystem', boundClaim(), boundVolume({ volumeMode: 'Block' }), 'volume data has volumeMode Block, but is specified in volumeMounts'],
  ])('refuses %s', async (_, claim, volume, message) => {
    await expect(resolveClaim(reader(claim, volume), pod, claimed, 'mount')).rejects.toThrow(message);
  });

  it('serves a claim being deleted while pvc-protection still holds it', async () => {
    const deleting = boundClaim({ metadata: { name: 'data-web-0', namespace: 'shop', uid: 'claim-uid', deletionTimestamp: '2026-12-07T00:00:00Z', finalizers: ['kubernetes.io/pvc-protection'] } });
    await expect(resolveClaim(reader(deleting, boundVolume()), pod, claimed, 'mount')).resolves.toMatchObject({ readOnly: false });
  });

  it('refuses a filesystem volume used as a device', async () => {
    await expect(resolveClaim(reader(boundClaim(), boundVolume()), pod, claimed, 'device')).rejects.toThrow('volume data has volumeMode Filesystem, but is specified in volumeDevices');
  });

  it('maps a block volume used as a device, and refuses one that another container mounts too', async () => {
    await expect(resolveClaim(reader(boundClaim(), boundVolume({ volumeMode: 'Block' })), pod, claimed, ['device'])).resolves.toMatchObject({ pv: { spec: { volumeMode: 'Block' } } });
    await expect(resolveClaim(reader(boundClaim(), boundVolume({ volumeMode: 'Block' })), pod, claimed, ['mount', 'device'])).rejects.toThrow('volume data has volumeMode Block, but is specified in volumeMounts');
  });

  it("takes a generic ephemeral volume's claim as <pod>-<volume>, which must be the pod's own", async () => {
    const ephemeral = { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: {} } } };
    const asked: string[] = [];
    const owned = boundClaim({ metadata: { name: 'web-0-scratch', namespace: 'shop', uid: 'claim-uid', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'web-0', uid: 'pod-uid', controller: true }] } });
    const claims: ClaimReader = { claim: async (_, name) => (asked.push(name), owned), volume: async () => boundVolume() };
    await expect(resolveClaim(claims, pod, ephemeral, 'mount')).resolves.toMatchObject({ claim: { name: 'web-0-scratch' } });
    expect(asked).toEqual(['web-0-scratch']);
    const stranger = boundClaim({ metadata: { name: 'web-0-scratch', namespace: 'shop', uid: 'claim-uid', ownerReferences: [{ uid: 'another-pod', controller: true }] } });
    await expect(resolveClaim(reader(stranger, boundVolume()), pod, ephemeral, 'mount')).rejects.toThrow('PVC shop/web-0-scratch was not created for pod shop/web-0 (pod is not owner)');
  });
});
