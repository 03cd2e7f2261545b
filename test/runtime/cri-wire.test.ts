/**
 * The CRI wire's scalars as the client reads them: responses are read as protobuf.js decodes
 * them, without a copy as plain objects, so an int64 arrives as protobuf.js's Long (a server's
 * plain object may hold a number or a decimal string, and the simulator writes two 32-bit halves)
 * and an enum as its number; each form must read as the same value.
 */
import Long from 'long';
import { describe, expect, it } from 'vitest';
import { WIRE_CALLS } from '../../src/runtime/cri/wireCalls.ts';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { containerConfig, podSandboxConfig } from './support.ts';
import { type WireContainer, clientMethod, keptEncodings, messageEncoder, enumValue, CONTAINER_STATES, int64ToNumber, msToNs, nsToMs, serviceDefinition } from '../../src/runtime/cri/wire.ts';

/** The exact answer, by BigInt, for any int64 written as a decimal string. */
const exactMs = (ns: string) => Number(BigInt(ns) / 1_000_000n);

describe('nsToMs', () => {
  const times = [
    '0',
    '999999',
    '1000000',
    '1764212345678999999', // 1 ns before a millisecond: a double would round it up
    '1764212345679000000',
    '1764212345679000001',
    '4294967295', // low word all ones
    '4294967296', // 2^32
    '9223372036854775807', // the largest int64
  ];
  it.each(times)('reads %s ns the same as a Long, a string and (within a double) a number', (ns) => {
    const long = Long.fromString(ns);
    expect(nsToMs(long)).toBe(exactMs(ns));
    expect(nsToMs(ns)).toBe(exactMs(ns));
    if (BigInt(ns) < 2n ** 53n) expect(nsToMs(Number(ns))).toBe(exactMs(ns));
  });

  it('reads a negative int64 and an unsigned one above 2^63 exactly', () => {
    expect(nsToMs(Long.fromString('-1500000'))).toBe(exactMs('-1500000'));
    expect(nsToMs(Long.fromString('18446744073709551615', true))).toBe(exactMs('18446744073709551615'));
  });
});

describe('msToNs', () => {
  const times = [0, 1, 999.999, 1_000, 4_294_967.296, 1_764_212_345_678.999, 1_764_212_345_679, 4_102_444_800_000.5];
  it.each(times)('writes %s ms as the exact nanoseconds, which read back as its whole milliseconds', (ms) => {
    const exact = BigInt(Math.round(ms * 1000)) * 1000n;
    const written = msToNs(ms);
    expect(BigInt.asIntN(64, (BigInt(written.high >>> 0) << 32n) | BigInt(written.low >>> 0))).toBe(exact);
    expect(nsToMs(written)).toBe(Math.floor(ms));
    expect(nsToMs(Long.fromBits(written.low, written.high))).toBe(Math.floor(ms));
  });
});

describe('int64ToNumber', () => {
  it.each(['0', '42', '-7', '1073741824000', '-1073741824000'])('reads %s as a Long, a string and a number alike', (value) => {
    expect(int64ToNumber(Long.fromString(value))).toBe(Number(value));
    expect(int64ToNumber(Long.fromString(value, true))).toBe(Number(BigInt.asUintN(64, BigInt(value))));
    expect(int64ToNumber(value)).toBe(Number(value));
    expect(int64ToNumber(Number(value))).toBe(Number(value));
  });
});

describe('a response, written by a server and read by the client', () => {
  const write = serviceDefinition('RuntimeService')['ListContainers']!.responseSerialize;
  const read = clientMethod('RuntimeService', 'ListContainers').deserialize;

  it('reads every field, the absent ones as their defaults, enums by number and times exactly', () => {
    const bytes = write({
      containers: [
        { id: 'c1', podSandboxId: 's1', metadata: { name: 'app', attempt: 2 }, state: 'CONTAINER_EXITED', createdAt: '1764212345678999999', labels: { app: 'web' } },
        { id: 'c2' },
      ],
    });
    const { containers } = read(bytes) as { containers: WireContainer[] };
    const [full, bare] = containers as [WireContainer, WireContainer];
    expect(full).toMatchObject({ id: 'c1', podSandboxId: 's1', metadata: { name: 'app', attempt: 2 }, labels: { app: 'web' }, imageRef: '', image: null });
    expect(enumValue(CONTAINER_STATES, full.state)).toBe('CONTAINER_EXITED');
    expect(nsToMs(full.createdAt)).toBe(1764212345678);
    expect({ id: bare.id, state: enumValue(CONTAINER_STATES, bare.state), createdAt: nsToMs(bare.createdAt), labels: { ...bare.labels }, metadata: bare.metadata }).toEqual({
      id: 'c2',
      state: 'CONTAINER_CREATED',
      createdAt: 0,
      labels: {},
      metadata: null,
    });
  });
});

