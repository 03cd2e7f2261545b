/** CSI versions as the kubelet reads a driver's (apimachinery util/version HighestSupportedVersion). */
import { describe, expect, it } from 'vitest';
import { highestSupportedVersion, versionLessThan, versionString, parseGenericVersion } from '../../../src/volumes/csi/drivers.ts';

describe('highestSupportedVersion', () => {
  it.each([
    [['1.0.0'], '1.0.0'],
    [['0.3.0', '1.0.0', '1.2.0'], '1.2.0'],
    [['v1.1', '2.0.0'], '1.1'],
    [['1.10.0', '1.9.0'], '1.10.0'],
  ])('of %j is %s', (versions, highest) => {
    expect(versionString(highestSupportedVersion(versions))).toBe(highest);
  });

  it.each([
    [[], 'empty array for supported versions'],
    [['2.0.0'], 'could not find a highest supported version from versions ([2.0.0]) reported: <nil>'],
    [['x', '3.0'], 'could not find a highest supported version from versions ([x 3.0]) reported: could not parse "x" as version'],
    [['0.3.0'], 'highest supported version reported is 0.3.0, must be v1.x'],
    [['1'], 'could not find a highest supported version from versions ([1]) reported: illegal version string "1"'],
  ])('of %j fails: %s', (versions, error) => {
    expect(() => highestSupportedVersion(versions)).toThrow(error);
  });

  it('compares component by component, a missing one as 0', () => {
    expect(versionLessThan(parseGenericVersion('1.0'), parseGenericVersion('1.0.1'))).toBe(true);
    expect(versionLessThan(parseGenericVersion('1.0.0'), parseGenericVersion('1.0'))).toBe(false);
    expect(versionLessThan(parseGenericVersion('1.2.0'), parseGenericVersion('1.10.0'))).toBe(true);
  });
});
