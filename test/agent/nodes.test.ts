/** `--nodes=N`: one node's settings divided among N simulated nodes (src/agent/nodes.ts), from tables. */
import { describe, expect, it } from 'vitest';
import { nodeConfigs, splitPodCidr } from '../../src/agent/nodes.ts';
import type { AgentConfig } from '../../src/cli/config.ts';
import { parseCommandLine } from '../../src/cli/flags.ts';

function config(argv: string[]): AgentConfig {
  const result = parseCommandLine(['--container-runtime-endpoint=sim://', ...argv], { hostname: () => 'box' });
  if (result.kind !== 'run') throw new Error(`expected a run result, got ${result.kind}`);
  return result.config;
}

describe('the settings of N simulated nodes', () => {
  it('names the nodes after --hostname-override, each at its own address with the same ports, its own directories and credentials; one visualizer for the process', () => {
    const nodes = nodeConfigs(
      config(['--nodes=3', '--hostname-override=hollow', '--node-ip=127.0.0.254', '--root-dir=/var/lib/statelet', '--pod-logs-dir=/var/log/pods', '--kubeconfig=/etc/hollow/{node}.kubeconfig', '--port=20250', '--read-only-port=0', '--visualizer-port=10260']),
    );
    if (nodes instanceof Error) throw nodes;
    expect(nodes.map((n) => [n.nodeName, n.hostnameOverride, n.nodeIp, n.address, n.readOnlyAddress, n.healthzBindAddress, n.rootDir, n.podLogsDir, n.kubeconfig, n.port, n.readOnlyPort, n.healthzPort, n.visualizerPort, n.nodes])).toEqual([
      ['hollow-0', 'hollow-0', '127.0.0.254', '127.0.0.254', '127.0.0.254', '127.0.0.254', '/var/lib/statelet/hollow-0', '/var/log/pods/hollow-0', '/etc/hollow/hollow-0.kubeconfig', 20250, 0, 10248, 0, 1],
      ['hollow-1', 'hollow-1', '127.0.0.255', '127.0.0.255', '127.0.0.255', '127.0.0.255', '/var/lib/statelet/hollow-1', '/var/log/pods/hollow-1', '/etc/hollow/hollow-1.kubeconfig', 20250, 0, 10248, 0, 1],
      ['hollow-2', 'hollow-2', '127.0.1.0', '127.0.1.0', '127.0.1.0', '127.0.1.0', '/var/lib/statelet/hollow-2', '/var/log/pods/hollow-2', '/etc/hollow/hollow-2.kubeconfig', 20250, 0, 10248, 0, 1],
    ]);
  });

  it('without --node-ip the nodes are at 127.0.1.1 and on', () => {
    const nodes = nodeConfigs(config(['--nodes=2']));
    if (nodes instanceof Error) throw nodes;
    expect(nodes.map((n) => n.nodeIp)).toEqual(['127.0.1.1', '127.0.1.2']);
  });

  it('a kubeconfig without {node} is one credential every node uses', () => {
    const nodes = nodeConfigs(config(['--nodes=2', '--kubeconfig=/etc/admin.kubeconfig']));
    if (nodes instanceof Error) throw nodes;
    expect(nodes.map((n) => [n.nodeName, n.kubeconfig])).toEqual([['box-0', '/etc/admin.kubeconfig'], ['box-1', '/etc/admin.kubeconfig']]);
  });

  it('bootstraps each node into its own kubeconfig and cert dir; a shared kubeconfig with --bootstrap-kubeconfig is refused', () => {
    const nodes = nodeConfigs(config(['--nodes=2', '--root-dir=/r', '--bootstrap-kubeconfig=/etc/bootstrap.conf', '--kubeconfig=/etc/kubelet-{node}.conf', '--rotate-certificates']));
    if (nodes instanceof Error) throw nodes;
    expect(nodes.map((n) => [n.kubeconfig, n.bootstrapKubeconfig, n.certDir, n.rootDir])).toEqual([
      ['/etc/kubelet-box-0.conf', '/etc/bootstrap.conf', undefined, '/r/box-0'],
      ['/etc/kubelet-box-1.conf', '/etc/bootstrap.conf', undefined, '/r/box-1'],
    ]);
    const withCertDir = nodeConfigs(config(['--nodes=2', '--cert-dir=/pki', '--kubeconfig=/etc/kubelet-{node}.conf']));
    if (withCertDir instanceof Error) throw withCertDir;
    expect(withCertDir.map((n) => n.certDir)).toEqual(['/pki/box-0', '/pki/box-1']);
    const shared = nodeConfigs(config(['--nodes=2', '--bootstrap-kubeconfig=/etc/bootstrap.conf', '--kubeconfig=/etc/kubelet.conf']));
    expect(shared).toBeInstanceOf(Error);
    expect((shared as Error).message).toBe('--kubeconfig=/etc/kubelet.conf: with --nodes and --bootstrap-kubeconfig each node writes its own kubeconfig; put {node} in its path for the node\'s name');
  });

  it('divides --pod-cidr as node IPAM divides a cluster CIDR; no --pod-cidr stays none', () => {
    const nodes = nodeConfigs(config(['--nodes=3', '--pod-cidr=10.244.0.0/16']));
    if (nodes instanceof Error) throw nodes;
    expect(nodes.map((n) => n.podCidr)).toEqual(['10.244.0.0/18', '10.244.64.0/18', '10.244.128.0/18']);
    const none = nodeConfigs(config(['--nodes=2']));
    if (none instanceof Error) throw none;
    expect(none.map((n) => n.podCidr)).toEqual([undefined, undefined]);
  });

  it('refuses addresses and a pod CIDR it cannot divide, naming the flag', () => {
    expect(String(nodeConfigs(config(['--nodes=2', '--node-ip=fd00::1'])))).toBe('Error: --node-ip=fd00::1: with --nodes it must be one IPv4 address, the first node\'s (the next nodes take the next addresses)');
    expect(String(nodeConfigs(config(['--nodes=3', '--node-ip=255.255.255.254'])))).toBe('Error: --node-ip=255.255.255.254: 3 nodes run past 255.255.255.255');
    expect(String(nodeConfigs(config(['--nodes=2', '--pod-cidr=10.1.0.0/16,fd00::/64'])))).toMatch(/--pod-cidr=10\.1\.0\.0\/16,fd00::\/64: with --nodes it must be one IPv4 range/);
  });
});

