/**
 * A pod's hostname and domain and its managed /etc/hosts, pure (pkg/kubelet/kubelet_pods.go
 * GeneratePodHostNameAndDomain, truncatePodHostnameIfNeeded, makeHostsMount,
 * managedHostsFileContent, nodeHostsFileContent, hostsEntriesFromHostAliases).
 *
 * The file is mounted into every container of a pod that has an IP, unless the container mounts
 * something of its own at /etc/hosts; it is written again at each container start.
 */
import type { Container, Pod } from '../api/types.ts';

export const ETC_HOSTS = '/etc/hosts';

/** A hostname cut to the kernel's 63 characters, without a trailing '-' or '.' (truncatePodHostnameIfNeeded). */
function truncated(hostname: string): string {
  return hostname.length <= 63 ? hostname : hostname.slice(0, 63).replace(/[-.]+$/, '');
}

/**
 * `spec.hostnameOverride` alone, with no domain, when set (HostnameOverride, GA in v1.37); else
 * `spec.hostname` or the pod name, with the domain when `spec.subdomain` is set; cut to 63
 * characters (GeneratePodHostNameAndDomain).
 */
export function podHostnameAndDomain(pod: Pod, clusterDomain: string): { hostname: string; domain: string } {
  if (pod.spec.hostnameOverride) return { hostname: truncated(pod.spec.hostnameOverride), domain: '' };
  const hostname = truncated(pod.spec.hostname || pod.metadata.name);
  const domain = pod.spec.subdomain ? `${pod.spec.subdomain}.${pod.metadata.namespace}.svc.${clusterDomain}` : '';
  return { hostname, domain };
}

/** The Linux nodename holds 64 characters (util.go GetNodenameForKernel). */
const FQDN_MAX = 64;

/**
 * The sandbox's hostname (kuberuntime_sandbox.go generatePodSandboxConfig, util.go
 * GetNodenameForKernel): the pod's hostname, or with `setHostnameAsFQDN` and a domain the fully
 * qualified name, which must fit the kernel's 64 characters.
 */
export function sandboxHostname(pod: Pod, clusterDomain: string): string | Error {
  const { hostname, domain } = podHostnameAndDomain(pod, clusterDomain);
  if (!domain || pod.spec.setHostnameAsFQDN !== true) return hostname;
  const fqdn = `${hostname}.${domain}`;
  if (fqdn.length > FQDN_MAX) {
    return new Error(`failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (${FQDN_MAX} characters is the max, ${fqdn.length} characters requested)`);
  }
  return fqdn;
}

/**
 * Whether the container gets the managed file: the pod has an IP or is on the host network (whose
 * sandbox reports none), and the container mounts nothing there (kubelet_pods.go shouldMountHostsFile).
 */
export function mountsManagedHosts(pod: Pod, container: Container, podIPs: readonly string[]): boolean {
  return (podIPs.length > 0 || pod.spec.hostNetwork === true) && !(container.volumeMounts ?? []).some((m) => m.mountPath === ETC_HOSTS);
}

type HostAlias = { ip?: string; hostnames?: string[] };

function aliasEntries(pod: Pod): string {
  const aliases = (pod.spec['hostAliases'] as HostAlias[] | undefined) ?? [];
  if (aliases.length === 0) return '';
  return `\n# Entries added by HostAliases.\n${aliases.map((a) => `${a.ip ?? ''}\t${(a.hostnames ?? []).join('\t')}\n`).join('')}`;
}

/**
 * The file's content. On the pod network: localhost lines and one line per pod IP naming the pod;
 * on the host network: the node's own hosts file (`nodeHosts`) under the kubelet's header. Then the
 * pod's hostAliases either way.
 */
export function managedHostsContent(pod: Pod, podIPs: readonly string[], names: { hostname: string; domain: string }, nodeHosts: string): string {
  if (pod.spec.hostNetwork) return `# Kubernetes-managed hosts file (host network).\n${nodeHosts}${aliasEntries(pod)}`;
  const { hostname, domain } = names;
  let text =
    '# Kubernetes-managed hosts file.\n' +
    '127.0.0.1\tlocalhost\n' +
    '::1\tlocalhost ip6-localhost ip6-loopback\n' +
    'fe00::0\tip6-localnet\n' +
    'fe00::0\tip6-mcastprefix\n' +
    'fe00::1\tip6-allnodes\n' +
    'fe00::2\tip6-allrouters\n';
  for (const ip of podIPs) text += domain ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  return text + aliasEntries(pod);
}
