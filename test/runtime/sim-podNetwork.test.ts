/**
 * sim://'s pod addresses: from the pod CIDR the runtime is told (CRI UpdateRuntimeConfig) once the
 * range is local to the host, else loopback; pods reach each other's servers by address with
 * `wget`. Making a range local needs root: as root (CI) the route is made and removed; otherwise
 * the runtime says why it keeps loopback addresses.
 */
import { randomInt } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { canBind } from '../../src/runtime/sim/localRange.ts';
import { LOOPBACK_RANGE, PodAddresses, cidrRange, ipv4Cidr } from '../../src/runtime/sim/podAddresses.ts';
import { startSimRuntime, type SimRuntime } from '../../src/runtime/sim/server.ts';
import { NamespaceMode } from '../../src/runtime/types.ts';
import { containerConfig, networkNamespace, podSandboxConfig, rejection } from './support.ts';

describe('pod address ranges', () => {
  it('a CIDR gives every address but the network, the gateway and the broadcast', () => {
    const cases: [string, string, number, string, string][] = [
      // CIDR, normalized, size, first, last
      ['10.244.1.0/24', '10.244.1.0/24', 253, '10.244.1.2', '10.244.1.254'],
      ['10.244.1.77/24', '10.244.1.0/24', 253, '10.244.1.2', '10.244.1.254'],
      ['198.18.0.0/15', '198.18.0.0/15', 131_069, '198.18.0.2', '198.19.255.254'],
      ['192.168.5.4/30', '192.168.5.4/30', 1, '192.168.5.6', '192.168.5.6'],
      ['0.0.0.0/0', '0.0.0.0/0', 2 ** 32 - 3, '0.0.0.2', '255.255.255.254'],
    ];
    for (const [cidr, name, size, first, last] of cases) {
      const range = cidrRange(cidr);
      if (range instanceof Error) throw range;
      expect([cidr, range.name, range.size, range.address(0), range.address(range.size - 1)]).toEqual([cidr, name, size, first, last]);
    }
  });

  it('refuses what is not an IPv4 CIDR with a pod address', () => {
    const cases: [string, RegExp][] = [
      ['10.244.1.0', /not an IPv4 CIDR/],
      ['10.244.1.0/', /not an IPv4 CIDR/],
      ['10.244.1/24', /not an IPv4 CIDR/],
      ['fd00::/64', /not an IPv4 CIDR/],
      ['10.0.0.0/31', /needs a prefix of \/30 or shorter/],
      ['10.0.0.0/33', /needs a prefix of \/30 or shorter/],
    ];
    for (const [cidr, message] of cases) expect([cidr, String(cidrRange(cidr))]).toEqual([cidr, expect.stringMatching(message)]);
  });

  it('takes the IPv4 entry of a dual-stack list', () => {
    expect(ipv4Cidr('10.244.1.0/24')).toBe('10.244.1.0/24');
    expect(ipv4Cidr('fd00:1::/64,10.244.1.0/24')).toBe('10.244.1.0/24');
    expect(ipv4Cidr('fd00:1::/64')).toBeNull();
  });

  it('never gives an address twice while it is in use, gives it again once released, and says when none is left', () => {
    const range = cidrRange('10.9.0.0/29');
    if (range instanceof Error) throw range;
    const addresses = new PodAddresses(range);
    const given = [1, 2, 3, 4, 5].map(() => addresses.allocate());
    expect(new Set(given).size).toBe(5);
    expect(given.every((ip) => ip !== null && /^10\.9\.0\.[2-6]$/.test(ip))).toBe(true);
    expect(addresses.allocate()).toBeNull();
    addresses.release(given[2]!);
    expect(addresses.allocate()).toBe(given[2]);
  });

  it('loopback addresses are 127.b.c.d, never 127.0.x.x, never .0 or .255', () => {
    for (const n of [0, 253, 254, 256 * 254 - 1, 256 * 254, LOOPBACK_RANGE.size - 1]) {
      expect(LOOPBACK_RANGE.address(n)).toMatch(/^127\.([1-9]\d*)\.\d+\.([1-9]\d?|1\d\d|2[0-4]\d|25[0-4])$/);
    }
    expect(LOOPBACK_RANGE.address(0)).toBe('127.1.0.1');
    expect(LOOPBACK_RANGE.address(LOOPBACK_RANGE.size - 1)).toBe('127.255.255.254');
  });
});

