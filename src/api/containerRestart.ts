/**
 * Whether a regular or init container that exited runs again (pkg/api/v1/pod/util.go
 * ContainerShouldRestart, FindMatchingContainerRestartRule; ContainerRestartRules, beta and on
 * since v1.35), pure. A container with its own `restartPolicy` may carry `restartPolicyRules`: the first rule whose
 * `exitCodes` match (`In` the values, or `NotIn` them) acts; `Restart` restarts it. No rule
 * matching, its own policy decides; a container without one follows the pod's. An init container
 * with `OnFailure` under a `Never` pod is retried; one with `Never` under an `Always` pod fails
 * the pod (kuberuntime_container.go computeInitContainerActions). Sidecars (init containers with
 * `restartPolicy: Always`) always restart: the kubelet asks them nothing here, and their rules'
 * only action, `Restart`, changes nothing.
 */
import type { Container, ContainerRestartRule, Pod } from './types.ts';

/** The first rule of the container matching `exitCode`, or undefined (FindMatchingContainerRestartRule). */
export function matchingRestartRule(container: Container, exitCode: number): ContainerRestartRule | undefined {
  return (container.restartPolicyRules ?? []).find((rule) => {
    if (!rule.exitCodes) return false;
    const listed = (rule.exitCodes.values ?? []).includes(exitCode);
    return rule.exitCodes.operator === 'In' ? listed : rule.exitCodes.operator === 'NotIn' && !listed;
  });
}

/** A policy's answer for an exit code: Always restarts, OnFailure on a non-zero code, Never not. */
function policyRestarts(policy: 'Always' | 'OnFailure' | 'Never', exitCode: number): boolean {
  return policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0);
}

/** Whether the container, having exited with `exitCode`, runs again (ContainerShouldRestart). */
export function containerShouldRestart(container: Container, pod: Pod, exitCode: number): boolean {
  if (container.restartPolicy !== undefined) {
    // RestartAllContainers is refused at admission (src/admission/podFields.ts): only Restart acts.
    if (matchingRestartRule(container, exitCode)?.action === 'Restart') return true;
    return policyRestarts(container.restartPolicy, exitCode);
  }
  return policyRestarts(pod.spec.restartPolicy ?? 'Always', exitCode);
}

/**
 * Whether a container that ended without an exit code to match rules against — a running one
 * killed for a failed probe, an init container lost to an unknown state — is started again: its
 * own policy when it has one, else the pod's (kuberuntime_manager.go computePodActions,
 * kuberuntime_container.go computeInitContainerActions).
 */
export function restartsAfterKill(container: Container, pod: Pod): boolean {
  return (container.restartPolicy ?? pod.spec.restartPolicy ?? 'Always') !== 'Never';
}

/** Whether the container runs at most until it succeeds: its own policy OnFailure, else the pod's. */
export function runsUntilSuccess(container: Container, pod: Pod): boolean {
  return (container.restartPolicy ?? pod.spec.restartPolicy) === 'OnFailure';
}
