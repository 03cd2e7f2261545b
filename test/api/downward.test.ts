/** A container's resource through the downward API (api/downward.ts, helpers.go ExtractContainerResourceValue), from a table. */
import { describe, expect, it } from 'vitest';
import { containerResourceValue } from '../../src/api/downward.ts';
import { basePod, ctr } from '../support/podFixtures.ts';

describe('containerResourceValue', () => {
  const pod = basePod({
    containers: [
      ctr('app', { resources: { requests: { cpu: '250m', memory: '32Mi' }, limits: { cpu: '1250m', memory: '64Mi' } } }),
      ctr('bare'),
    ],
  });
  const allocatable = { cpu: 2000, memory: 4 * 1024 ** 3 };
  const value = (containerName: string, resource: string, divisor?: string | number) =>
    containerResourceValue(pod, undefined, { containerName, resource, ...(divisor === undefined ? {} : { divisor }) }, allocatable);

  it.each([
    ['cpu limit in cores, rounded up', 'app', 'limits.cpu', undefined, '2'],
    ['cpu request in millicores', 'app', 'requests.cpu', '1m', '250'],
    ['memory limit in bytes', 'app', 'limits.memory', undefined, String(64 * 1024 ** 2)],
    ['memory request in Mi', 'app', 'requests.memory', '1Mi', '32'],
    // The API server writes divisor "0" into every volume item that sets none.
    ['divisor "0" counts as 1', 'app', 'limits.memory', '0', String(64 * 1024 ** 2)],
    ['divisor 0 counts as 1 for cpu', 'app', 'requests.cpu', 0, '1'],
    ['an unset limit is the node allocatable', 'bare', 'limits.cpu', '0', '2'],
    ['an unset memory limit is the node allocatable', 'bare', 'limits.memory', '1Mi', '4096'],
    ['an unset request is 0', 'bare', 'requests.memory', '0', '0'],
  ] as const)('%s', (_name, container, resource, divisor, want) => {
    expect(value(container, resource, divisor)).toBe(want);
  });

  it.each([
    ['a negative divisor', 'app', 'limits.cpu', '-1', /invalid divisor for limits.cpu: -1/],
    ['an unknown resource', 'app', 'limits.gpu', undefined, /unsupported container resource : limits.gpu/],
    ['an unknown container', 'nope', 'limits.cpu', undefined, /cannot find container nope/],
  ] as const)('%s is an error naming it', (_name, container, resource, divisor, message) => {
    const got = value(container, resource, divisor);
    expect(got).toBeInstanceOf(Error);
    expect((got as Error).message).toMatch(message);
  });
});
