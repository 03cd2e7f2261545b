/**
 * The serving certificate's template from the Node's addresses (pkg/kubelet/certificate/kubelet.go
 * newGetTemplateFn, addressesToHostnamesAndIPs): CN `system:node:<name>`, O `system:nodes`, and as
 * SANs the `Hostname` (an IP if it parses as one), `InternalIP`/`ExternalIP` that parse, and
 * `InternalDNS`/`ExternalDNS`, without duplicates, sorted. No IP address: no template, so no
 * request (a DNS-only request needs the AllowDNSOnlyNodeCSR gate, off). Pure.
 */
import { isIP } from 'node:net';
import type { NodeAddress } from '../api/cluster.ts';
import { type CertificateTemplate, clientTemplate } from './csr.ts';

export function addressesToHostnamesAndIps(addresses: readonly NodeAddress[]): { dnsNames: string[]; ipAddresses: string[] } {
  const dns = new Set<string>();
  const ips = new Set<string>();
  for (const { type, address } of addresses) {
    if (!address) continue;
    if (type === 'Hostname') (isIP(address) ? ips : dns).add(address);
    else if ((type === 'InternalIP' || type === 'ExternalIP') && isIP(address)) ips.add(address);
    else if (type === 'InternalDNS' || type === 'ExternalDNS') dns.add(address);
  }
  return { dnsNames: [...dns].sort(), ipAddresses: [...ips].sort() };
}

export function servingTemplate(nodeName: string, addresses: readonly NodeAddress[]): CertificateTemplate | null {
  const sans = addressesToHostnamesAndIps(addresses);
  if (sans.ipAddresses.length === 0) return null;
  return { ...clientTemplate(nodeName), ...sans };
}