describe('answers written around kept encodings (messageEncoder, keptEncodings)', () => {
  const plain = serviceDefinition('RuntimeService')['ListContainers']!.responseSerialize;
  const read = clientMethod('RuntimeService', 'ListContainers').deserialize;
  interface Item { id: string; state: string; annotations: Record<string, string> }
  const toWire = (item: Item) => ({ id: item.id, state: item.state, annotations: item.annotations, metadata: { name: `name-${item.id}`, attempt: 0 } });
  const encodeContainer = messageEncoder('Container');

  it('writes a list the same as protobuf.js, lengths of one byte and of two included', () => {
    const items: Item[] = [
      { id: 'short', state: 'CONTAINER_RUNNING', annotations: {} },
      { id: 'long', state: 'CONTAINER_EXITED', annotations: { text: 'x'.repeat(300) } }, // over 127 bytes: a two-byte length
    ];
    const write = messageEncoder('ListContainersResponse', { containers: keptEncodings((item: Item) => encodeContainer(toWire(item))) });
    const bytes = write({ containers: items });
    expect(bytes.equals(plain({ containers: items.map(toWire) }))).toBe(true);
    expect((read(bytes) as { containers: WireContainer[] }).containers.map((c) => c.id)).toEqual(['short', 'long']);
    expect(write({ containers: [] }).length).toBe(0);
  });

  it('writes parts within parts that read back as protobuf.js\'s whole message does', () => {
    const stats = messageEncoder('PodSandboxStats', {
      attributes: messageEncoder('PodSandboxAttributes'),
      linux: messageEncoder('LinuxPodSandboxStats', { containers: messageEncoder('ContainerStats', { attributes: messageEncoder('ContainerAttributes') }) }),
    });
    const value = {
      attributes: { id: 's1', metadata: { name: 'web', uid: 'u1', namespace: 'ns', attempt: 1 }, labels: { app: 'web' }, annotations: { a: 'b' } },
      linux: {
        cpu: { timestamp: msToNs(1_700_000_000_000), usageCoreNanoSeconds: { value: 42 } },
        process: { timestamp: msToNs(1_700_000_000_000), processCount: { value: 2 } },
        containers: [
          { attributes: { id: 'c1', metadata: { name: 'app', attempt: 0 }, labels: {}, annotations: {} }, memory: { timestamp: msToNs(1), workingSetBytes: { value: 4096 } } },
          { attributes: { id: 'c2', metadata: { name: 'side', attempt: 3 }, labels: { x: 'y' }, annotations: {} } },
        ],
      },
    };
    const type = clientMethod('RuntimeService', 'PodSandboxStats').deserialize;
    const whole = serviceDefinition('RuntimeService')['PodSandboxStats']!.responseSerialize({ stats: value });
    const parts = messageEncoder('PodSandboxStatsResponse', { stats })({ stats: value });
    expect(JSON.stringify(type(parts))).toBe(JSON.stringify(type(whole)));
  });

  it('encodes a value once while it is the same object, and a new object again', () => {
    const encoded: string[] = [];
    const write = messageEncoder('ListContainersResponse', {
      containers: keptEncodings((item: Item) => {
        encoded.push(`${item.id}:${item.state}`);
        return encodeContainer(toWire(item));
      }),
    });
    const a = { id: 'a', state: 'CONTAINER_CREATED', annotations: {} };
    const b = { id: 'b', state: 'CONTAINER_RUNNING', annotations: {} };
    write({ containers: [a, b] });
    write({ containers: [b, a] });
    const started = { ...a, state: 'CONTAINER_RUNNING' };
    const bytes = write({ containers: [started, b] });
    expect(encoded).toEqual(['a:CONTAINER_CREATED', 'b:CONTAINER_RUNNING', 'a:CONTAINER_RUNNING']);
    const states = (read(bytes) as { containers: WireContainer[] }).containers.map((c) => enumValue(CONTAINER_STATES, c.state));
    expect(states).toEqual(['CONTAINER_RUNNING', 'CONTAINER_RUNNING']);
  });

  it('refuses a part that is not a message field', () => {
    expect(() => messageEncoder('Container', { id: encodeContainer })).toThrow(/runtime.v1.Container has no message field id/);
  });
});

describe("the table of wire calls' lists (wireCalls.ts)", () => {
  /** `items` behind proxies that count how often a field of theirs is read. */
  const watched = <T extends object>(items: T[], reads: { count: number }) =>
    items.map((item) => new Proxy(item, { get: (target, key) => (reads.count++, Reflect.get(target, key)) }));

  it('write each listing of the engine once while it is the same object, and read back as the client reads them', async () => {
    const engine = new SimEngine({ pullDelayMs: 0 });
    const config = podSandboxConfig('web');
    const sandbox = engine.runPodSandbox(config);
    engine.createContainer(sandbox, containerConfig('app'));
    const listContainers = WIRE_CALLS.listContainers;
    if (!('encode' in listContainers)) throw new Error('ListContainers is written around kept encodings');
    const reads = { count: 0 };
    const containers = watched(engine.listContainers(), reads);
    const first = listContainers.encode(containers);
    expect(reads.count).toBeGreaterThan(0);
    const afterFirst = reads.count;
    expect(listContainers.encode(containers)).toEqual(first);
    expect(reads.count).toBe(afterFirst);
    const readBack = WIRE_CALLS.listContainers.result(clientMethod('RuntimeService', 'ListContainers').deserialize(first) as never);
    expect(readBack).toEqual(engine.listContainers());
    await engine.close();
  });
});
