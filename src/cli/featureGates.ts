/**
 * Feature gates as the kubelet takes them (k8s.io/component-base/featuregate feature_gate.go
 * unsafeSetFromMap): the pinned release's gates with their defaults, stages and locks
 * (kubeletConfigApi.ts, generated), the kubelet's messages for an unknown or locked gate or a
 * missing dependency, and statelet's rule on top: a gate may be set to a value other than its
 * default only when statelet implements both values (IMPLEMENTED_GATES); otherwise the value
 * would be accepted and ignored, and is refused.
 */

import { KUBELET_FEATURE_GATES, type FeatureGateSpec } from './kubeletConfigApi.ts';

/**
 * The gates whose both values statelet implements, with what the gate switches in statelet. Every
 * other gate runs at its default, and statelet's behaviour is the default's.
 */
export const IMPLEMENTED_GATES: Readonly<Record<string, string>> = {
  RotateKubeletServerCertificate: 'serverTLSBootstrap: the serving certificate from a kubernetes.io/kubelet-serving CSR (off: no certificate unless --tls-cert-file is given)',
  ReloadKubeletServerCertificateFile: '--tls-cert-file/--tls-private-key-file (and the self-signed pair) reloaded when the files change (off: read once)',
  ReloadKubeletClientCAFile: 'the client CA file reloaded when it changes (off: read once)',
};

/** A gate set to a value the kubelet or statelet refuses; the message is the whole reason. */
export class FeatureGateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FeatureGateError';
  }
}

/**
 * Every gate of the release with its value: the defaults, with the requested values over them.
 * Throws FeatureGateError with the kubelet's message for an unknown gate, a locked gate set
 * otherwise or an enabled gate whose dependency is off, and with statelet's for a value it does
 * not implement.
 */
export function resolveFeatureGates(
  requested: Readonly<Record<string, boolean>>,
  gates: Readonly<Record<string, FeatureGateSpec>> = KUBELET_FEATURE_GATES,
  implemented: Readonly<Record<string, string>> = IMPLEMENTED_GATES,
): Record<string, boolean> {
  const resolved: Record<string, boolean> = Object.fromEntries(Object.entries(gates).map(([name, spec]) => [name, spec.default]));
  const errors: string[] = [];
  for (const [name, value] of Object.entries(requested)) {
    const spec = gates[name];
    // The kubelet stops at the first unknown gate.
    if (spec === undefined) throw new FeatureGateError(`unrecognized feature gate: ${name}`);
    if (spec.locked && spec.default !== value) {
      errors.push(`cannot set feature gate ${name} to ${value}, feature is locked to ${spec.default}`);
      continue;
    }
    if (value !== spec.default && implemented[name] === undefined) {
      errors.push(`feature gate ${name}=${value} is refused: statelet implements ${name} only at its default (${spec.default})`);
      continue;
    }
    resolved[name] = value;
  }
  if (errors.length === 0) {
    for (const [name, spec] of Object.entries(gates)) {
      if (!resolved[name] || spec.dependsOn === undefined) continue;
      const disabled = spec.dependsOn.filter((dependency) => !resolved[dependency]);
      if (disabled.length > 0) errors.push(`${name} is enabled, but depends on features that are disabled: [${disabled.join(' ')}]`);
    }
  }
  // Several at once as the kubelet's aggregated error prints them.
  if (errors.length > 0) throw new FeatureGateError(errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`);
  return resolved;
}

/** The gates set to other than their default, as /configz and the docs show them. */
export function nonDefaultGates(gates: Readonly<Record<string, boolean>>): Record<string, boolean> {
  return Object.fromEntries(Object.entries(gates).filter(([name, value]) => KUBELET_FEATURE_GATES[name]?.default !== value));
}

/** Whether a gate is on: its value in `gates` (AgentConfig.featureGates), else the release's default. */
export function featureEnabled(gates: Readonly<Record<string, boolean>>, name: string): boolean {
  const spec = KUBELET_FEATURE_GATES[name];
  if (spec === undefined) throw new Error(`unknown feature gate ${name}`);
  return gates[name] ?? spec.default;
}