describe('sim:// pod addresses from the pod CIDR', () => {
  const root = process.getuid?.() === 0;
  let dir: string;
  let sim: SimRuntime;
  let client: CriClient;
  let logged: { level: string; message: string; fields: Record<string, unknown> }[];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'statelet-sim-net-'));
    logged = [];
    sim = await startSimRuntime({ socketPath: join(dir, 'cri.sock'), pullDelayMs: 0, log: (level, message, fields) => logged.push({ level, message, fields }) });
    client = new CriClient(sim.endpoint);
  });

  afterEach(async () => {
    client.close();
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A /24 of 10.254.0.0/16 that nothing on the host has made local. */
  async function freeRange(): Promise<string> {
    for (;;) {
      const third = randomInt(256);
      if (!(await canBind(`10.254.${third}.2`))) return `10.254.${third}.0/24`;
    }
  }

  async function startPod(name: string, command: string): Promise<{ ip: string; container: string }> {
    const pod = podSandboxConfig(name, { labels: { 'io.kubernetes.pod.uid': `uid-${name}` }, logDirectory: join(dir, name), linux: networkNamespace(NamespaceMode.POD) });
    const sandbox = await client.runPodSandbox(pod);
    const container = await client.createContainer(sandbox, containerConfig('c', { command: ['sh', '-c', command], labels: { 'io.kubernetes.pod.uid': `uid-${name}` } }), pod);
    await client.startContainer(container);
    return { ip: (await client.podSandboxStatus(sandbox)).network?.ip ?? '', container };
  }

  const SERVE = 'mkdir -p /www; echo "hello from $HOSTNAME" > /www/index.html; httpd -f -p 8080 -h /www';

  it.runIf(root)('as root: makes the range local, gives pods its addresses, pods reach each other by address, and the route goes at close', async () => {
    const cidr = await freeRange();
    const before = await startPod('before', 'sleep 3600');
    expect(before.ip).toMatch(/^127\./);

    await client.updateRuntimeConfig(cidr);
    expect(sim.engine.podAddressRange()).toBe(cidr);
    const web = await startPod('web', SERVE);
    const client1 = await startPod('client', 'sleep 3600');
    const prefix = cidr.slice(0, cidr.lastIndexOf('.') + 1);
    expect(web.ip.startsWith(prefix)).toBe(true);
    expect(client1.ip.startsWith(prefix)).toBe(true);
    expect(web.ip).not.toBe(client1.ip);
    // A pod keeps the address it had.
    expect((await client.listPodSandbox()).length).toBe(3);
    await sim.engine.whenListening(web.container, 8080);

    const fetched = await client.execSync(client1.container, ['wget', '-q', '-O', '-', `http://${web.ip}:8080/`], 10);
    expect({ exitCode: fetched.exitCode, stdout: fetched.stdout.toString() }).toEqual({ exitCode: 0, stdout: 'hello from web\n' });
    const saved = await client.execSync(client1.container, ['sh', '-c', `wget http://${web.ip}:8080/ && cat index.html`], 10);
    expect(saved.stdout.toString()).toBe('hello from web\n');
    expect(saved.stderr.toString()).toBe(`Connecting to ${web.ip}:8080 (${web.ip}:8080)\nsaving to 'index.html'\n'index.html' saved\n`);
    const again = await client.execSync(client1.container, ['wget', '-q', `http://${web.ip}:8080/`], 10);
    expect({ exitCode: again.exitCode, stderr: again.stderr.toString() }).toEqual({ exitCode: 1, stderr: "wget: can't open 'index.html': File exists\n" });
    const missing = await client.execSync(client1.container, ['wget', '-q', `http://${web.ip}:8080/nope`], 10);
    expect({ exitCode: missing.exitCode, stderr: missing.stderr.toString() }).toEqual({ exitCode: 1, stderr: 'wget: server returned error: HTTP/1.1 404 Not Found\n' });
    const refused = await client.execSync(client1.container, ['wget', '-q', `http://${web.ip}:8081/`], 10);
    expect({ exitCode: refused.exitCode, stderr: refused.stderr.toString() }).toEqual({ exitCode: 1, stderr: `wget: can't connect to remote host (${web.ip}): Connection refused\n` });
    // localhost is the pod's own address.
    const own = await client.execSync(web.container, ['wget', '-q', '-O-', 'http://localhost:8080/'], 10);
    expect(own.stdout.toString()).toBe('hello from web\n');

    // The host reaches the pod at its address too (a probe does).
    expect(await (await fetch(`http://${web.ip}:8080/`)).text()).toBe('hello from web\n');
    expect(logged).toContainEqual({ level: 'info', message: 'Pod sandboxes take their addresses from the pod CIDR', fields: { podCIDR: cidr, routeAdded: true } });

    await sim.close();
    expect(await canBind(`${prefix}2`)).toBe(false);
  });

  it.runIf(!root)('not root: keeps loopback addresses and says why, once', async () => {
    console.warn('sim-podNetwork: not root here, so the route of a pod CIDR cannot be made; CI runs the root case');
    const cidr = await freeRange();
    await client.updateRuntimeConfig(cidr);
    await client.updateRuntimeConfig(cidr);
    expect((await startPod('web', 'sleep 3600')).ip).toMatch(/^127\./);
    expect(logged.filter((line) => line.level === 'warn')).toEqual([
      expect.objectContaining({ fields: expect.objectContaining({ podCIDR: cidr, reason: expect.stringMatching(/ip route add local .* needs root/) }) }),
    ]);
  });

  it('an IPv6-only pod CIDR keeps pods on their addresses, said once; a malformed one is refused, named', async () => {
    await client.updateRuntimeConfig('fd00:10::/64');
    await client.updateRuntimeConfig('fd00:10::/64');
    expect((await startPod('web', 'sleep 3600')).ip).toMatch(/^127\./);
    expect(logged.filter((line) => line.level === 'warn').map((line) => line.fields)).toEqual([
      { podCIDR: 'fd00:10::/64', addresses: LOOPBACK_RANGE.name, reason: 'sim:// gives pods IPv4 addresses only, and this pod CIDR has no IPv4 range' },
    ]);
    const error = await rejection(client.updateRuntimeConfig('10.1.2.0/31'));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/UpdateRuntimeConfig.*pod CIDR: 10\.1\.2\.0\/31 has no address for a pod/);
  });
});
