import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FeatureGateError, IMPLEMENTED_GATES, featureEnabled, nonDefaultGates, resolveFeatureGates } from '../../src/cli/featureGates.ts';
import { KUBELET_FEATURE_GATES } from '../../src/cli/kubeletConfigApi.ts';
import { UsageError, parseCommandLine } from '../../src/cli/flags.ts';
import { configz } from '../../src/cli/options.ts';

const env = { hostname: () => 'host-a' };

function gateError(requested: Record<string, boolean>, ...rest: Parameters<typeof resolveFeatureGates> extends [unknown, ...infer R] ? R : never): string {
  try {
    resolveFeatureGates(requested, ...rest);
  } catch (error) {
    if (error instanceof FeatureGateError) return error.message;
    throw error;
  }
  throw new Error('expected a FeatureGateError');
}

describe("the kubelet's gates at the pinned release", () => {
  it('are all there, with their defaults and locks (a broken extraction would show here)', () => {
    expect(Object.keys(KUBELET_FEATURE_GATES).length).toBeGreaterThan(200);
    expect(KUBELET_FEATURE_GATES.RotateKubeletServerCertificate).toMatchObject({ default: true, locked: false });
    expect(KUBELET_FEATURE_GATES.UserNamespacesSupport).toMatchObject({ default: true, locked: true });
    expect(KUBELET_FEATURE_GATES.AllAlpha).toMatchObject({ default: false });
  });

  it('resolve to their defaults when none is set, with no dependency broken', () => {
    const gates = resolveFeatureGates({});
    for (const [name, spec] of Object.entries(KUBELET_FEATURE_GATES)) expect({ name, value: gates[name] }).toEqual({ name, value: spec.default });
    expect(nonDefaultGates(gates)).toEqual({});
  });

  it('lists only gates the release has as implemented by statelet', () => {
    expect(Object.keys(IMPLEMENTED_GATES).filter((name) => KUBELET_FEATURE_GATES[name] === undefined)).toEqual([]);
  });
});

describe('setting a gate', () => {
  it('takes a gate set to its default, whatever its stage', () => {
    expect(resolveFeatureGates({ RotateKubeletServerCertificate: true, AllAlpha: false, UserNamespacesSupport: true })).toMatchObject({ RotateKubeletServerCertificate: true, UserNamespacesSupport: true });
  });

  it.each([
    [{ NoSuchGate: true }, 'unrecognized feature gate: NoSuchGate'],
    [{ UserNamespacesSupport: false }, 'cannot set feature gate UserNamespacesSupport to false, feature is locked to true'],
    [{ CPUManagerPolicyBetaOptions: false }, 'feature gate CPUManagerPolicyBetaOptions=false is refused: statelet implements CPUManagerPolicyBetaOptions only at its default (true)'],
    [{ AllAlpha: true }, 'feature gate AllAlpha=true is refused: statelet implements AllAlpha only at its default (false)'],
  ])('%j fails: %s', (requested, message) => {
    expect(gateError(requested)).toBe(message);
  });

  it('reports several refusals at once as the aggregated error prints them', () => {
    expect(gateError({ UserNamespacesSupport: false, AllBeta: true })).toBe(
      '[cannot set feature gate UserNamespacesSupport to false, feature is locked to true, feature gate AllBeta=true is refused: statelet implements AllBeta only at its default (false)]',
    );
  });

  it('lets an implemented gate take either value, and checks its dependencies in the kubelet\'s words', () => {
    const gates = { A: { default: false, preRelease: 'ALPHA', locked: false, dependsOn: ['B'] }, B: { default: false, preRelease: 'ALPHA', locked: false } };
    expect(resolveFeatureGates({ A: true, B: true }, gates, { A: 'does a', B: 'does b' })).toEqual({ A: true, B: true });
    expect(gateError({ A: true }, gates, { A: 'does a', B: 'does b' })).toBe('A is enabled, but depends on features that are disabled: [B]');
  });

  it('takes the serving gates statelet implements both ways (RotateKubeletServerCertificate, ReloadKubeletServerCertificateFile, ReloadKubeletClientCAFile)', () => {
    const off = { RotateKubeletServerCertificate: false, ReloadKubeletServerCertificateFile: false, ReloadKubeletClientCAFile: false };
    expect(resolveFeatureGates(off)).toMatchObject(off);
  });

  it('answers whether a gate is on from the resolved map, or the default when it is not in it', () => {
    expect(featureEnabled({}, 'RotateKubeletServerCertificate')).toBe(true);
    expect(featureEnabled({ AllAlpha: true }, 'AllAlpha')).toBe(true);
    expect(() => featureEnabled({}, 'Nope')).toThrow(/unknown feature gate/);
  });
});

describe('--feature-gates and featureGates', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'statelet-gates-'));
  const config = path.join(dir, 'config.yaml');
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(config, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  RotateKubeletServerCertificate: true\n  UserNamespacesSupport: true\n');

  function usage(argv: string[]): string {
    try {
      parseCommandLine(argv, env);
    } catch (error) {
      if (error instanceof UsageError) return error.message;
      throw error;
    }
    throw new Error('expected a UsageError');
  }

  it('merges per gate: a flag wins for its gate, the file keeps the others', () => {
    const result = parseCommandLine(['--config', config, '--feature-gates', 'AllAlpha=false', '--feature-gates=AllBeta=false'], env);
    if (result.kind !== 'run') throw new Error(result.kind);
    expect(result.config.featureGates).toMatchObject({ RotateKubeletServerCertificate: true, UserNamespacesSupport: true, AllAlpha: false, AllBeta: false });
    expect(usage(['--config', config, '--feature-gates=UserNamespacesSupport=false'])).toBe('failed to set feature gates: cannot set feature gate UserNamespacesSupport to false, feature is locked to true');
  });

  it("fails an unknown gate or a bad value in the kubelet's words", () => {
    expect(usage(['--feature-gates=Foo=true'])).toBe('failed to set feature gates: unrecognized feature gate: Foo');
    expect(usage(['--feature-gates=Foo'])).toBe('invalid value "Foo" for flag --feature-gates: missing bool value for Foo');
    expect(usage(['--feature-gates=Foo=maybe'])).toMatch(/invalid value of Foo=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax/);
  });

  it('shows in /configz only the gates set otherwise than by default', () => {
    const result = parseCommandLine(['--config', config], env);
    if (result.kind !== 'run') throw new Error(result.kind);
    expect(configz(result.config).featureGates).toEqual({});
  });
});
