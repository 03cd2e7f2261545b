/** Hostname, domain and the managed /etc/hosts (kubelet_pods.go managedHostsFileContent), table-tested. */
import { describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../src/api/types.ts';
import { managedHostsContent, mountsManagedHosts, podHostnameAndDomain, sandboxHostname } from '../../src/kuberuntime/hosts.ts';

const pod = (spec: Record<string, unknown> = {}, name = 'web'): Pod => ({ metadata: { name, namespace: 'shop', uid: 'u1' }, spec: { containers: [{ name: 'c' }], ...spec } }) as Pod;
const LOCAL = '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n';

describe('podHostnameAndDomain', () => {
  it.each<[string, Record<string, unknown>, string, { hostname: string; domain: string }]>([
    ['the pod name', {}, 'web', { hostname: 'web', domain: '' }],
    ['spec.hostname', { hostname: 'db-0' }, 'web', { hostname: 'db-0', domain: '' }],
    ['a subdomain', { hostname: 'db-0', subdomain: 'db' }, 'web', { hostname: 'db-0', domain: 'db.shop.svc.cluster.local' }],
    ['a long name cut to 63 without a trailing dash', {}, `${'a'.repeat(62)}-b`, { hostname: 'a'.repeat(62), domain: '' }],
    ['spec.hostnameOverride, over hostname and subdomain, with no domain', { hostnameOverride: 'my.host', hostname: 'db-0', subdomain: 'db' }, 'web', { hostname: 'my.host', domain: '' }],
    ['a 64-character hostnameOverride cut to 63 without a trailing dot', { hostnameOverride: `${'a'.repeat(62)}.b` }, 'web', { hostname: 'a'.repeat(62), domain: '' }],
  ])('%s', (_, spec, name, expected) => {
    expect(podHostnameAndDomain(pod(spec, name), 'cluster.local')).toEqual(expected);
  });
});

describe('sandboxHostname (GetNodenameForKernel)', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['the hostname alone without setHostnameAsFQDN', { hostname: 'db-0', subdomain: 'db' }, 'db-0'],
    ['the fully qualified name with it', { hostname: 'db-0', subdomain: 'db', setHostnameAsFQDN: true }, 'db-0.db.shop.svc.cluster.local'],
    ['the hostname alone without a subdomain, even with it', { hostname: 'db-0', setHostnameAsFQDN: true }, 'db-0'],
  ])('%s', (_, spec, expected) => {
    expect(sandboxHostname(pod(spec), 'cluster.local')).toBe(expected);
  });

  it('fails a fully qualified name longer than the kernel takes, as the kubelet words it', () => {
    const long = sandboxHostname(pod({ hostname: 'h'.repeat(40), subdomain: 'db', setHostnameAsFQDN: true }), 'cluster.local');
    expect(long).toEqual(new Error(`failed to construct FQDN from pod hostname and cluster domain, FQDN ${'h'.repeat(40)}.db.shop.svc.cluster.local is too long (64 characters is the max, 66 characters requested)`));
  });
});

describe('managedHostsContent', () => {
  it('names the pod on each of its IPs, with its domain when it has one, then the host aliases', () => {
    const p = pod({ hostAliases: [{ ip: '10.9.9.9', hostnames: ['api.local', 'api'] }] });
    expect(managedHostsContent(p, ['10.1.0.5', 'fd00::5'], { hostname: 'db-0', domain: 'db.shop.svc.cluster.local' }, '')).toBe(
      `${LOCAL}10.1.0.5\tdb-0.db.shop.svc.cluster.local\tdb-0\nfd00::5\tdb-0.db.shop.svc.cluster.local\tdb-0\n\n# Entries added by HostAliases.\n10.9.9.9\tapi.local\tapi\n`,
    );
    expect(managedHostsContent(pod(), ['10.1.0.5'], { hostname: 'web', domain: '' }, '')).toBe(`${LOCAL}10.1.0.5\tweb\n`);
  });

  it("gives a host-network pod the node's hosts file under the kubelet's header", () => {
    expect(managedHostsContent(pod({ hostNetwork: true }), ['192.0.2.10'], { hostname: 'web', domain: '' }, '127.0.0.1 localhost\n')).toBe(
      '# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n',
    );
  });
});

describe('mountsManagedHosts', () => {
  const c = (volumeMounts: Container['volumeMounts'] = []): Container => ({ name: 'c', volumeMounts });
  it.each([
    ['a pod with an IP', {}, [], ['10.1.0.5'], true],
    ['a pod without an IP yet', {}, [], [], false],
    ['a container mounting its own /etc/hosts', {}, [{ name: 'mine', mountPath: '/etc/hosts' }], ['10.1.0.5'], false],
    // Its sandbox reports no IP: the node's.
    ['a host-network pod', { hostNetwork: true }, [], [], true],
    ['a host-network container mounting its own /etc/hosts', { hostNetwork: true }, [{ name: 'mine', mountPath: '/etc/hosts' }], [], false],
  ] as const)('%s ⇒ %s', (_name, spec, mounts, ips, want) => {
    expect(mountsManagedHosts(pod(spec), c([...mounts]), ips)).toBe(want);
  });
});
