/**
 * A pod's DNS configuration, handed to the runtime in the sandbox config (CRI DNSConfig; the
 * runtime writes the sandbox's resolv.conf), pure (pkg/kubelet/network/dns/dns.go
 * GetPodDNS, parseResolvConf, appendDNSConfig, CheckLimitsForResolvConf):
 *
 * - `None`: only `spec.dnsConfig`;
 * - `ClusterFirst` on the pod network, or `ClusterFirstWithHostNet`: the cluster's nameservers
 *   (--cluster-dns), the search path `<ns>.svc.<domain> svc.<domain> <domain>` then the host's,
 *   and `ndots:5`; without cluster DNS it falls back to `Default` (with a warning);
 * - `Default`, or `ClusterFirst` with hostNetwork: the host's resolver file (--resolv-conf);
 * - then `spec.dnsConfig` is appended (options by name, the pod's value winning) and the kubelet's
 *   limits applied: 3 nameservers, 32 search domains of at most 2048 characters together.
 */
import type { Pod } from '../api/types.ts';
import type { DnsConfig } from '../runtime/types.ts';

export interface NodeDns {
  /** --cluster-dns. */
  clusterDns: string[];
  /** --cluster-domain (empty: none). */
  clusterDomain: string;
  /** The host's resolver file (--resolv-conf), parsed; null when --resolv-conf is "". */
  host: DnsConfig | null;
}

const MAX_NAMESERVERS = 3;
const MAX_SEARCHES = 32;
const MAX_SEARCH_CHARS = 2048;
const MAX_DOMAIN_CHARS = 253;

/** Parses a resolv.conf: nameservers accumulate, the last `search` and `options` lines win. */
export function parseResolvConf(text: string): DnsConfig {
  const servers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const [keyword, ...fields] = line.split(/\s+/);
    if (keyword === 'nameserver' && fields[0]) servers.push(fields[0]);
    else if (keyword === 'search') searches = fields.filter((f) => f !== '.').map((f) => f.replace(/\.$/, ''));
    else if (keyword === 'options') options = fields;
  }
  return { servers, searches, options };
}

type DnsPolicy = 'ClusterFirst' | 'ClusterFirstWithHostNet' | 'Default' | 'None';

interface PodDns {
  config: DnsConfig;
  /** What the kubelet warns about (event reasons MissingClusterDNS, DNSConfigForming): reason and message. */
  warnings: { reason: string; message: string }[];
}

const unique = (list: readonly string[]) => [...new Set(list)];

function hostBase(node: NodeDns): DnsConfig {
  // `--resolv-conf ""`: the node's own resolver only (dns.go, the kubelet's default for an empty file).
  return node.host ? { servers: [...node.host.servers], searches: [...node.host.searches], options: [...node.host.options] } : { servers: ['127.0.0.1'], searches: ['.'], options: [] };
}

function mergeOptions(base: readonly string[], extra: readonly { name?: string; value?: string }[]): string[] {
  const byName = new Map<string, string>();
  for (const option of base) byName.set(option.split(':')[0]!, option);
  for (const option of extra) if (option.name) byName.set(option.name, option.value !== undefined ? `${option.name}:${option.value}` : option.name);
  return [...byName.values()];
}

export function podDns(pod: Pod, node: NodeDns): PodDns {
  const warnings: PodDns['warnings'] = [];
  let policy = (pod.spec['dnsPolicy'] as DnsPolicy | undefined) ?? 'ClusterFirst';
  if (policy === 'ClusterFirst' && pod.spec.hostNetwork) policy = 'Default';
  if ((policy === 'ClusterFirst' || policy === 'ClusterFirstWithHostNet') && node.clusterDns.length === 0) {
    warnings.push({
      reason: 'MissingClusterDNS',
      message: `pod: "${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})". kubelet does not have ClusterDNS IP configured and cannot create Pod using "${policy}" policy. Falling back to "Default" policy.`,
    });
    policy = 'Default';
  }
  let config: DnsConfig;
  if (policy === 'None') config = { servers: [], searches: [], options: [] };
  else if (policy === 'Default') config = hostBase(node);
  else {
    const host = hostBase(node);
    const domain = node.clusterDomain;
    const clusterSearch = domain ? [`${pod.metadata.namespace}.svc.${domain}`, `svc.${domain}`, domain] : [];
    config = { servers: [...node.clusterDns], searches: unique([...clusterSearch, ...host.searches.filter((s) => s !== '.')]), options: ['ndots:5'] };
  }
  const extra = pod.spec['dnsConfig'] as { nameservers?: string[]; searches?: string[]; options?: { name?: string; value?: string }[] } | undefined;
  if (extra) {
    config = {
      servers: unique([...config.servers, ...(extra.nameservers ?? [])]),
      searches: unique([...config.searches, ...(extra.searches ?? [])]),
      options: mergeOptions(config.options, extra.options ?? []),
    };
  }
  return { config: withinLimits(config, warnings), warnings };
}

/** CheckLimitsForResolvConf: cut from the end, saying so. */
function withinLimits(config: DnsConfig, warnings: PodDns['warnings']): DnsConfig {
  let { servers, searches } = config;
  if (servers.length > MAX_NAMESERVERS) {
    servers = servers.slice(0, MAX_NAMESERVERS);
    warnings.push({ reason: 'DNSConfigForming', message: `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${servers.join(' ')}` });
  }
  const kept = searches.filter((s) => s.length <= MAX_DOMAIN_CHARS);
  let trimmed = kept.length !== searches.length;
  searches = kept;
  while (searches.length > MAX_SEARCHES || (searches.length > 0 && searches.join(' ').length > MAX_SEARCH_CHARS)) {
    searches = searches.slice(0, -1);
    trimmed = true;
  }
  if (trimmed) warnings.push({ reason: 'DNSConfigForming', message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${searches.join(' ')}` });
  return { servers, searches, options: config.options };
}
