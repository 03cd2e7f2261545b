/**
 * The downward API, pure: what a pod may learn about itself through environment variables and
 * downwardAPI volumes (pkg/kubelet/kubelet_pods.go podFieldSelectorRuntimeValue,
 * containerResourceRuntimeValue; pkg/fieldpath/fieldpath.go; pkg/api/v1/resource/helpers.go).
 * Unsupported references come back as an Error naming them; the caller decides what that fails.
 */
import { amount, type ResourceAmounts } from './quantity.ts';
import type { Container, EnvVarSource, Pod } from './types.ts';

const MAP_KEY = /^metadata\.(labels|annotations)\['(.*)'\]$/;

/** A field of the pod; the IPs are this sync's (pod) and the node's (host). */
export function podFieldValue(pod: Pod, fieldPath: string, ips: { podIPs: readonly string[]; hostIPs: readonly string[] }): string | Error {
  switch (fieldPath) {
    case 'metadata.name':
      return pod.metadata.name;
    case 'metadata.namespace':
      return pod.metadata.namespace;
    case 'metadata.uid':
      return pod.metadata.uid;
    case 'spec.nodeName':
      return pod.spec.nodeName ?? '';
    case 'spec.serviceAccountName':
      return String(pod.spec['serviceAccountName'] ?? '');
    case 'spec.terminationGracePeriodSeconds':
      return String(pod.spec.terminationGracePeriodSeconds ?? 30);
    case 'status.hostIP':
      return ips.hostIPs[0] ?? '';
    case 'status.hostIPs':
      return ips.hostIPs.join(',');
    case 'status.podIP':
      return ips.podIPs[0] ?? '';
    case 'status.podIPs':
      return ips.podIPs.join(',');
  }
  const match = MAP_KEY.exec(fieldPath);
  if (match) {
    const map = match[1] === 'labels' ? pod.metadata.labels : pod.metadata.annotations;
    return map?.[match[2]!] ?? '';
  }
  return new Error(`unsupported fieldPath: ${fieldPath}`);
}

/** A whole label or annotation map as a downwardAPI file: `key="value"` lines, sorted, values quoted (as Go's %q quotes printable text). */
export function formatMap(map: Readonly<Record<string, string>> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((key) => `${key}=${JSON.stringify(map![key])}`)
    .join('\n');
}

const RESOURCE = /^(limits|requests)\.(cpu|memory|ephemeral-storage|hugepages-.+)$/;

/**
 * A container's resource: ceiling(quantity / divisor), cpu in millicores; a limit the container
 * does not set is the node's allocatable. `container` is the default when the ref names none.
 */
export function containerResourceValue(
  pod: Pod,
  container: Container | undefined,
  ref: NonNullable<EnvVarSource['resourceFieldRef']>,
  allocatable: ResourceAmounts | undefined,
): string | Error {
  const match = RESOURCE.exec(ref.resource);
  if (!match) return new Error(`unsupported container resource : ${ref.resource}`);
  const [, kind, name] = match as unknown as [string, 'limits' | 'requests', string];
  const target = ref.containerName ? [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find((c) => c.name === ref.containerName) : container;
  if (!target) return new Error(`cannot find container ${ref.containerName ?? ''}`);
  const set = target.resources?.[kind]?.[name];
  const value = set !== undefined ? amount(name, set) : kind === 'limits' ? (allocatable?.[name] ?? 0) : 0;
  // The API server defaults a volume item's divisor to "0"; zero means 1, as unset does
  // (pkg/api/v1/resource/helpers.go ExtractContainerResourceValue).
  const given = ref.divisor === undefined || ref.divisor === '' ? 0 : amount(name, ref.divisor);
  if (given < 0 || Number.isNaN(given)) return new Error(`invalid divisor for ${ref.resource}: ${ref.divisor}`);
  const divisor = given === 0 ? amount(name, 1) : given;
  return String(Math.ceil(value / divisor));
}
