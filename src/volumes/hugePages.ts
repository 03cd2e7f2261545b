/**
 * The page size of an emptyDir on huge pages (pkg/volume/emptydir/empty_dir.go
 * getPageSizeMountOption), pure: `medium: HugePages` takes the one huge page size the pod
 * requests (pod-level requests, then its containers', init containers too), and
 * `HugePages-<size>` that size, which the pod must request. The mount is a hugetlbfs with
 * `pagesize=<size>` (setupHugepages; mounter.ts).
 */
import { quantityValue } from '../api/quantity.ts';
import type { Pod } from '../api/types.ts';

const HUGE_PAGES = 'HugePages';
const HUGE_PAGE_RESOURCE = 'hugepages-';

/** A medium of huge pages: `HugePages` or `HugePages-<size>` (v1helper.IsHugePageMedium). */
export function isHugePageMedium(medium: string | undefined): boolean {
  return medium === HUGE_PAGES || (medium?.startsWith(`${HUGE_PAGES}-`) ?? false);
}

/** The hugetlbfs page size for the volume (`2Mi`), or the kubelet's error. */
export function hugePageSize(medium: string, pod: Pod): { pageSize: string } | { error: string } {
  const wanted = medium === HUGE_PAGES ? undefined : medium.slice(HUGE_PAGES.length + 1);
  const requests = [pod.spec.resources?.requests, ...[...pod.spec.containers, ...(pod.spec.initContainers ?? [])].map((c) => c.resources?.requests)];
  let found: string | undefined;
  for (const list of requests) {
    for (const name of Object.keys(list ?? {})) {
      if (!name.startsWith(HUGE_PAGE_RESOURCE)) continue;
      const size = name.slice(HUGE_PAGE_RESOURCE.length);
      if (wanted === undefined) {
        if (found !== undefined && quantityValue(found) !== quantityValue(size)) {
          return { error: `medium: ${medium} can't be used if container requests multiple huge page sizes` };
        }
        found = size;
      } else if (quantityValue(size) === quantityValue(wanted)) found = size;
    }
  }
  if (found === undefined) return { error: `medium ${medium}: hugePages storage requested, but there is no resource request for huge pages` };
  return { pageSize: found };
}