describe('dividing a pod CIDR', () => {
  it.each([
    ['10.244.0.0/16', 1, ['10.244.0.0/16']],
    ['10.244.0.0/16', 2, ['10.244.0.0/17', '10.244.128.0/17']],
    ['10.244.7.9/16', 4, ['10.244.0.0/18', '10.244.64.0/18', '10.244.128.0/18', '10.244.192.0/18']],
    ['10.0.0.0/8', 256, Array.from({ length: 256 }, (_, i) => `10.${i}.0.0/16`)],
    ['192.168.0.0/24', 64, Array.from({ length: 64 }, (_, i) => `192.168.0.${i * 4}/30`)],
    ['0.0.0.0/0', 2, ['0.0.0.0/1', '128.0.0.0/1']],
  ])('%s for %i nodes', (cidr, count, parts) => {
    expect(splitPodCidr(cidr, count)).toEqual(parts);
  });

  it('refuses a range too small for the nodes', () => {
    expect(String(splitPodCidr('192.168.0.0/24', 65))).toBe('Error: --pod-cidr=192.168.0.0/24: 65 nodes need a /23 or wider, so that each gets a /30 or wider');
  });
});

describe('the --nodes flag', () => {
  it('refuses the servers\' addresses: each node serves on its own', () => {
    for (const flag of ['--address=0.0.0.0', '--read-only-address=127.0.0.1', '--healthz-bind-address=127.0.0.1']) {
      expect(() => config(['--nodes=2', flag])).toThrow(`--${flag.slice(2, flag.indexOf('='))}: is not for --nodes: each node's servers listen on the node's own address (--node-ip, then the next ones)`);
    }
    expect(config(['--nodes=1', '--address=0.0.0.0']).address).toBe('0.0.0.0');
  });

  it('needs sim://', () => {
    expect(() => parseCommandLine(['--nodes=2', '--container-runtime-endpoint=unix:///run/containerd/containerd.sock'], { hostname: () => 'box' })).toThrow(
      '--nodes: runs simulated nodes, each with a sim:// runtime of its own: it needs --container-runtime-endpoint=sim://',
    );
  });
});
