/** A pod's QoS class (api/qos.ts, qos.go ComputePodQOS), from a table. */
import { describe, expect, it } from 'vitest';
import { podLimitsLine, podQos } from '../../src/api/qos.ts';
import { basePod, ctr } from '../support/podFixtures.ts';

describe('podQos', () => {
  const withResources = (...resources: NonNullable<Parameters<typeof ctr>[1]>['resources'][]) =>
    basePod({ containers: resources.map((r, i) => ctr(`c${i}`, r ? { resources: r } : {})) });

  it.each([
    ['no requests or limits', withResources(undefined, undefined), 'BestEffort'],
    ['limits equal requests for cpu and memory', withResources({ requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } }), 'Guaranteed'],
    ['limits only (requests default to limits)', withResources({ limits: { cpu: '500m', memory: '256Mi' } }), 'Guaranteed'],
    ['requests only', withResources({ requests: { cpu: '100m' } }), 'Burstable'],
    ['requests below limits', withResources({ requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2', memory: '1Gi' } }), 'Burstable'],
    ['one guaranteed container next to one without resources', withResources({ limits: { cpu: '1', memory: '1Gi' } }, undefined), 'Burstable'],
    ['memory limit without cpu', withResources({ limits: { memory: '1Gi' } }), 'Burstable'],
    ['equal amounts written differently', withResources({ requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1000m', memory: '1024Mi' } }), 'Guaranteed'],
    ['only resources other than cpu and memory', withResources({ limits: { 'ephemeral-storage': '1Gi' } }), 'BestEffort'],
  ] as const)('%s ⇒ %s', (_name, pod, want) => {
    expect(podQos(pod)).toBe(want);
  });

  it('init containers count too', () => {
    const pod = basePod({ initContainers: [ctr('init', { resources: { requests: { cpu: '1' } } })] });
    expect(podQos(pod)).toBe('Burstable');
  });

  describe('with pod-level resources (PodLevelResources), which alone decide', () => {
    const podLevel = (resources: Record<string, unknown>, ...containers: NonNullable<Parameters<typeof ctr>[1]>['resources'][]) =>
      basePod({ resources, containers: containers.map((r, i) => ctr(`c${i}`, r ? { resources: r } : {})) } as Parameters<typeof basePod>[0]);

    it.each([
      ['pod limits only (requests default to them), containers asking nothing', podLevel({ limits: { cpu: '1', memory: '1Gi' } }, undefined), 'Guaranteed'],
      ['pod requests equal to pod limits, a container asking less', podLevel({ requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } }, { requests: { cpu: '100m' } }), 'Guaranteed'],
      ['pod requests only', podLevel({ requests: { cpu: '1', memory: '1Gi' } }, undefined), 'Burstable'],
      ['pod limits, a container requesting less of cpu (the pod request defaults to the containers\' sum)', podLevel({ limits: { cpu: '1', memory: '1Gi' } }, { requests: { cpu: '200m' } }), 'Burstable'],
      ['pod memory limit only', podLevel({ limits: { memory: '1Gi' } }, { limits: { cpu: '1', memory: '1Gi' } }), 'Burstable'],
      ['pod-level resources naming neither cpu, memory nor hugepages: the containers decide', podLevel({ limits: { 'ephemeral-storage': '1Gi' } }, { limits: { cpu: '1', memory: '1Gi' } }), 'Guaranteed'],
      ['empty pod-level resources: the containers decide', podLevel({}, undefined), 'BestEffort'],
    ] as const)('%s ⇒ %s', (_name, pod, want) => {
      expect(podQos(pod)).toBe(want);
    });
  });
});

describe('podLimitsLine', () => {
  it.each([
    ['nothing limited', basePod({ containers: [ctr('a')] }), ''],
    ['both, summed over the containers', basePod({ containers: [ctr('a', { resources: { limits: { cpu: '100m', memory: '64Mi' } } }), ctr('b', { resources: { limits: { cpu: '1', memory: '1Gi' } } })] }), 'cpu 1100m · memory 1088Mi'],
    ['memory only where one container leaves cpu unbounded', basePod({ containers: [ctr('a', { resources: { limits: { cpu: '1', memory: '1Gi' } } }), ctr('b', { resources: { limits: { memory: '1Gi' } } })] }), 'memory 2Gi'],
  ] as const)('%s', (_name, pod, want) => expect(podLimitsLine(pod)).toBe(want));
});
