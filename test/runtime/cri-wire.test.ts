/**
 * The CRI wire's scalars as the client reads them: responses are read as protobuf.js decodes
 * them, without a copy as plain objects, so an int64 arrives as protobuf.js's Long (a server's
 * plain object may hold a number or a decimal string, and the simulator writes two 32-bit halves)
 * and an enum as its number; each form must read as the same value.
 */
import Long from 'long';
import { describe, expect, it } from 'vitest';
import { type WireContainer, clientMethod, enumValue, CONTAINER_STATES, int64ToNumber, msToNs, nsToMs, serviceDefinition } from '../../src/runtime/cri/wire.ts';

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
