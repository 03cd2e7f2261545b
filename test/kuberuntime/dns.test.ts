/** Pod DNS (pkg/kubelet/network/dns/dns.go), table-tested: policies, dnsConfig merge, limits, the host file. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { type NodeDns, parseResolvConf, podDns } from '../../src/kuberuntime/dns.ts';

const host = parseResolvConf('# the host\nnameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch old.example\nsearch corp.example. lab.example .\noptions timeout:2 attempts:3\n');
const node: NodeDns = { clusterDns: ['10.96.0.10'], clusterDomain: 'cluster.local', host };

function pod(spec: Record<string, unknown> = {}): Pod {
  return { metadata: { name: 'web', namespace: 'shop', uid: 'u1' }, spec: { containers: [{ name: 'c' }], ...spec } } as Pod;
}

describe('parseResolvConf', () => {
  it('collects nameservers, keeps the last search line without "." or trailing dots, and the last options', () => {
    expect(host).toEqual({ servers: ['192.0.2.53', '192.0.2.54'], searches: ['corp.example', 'lab.example'], options: ['timeout:2', 'attempts:3'] });
  });
});

describe('podDns', () => {
  it('ClusterFirst: the cluster servers, the cluster search path then the host one, ndots:5', () => {
    expect(podDns(pod(), node)).toEqual({
      config: { servers: ['10.96.0.10'], searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example'], options: ['ndots:5'] },
      warnings: [],
    });
  });

  it.each<[string, Record<string, unknown>]>([
    ['Default', { dnsPolicy: 'Default' }],
    ['ClusterFirst with hostNetwork', { hostNetwork: true }],
  ])('%s: the host file as it is', (_, spec) => {
    expect(podDns(pod(spec), node).config).toEqual(host);
  });

  it('ClusterFirstWithHostNet: the cluster servers even on the host network', () => {
    expect(podDns(pod({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }), node).config.servers).toEqual(['10.96.0.10']);
  });

  it('None: only the pod dnsConfig', () => {
    const spec = { dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'], searches: ['a.example'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] } };
    expect(podDns(pod(spec), node).config).toEqual({ servers: ['1.1.1.1'], searches: ['a.example'], options: ['ndots:2', 'edns0'] });
  });

  it('appends dnsConfig, dropping duplicates, the pod option winning by name', () => {
    const spec = { dnsConfig: { nameservers: ['10.96.0.10', '8.8.8.8'], searches: ['cluster.local', 'extra.example'], options: [{ name: 'ndots', value: '2' }] } };
    expect(podDns(pod(spec), node).config).toEqual({
      servers: ['10.96.0.10', '8.8.8.8'],
      searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example', 'extra.example'],
      options: ['ndots:2'],
    });
  });

  it('falls back to Default without cluster DNS, with the kubelet warning', () => {
    const result = podDns(pod(), { ...node, clusterDns: [] });
    expect(result.config).toEqual(host);
    expect(result.warnings).toEqual([expect.objectContaining({ reason: 'MissingClusterDNS', message: expect.stringContaining('Falling back to "Default" policy') })]);
  });

  it('Default with --resolv-conf "": the node itself as nameserver', () => {
    expect(podDns(pod({ dnsPolicy: 'Default' }), { ...node, host: null }).config).toEqual({ servers: ['127.0.0.1'], searches: ['.'], options: [] });
  });

  it('keeps 3 nameservers and 32 search domains, and says what it applied', () => {
    const spec = { dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1', '1.0.0.1', '8.8.8.8', '8.8.4.4'], searches: Array.from({ length: 40 }, (_, i) => `d${i}.example`) } };
    const result = podDns(pod(spec), node);
    expect(result.config.servers).toEqual(['1.1.1.1', '1.0.0.1', '8.8.8.8']);
    expect(result.config.searches).toHaveLength(32);
    expect(result.warnings.map((w) => w.reason)).toEqual(['DNSConfigForming', 'DNSConfigForming']);
    expect(result.warnings[0]!.message).toBe('Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 1.1.1.1 1.0.0.1 8.8.8.8');
  });
});
