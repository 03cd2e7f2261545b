/** The page size of an emptyDir on huge pages (hugePages.ts, empty_dir.go getPageSizeMountOption), from a table. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { hugePageSize, isHugePageMedium } from '../../src/volumes/hugePages.ts';

const pod = (containers: Record<string, string>[], podLevel?: Record<string, string>, init: Record<string, string>[] = []): Pod =>
  ({
    metadata: { name: 'p', namespace: 'default', uid: 'u' },
    spec: {
      ...(podLevel ? { resources: { requests: podLevel } } : {}),
      containers: containers.map((requests, i) => ({ name: `c${i}`, resources: { requests } })),
      initContainers: init.map((requests, i) => ({ name: `i${i}`, resources: { requests } })),
    },
  }) as unknown as Pod;

describe('hugePageSize', () => {
  it.each<[string, string, Pod, ReturnType<typeof hugePageSize>]>([
    ['HugePages: the one size requested', 'HugePages', pod([{ 'hugepages-2Mi': '4Mi' }]), { pageSize: '2Mi' }],
    ['HugePages: the same size in two containers', 'HugePages', pod([{ 'hugepages-2Mi': '4Mi' }, { 'hugepages-2Mi': '2Mi' }]), { pageSize: '2Mi' }],
    ['HugePages: an init container\'s request counts', 'HugePages', pod([{ cpu: '1' }], undefined, [{ 'hugepages-1Gi': '1Gi' }]), { pageSize: '1Gi' }],
    ['HugePages: a pod-level request counts', 'HugePages', pod([{}], { 'hugepages-1Gi': '2Gi' }), { pageSize: '1Gi' }],
    ['HugePages: two sizes', 'HugePages', pod([{ 'hugepages-2Mi': '4Mi', 'hugepages-1Gi': '1Gi' }]), { error: "medium: HugePages can't be used if container requests multiple huge page sizes" }],
    ['HugePages: none requested', 'HugePages', pod([{ memory: '1Gi' }]), { error: 'medium HugePages: hugePages storage requested, but there is no resource request for huge pages' }],
    ['HugePages-2Mi: that size among others', 'HugePages-2Mi', pod([{ 'hugepages-2Mi': '4Mi', 'hugepages-1Gi': '1Gi' }]), { pageSize: '2Mi' }],
    ['HugePages-2048Ki: the same size written otherwise', 'HugePages-2048Ki', pod([{ 'hugepages-2Mi': '4Mi' }]), { pageSize: '2Mi' }],
    ['HugePages-1Gi: not requested', 'HugePages-1Gi', pod([{ 'hugepages-2Mi': '4Mi' }]), { error: 'medium HugePages-1Gi: hugePages storage requested, but there is no resource request for huge pages' }],
  ])('%s', (_name, medium, p, want) => {
    expect(hugePageSize(medium, p)).toEqual(want);
  });

  it('knows the huge page media, and no others', () => {
    expect(['HugePages', 'HugePages-2Mi', 'HugePages-1Gi'].map(isHugePageMedium)).toEqual([true, true, true]);
    expect(['', 'Memory', 'hugepages', undefined].map(isHugePageMedium)).toEqual([false, false, false, false]);
  });
});
