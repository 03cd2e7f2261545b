/**
 * Where sim:// pod sandboxes get their addresses. The servers of a simulated pod really listen on
 * its address, so an address must be one this host can bind:
 *
 * - a **pod CIDR** (the node's, given with CRI UpdateRuntimeConfig as the kubelet forwards
 *   `--pod-cidr` or the Node's `spec.podCIDRs`, or sim's default range) once the range is local to
 *   the host (localRange.ts: one `local` route on `lo`, Linux's "AnyIP"). These are addresses the
 *   API server accepts in EndpointSlices, and every process on the host reaches them.
 * - **loopback** 127.b.c.d addresses otherwise: bindable by anyone, but refused by the API server
 *   as endpoints (it takes no loopback address for a Service).
 *
 * Allocation starts at a random point of the range, so that runtimes sharing one range (parallel
 * test workers, several simulated nodes on the default range) rarely hand out the same address;
 * within one runtime an address is never given twice while its sandbox lives.
 */
import { randomInt } from 'node:crypto';
import net from 'node:net';

/** A set of addresses sandboxes can have, numbered 0..size-1. */
export interface AddressRange {
  /** What it is, for messages: the CIDR, or `loopback`. */
  readonly name: string;
  readonly size: number;
  address(n: number): string;
}

/** 127.b.c.d with b in 1..255 and d in 1..254: every loopback address but 127.0.x.x. */
export const LOOPBACK_RANGE: AddressRange = {
  name: 'loopback (127.0.0.0/8)',
  size: 255 * 256 * 254,
  address: (n) => `127.${1 + Math.floor(n / (256 * 254))}.${Math.floor(n / 254) % 256}.${1 + (n % 254)}`,
};

/**
 * The range sim:// uses when it is given no pod CIDR: 198.18.0.0/15, which RFC 2544 sets aside for
 * benchmarking network devices. No real network routes it, so making it local to the host hides
 * nothing, and the API server takes its addresses as endpoints (it refuses loopback ones).
 */
export const DEFAULT_POD_CIDR = '198.18.0.0/15';

/** An IPv4 address as its dotted text (0 … 2³²−1). */
export const toDotted = (value: number) => [Math.floor(value / 2 ** 24) % 256, Math.floor(value / 2 ** 16) % 256, Math.floor(value / 256) % 256, value % 256].join('.');

/** A dotted IPv4 address as a number; null for anything else. */
export function fromDotted(text: string): number | null {
  if (!net.isIPv4(text)) return null;
  return text.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

/**
 * The pod addresses of an IPv4 CIDR, as a bridge network with host-local IPAM gives them: the
 * network address, the first host (the bridge's gateway) and the broadcast address are never a
 * pod's. An error names what is wrong with the text; a range under 4 addresses has no pod address.
 */
export function cidrRange(cidr: string): AddressRange | Error {
  const slash = cidr.indexOf('/');
  const ip = slash < 0 ? '' : cidr.slice(0, slash);
  const prefixText = slash < 0 ? '' : cidr.slice(slash + 1);
  if (net.isIPv4(ip) === false || !/^\d{1,2}$/.test(prefixText)) return new Error(`"${cidr}" is not an IPv4 CIDR such as 10.244.1.0/24`);
  const prefix = Number(prefixText);
  if (prefix > 30) return new Error(`${cidr} has no address for a pod: a pod CIDR needs a prefix of /30 or shorter`);
  const size = 2 ** (32 - prefix);
  const base = Math.floor(fromDotted(ip)! / size) * size;
  const normalized = `${toDotted(base)}/${prefix}`;
  return { name: normalized, size: size - 3, address: (n) => toDotted(base + 2 + n) };
}

/** The IPv4 entry of a pod CIDR list as the kubelet sends it (`10.244.1.0/24,fd00:1::/64`); null: none. */
export function ipv4Cidr(podCidrs: string): string | null {
  return podCidrs.split(',').map((part) => part.trim()).find((part) => net.isIPv4(part.split('/')[0] ?? '')) ?? null;
}

/** The addresses of live sandboxes, and the range new ones come from. */
export class PodAddresses {
  private next: number;
  private readonly inUse = new Set<string>();

  constructor(private current: AddressRange = LOOPBACK_RANGE) {
    this.next = randomInt(current.size);
  }

  get range(): AddressRange {
    return this.current;
  }

  /** New sandboxes take their addresses from `range`; those already given stay with their sandboxes. */
  use(range: AddressRange): void {
    this.current = range;
    this.next = randomInt(range.size);
  }

  /** A free address of the range, or null when every one is taken. */
  allocate(): string | null {
    const { size } = this.current;
    for (let tries = 0; tries < size; tries++) {
      const ip = this.current.address(this.next);
      this.next = (this.next + 1) % size;
      if (!this.inUse.has(ip)) {
        this.inUse.add(ip);
        return ip;
      }
    }
    return null;
  }

  release(ip: string): void {
    this.inUse.delete(ip);
  }
}
