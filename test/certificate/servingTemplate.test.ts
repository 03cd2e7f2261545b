import { describe, expect, it } from 'vitest';
import type { NodeAddress } from '../../src/api/cluster.ts';
import { servingTemplate } from '../../src/certificate/servingTemplate.ts';

const a = (type: string, address: string) => ({ type, address }) as NodeAddress;

describe('servingTemplate (kubelet.go newGetTemplateFn, addressesToHostnamesAndIPs)', () => {
  it.each([
    { name: 'hostname and internal IP', addresses: [a('InternalIP', '10.0.0.5'), a('Hostname', 'node-a')], dns: ['node-a'], ips: ['10.0.0.5'] },
    { name: 'a hostname that is an IP counts as an IP', addresses: [a('Hostname', '10.0.0.7'), a('InternalIP', '10.0.0.5')], dns: [], ips: ['10.0.0.5', '10.0.0.7'] },
    { name: 'DNS addresses, duplicates once, sorted', addresses: [a('ExternalDNS', 'z.example'), a('InternalDNS', 'a.example'), a('Hostname', 'a.example'), a('ExternalIP', '192.168.0.1'), a('InternalIP', '192.168.0.1')], dns: ['a.example', 'z.example'], ips: ['192.168.0.1'] },
    { name: 'IPs that do not parse and empty addresses are dropped', addresses: [a('InternalIP', 'not-an-ip'), a('InternalIP', ''), a('InternalIP', 'fd00::1')], dns: [], ips: ['fd00::1'] },
  ])('$name', ({ addresses, dns, ips }) => {
    expect(servingTemplate('node-a', addresses)).toEqual({ commonName: 'system:node:node-a', organizations: ['system:nodes'], dnsNames: dns, ipAddresses: ips });
  });

  it.each([
    { name: 'no addresses', addresses: [] },
    { name: 'only DNS names (AllowDNSOnlyNodeCSR is off)', addresses: [a('Hostname', 'node-a'), a('InternalDNS', 'node-a.local')] },
  ])('asks for nothing with $name', ({ addresses }) => {
    expect(servingTemplate('node-a', addresses)).toBeNull();
  });
});
