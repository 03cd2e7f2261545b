/** A pod's resource claims on a node without DRA (dynamicResources.ts, dra/manager.go PrepareResources): never a sandbox, the kubelet's event. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { dynamicResourcesError } from '../../src/kuberuntime/dynamicResources.ts';
import { container, makePod } from '../support/pods.ts';
import { lifecycleRig, syncOnce } from './support.ts';

const claimed = (resourceClaims: NonNullable<Pod['spec']['resourceClaims']>, statuses?: NonNullable<Pod['status']>['resourceClaimStatuses']): Pod => {
  const pod = makePod('gpu', { resourceClaims, containers: [container('main')] });
  return statuses ? { ...pod, status: { resourceClaimStatuses: statuses } } : pod;
};

describe('dynamicResourcesError', () => {
  it.each<[string, Pod, string | null]>([
    ['no claims', makePod('plain', { containers: [container('main')] }), null],
    ['a template whose claim is not created yet', claimed([{ name: 'gpu', resourceClaimTemplateName: 'gpu-template' }]), 'prepare dynamic resources: pod "default/gpu": ResourceClaim not created yet'],
    ['a template whose claim exists', claimed([{ name: 'gpu', resourceClaimTemplateName: 'gpu-template' }], [{ name: 'gpu', resourceClaimName: 'gpu-abc12' }]), 'prepare dynamic resources: ResourceClaim gpu-abc12: this node has no DRA driver to prepare it'],
    ['a template for which no claim was needed', claimed([{ name: 'gpu', resourceClaimTemplateName: 'gpu-template' }], [{ name: 'gpu' }]), null],
    ['a named claim', claimed([{ name: 'gpu', resourceClaimName: 'shared-gpu' }]), 'prepare dynamic resources: ResourceClaim shared-gpu: this node has no DRA driver to prepare it'],
    ['a claim naming neither', claimed([{ name: 'gpu' }]), 'prepare dynamic resources: pod "default/gpu", spec.resourceClaim "gpu": none of the supported fields are set'],
  ])('%s', (_name, pod, want) => {
    expect(dynamicResourcesError(pod)).toBe(want);
  });
});

it('creates no sandbox for a pod with a claim, with the FailedPrepareDynamicResources event, again at the next sync', async () => {
  const rig = lifecycleRig();
  const pod = claimed([{ name: 'gpu', resourceClaimName: 'shared-gpu' }]);
  await syncOnce(rig, pod);
  const result = await syncOnce(rig, pod);
  expect(result.errors).toEqual(['FailedPrepareDynamicResources: prepare dynamic resources: ResourceClaim shared-gpu: this node has no DRA driver to prepare it']);
  const event = 'FailedPrepareDynamicResources: Failed to prepare dynamic resources: prepare dynamic resources: ResourceClaim shared-gpu: this node has no DRA driver to prepare it';
  expect(rig.events.lines()).toEqual([event, event]);
  expect(rig.runtime.callLog().filter((c) => c.startsWith('runPodSandbox'))).toEqual([]);
});
