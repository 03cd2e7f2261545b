/**
 * Who a container's process is and what it may do, as the kubelet tells the runtime, pure: the pod's
 * and the container's security contexts merged (pkg/securitycontext/util.go
 * DetermineEffectiveSecurityContext), turned into the CRI's LinuxContainerSecurityContext
 * (pkg/kubelet/kuberuntime/security_context.go convertToRuntimeSecurityContext,
 * kuberuntime_container_linux.go generateLinuxContainerConfig), the namespaces a pod's containers
 * share (kuberuntime/util/util.go NamespacesForPod), the sandbox's own security context
 * (kuberuntime_sandbox.go generatePodSandboxLinuxConfig), and the runAsNonRoot check against the
 * image's user (security_context_others.go verifyRunAsNonRoot). A rule that cannot be met returns
 * the kubelet's words; the start turns them into CreateContainerConfigError.
 */
import type { Container, Pod, ProfileSpec, SELinuxOptions, SecurityContext } from '../api/types.ts';
import {
  type LinuxContainerSecurityContext,
  type LinuxSandboxSecurityContext,
  type NamespaceOptions,
  type UserNamespace,
  type SELinuxOption,
  type SecurityProfile,
  NamespaceMode,
} from '../runtime/types.ts';

/** Paths the runtime hides from a container (securitycontext/util.go defaultMaskedPaths). */
export const DEFAULT_MASKED_PATHS: readonly string[] = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];

/** Paths the runtime makes read-only in a container (securitycontext/util.go defaultReadonlyPaths). */
export const DEFAULT_READONLY_PATHS: readonly string[] = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

/** The node's settings these rules read. */
export interface SecuritySettings {
  /** --seccomp-default: RuntimeDefault where the pod names no seccomp profile (else Unconfined). */
  seccompDefault: boolean;
  /** `<root-dir>/seccomp`: where Localhost seccomp profiles are. */
  seccompProfileRoot: string;
}

/** The user an image runs as when the pod does not say (CRI ImageStatus uid or username). */
export interface ImageUser {
  uid?: number;
  username?: string;
}

/**
 * The container's context over the pod's: the pod gives the SELinux options and the user, group
 * and runAsNonRoot; the container's members, where set, win one by one (SELinux options and
 * capabilities as whole objects). Profiles are chosen apart (seccompFor, appArmorFor).
 */
export function effectiveSecurityContext(pod: Pod, container: Container): SecurityContext {
  const podContext = pod.spec.securityContext;
  const effective: SecurityContext = {};
  if (podContext?.seLinuxOptions) effective.seLinuxOptions = podContext.seLinuxOptions;
  if (podContext?.runAsUser !== undefined) effective.runAsUser = podContext.runAsUser;
  if (podContext?.runAsGroup !== undefined) effective.runAsGroup = podContext.runAsGroup;
  if (podContext?.runAsNonRoot !== undefined) effective.runAsNonRoot = podContext.runAsNonRoot;
  const own = container.securityContext ?? {};
  for (const key of [
    'seLinuxOptions',
    'capabilities',
    'privileged',
    'runAsUser',
    'runAsGroup',
    'runAsNonRoot',
    'readOnlyRootFilesystem',
    'allowPrivilegeEscalation',
    'procMount',
  ] as const) {
    if (own[key] !== undefined) Object.assign(effective, { [key]: own[key] });
  }
  return effective;
}

/**
 * A container's namespaces when it targets another container's pid namespace (an ephemeral
 * container's `targetContainerName`, resolved to that container's id): pid TARGET with the
 * target's id, where the pod would give the container its own pid namespace; a pod that shares
 * one (shareProcessNamespace) or uses the host's keeps it, the target changing nothing
 * (kuberuntime_container_linux.go generateLinuxContainerConfig).
 */
export function withPidTarget(namespaces: NamespaceOptions, targetId: string | undefined): NamespaceOptions {
  if (!targetId || namespaces.pid !== NamespaceMode.CONTAINER) return namespaces;
  return { ...namespaces, pid: NamespaceMode.TARGET, targetId };
}

/**
 * The pid, ipc and network namespaces of the pod's sandbox and containers, and its user namespace
 * as the user namespace manager gave it (kuberuntime/util NamespacesForPod).
 */
export function namespacesForPod(pod: Pod, userns?: UserNamespace): NamespaceOptions {
  const { hostNetwork, hostIPC, hostPID, shareProcessNamespace } = pod.spec;
  return {
    network: hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD,
    ipc: hostIPC ? NamespaceMode.NODE : NamespaceMode.POD,
    pid: hostPID ? NamespaceMode.NODE : shareProcessNamespace ? NamespaceMode.POD : NamespaceMode.CONTAINER,
    ...(userns ? { usernsOptions: userns } : {}),
  };
}

function selinux(options: SELinuxOptions | undefined): SELinuxOption | undefined {
  if (!options) return undefined;
  return { user: options.user ?? '', role: options.role ?? '', type: options.type ?? '', level: options.level ?? '' };
}

/** A rule the pod breaks, in the kubelet's words: the container cannot be configured. */
export class SecurityContextError extends Error {
  override readonly name = 'SecurityContextError';
}

/** The container's seccomp profile, else the pod's, else RuntimeDefault or Unconfined per --seccomp-default (helpers.go getSeccompProfile). */
export function seccompFor(pod: Pod, container: Container, settings: SecuritySettings): SecurityProfile {
  const spec = container.securityContext?.seccompProfile ?? pod.spec.securityContext?.seccompProfile;
  if (!spec) return { profileType: settings.seccompDefault ? 'RuntimeDefault' : 'Unconfined' };
  if (spec.type !== 'Localhost') return { profileType: spec.type };
  if (!spec.localhostProfile) throw new SecurityContextError('localhostProfile must be set if seccompProfile type is Localhost.');
  return { profileType: 'Localhost', localhostRef: `${settings.seccompProfileRoot}/${spec.localhostProfile}` };
}

const APPARMOR_ANNOTATION = 'container.apparmor.security.beta.kubernetes.io/';

/** The AppArmor profile as the annotation writes it (`runtime/default`, `unconfined`, `localhost/<name>`), or nothing for any other value. */
function profileOfAnnotation(value: string | undefined): ProfileSpec | undefined {
  if (value === 'runtime/default') return { type: 'RuntimeDefault' };
  if (value === 'unconfined') return { type: 'Unconfined' };
  if (value?.startsWith('localhost/')) return { type: 'Localhost', localhostProfile: value.slice('localhost/'.length) };
  return undefined;
}

/**
 * The container's AppArmor profile: its field, else its annotation, else the pod's field, else none
 * (the runtime's default) (pkg/security/apparmor/helpers.go GetProfile, kuberuntime/helpers.go
 * getAppArmorProfile): the profile and its deprecated string form.
 */
export function appArmorFor(pod: Pod, container: Container): { profile: SecurityProfile; name: string } | undefined {
  const spec = appArmorSpec(pod, container);
  if (!spec) return undefined;
  if (spec.type === 'RuntimeDefault') return { profile: { profileType: 'RuntimeDefault' }, name: 'runtime/default' };
  if (spec.type === 'Unconfined') return { profile: { profileType: 'Unconfined' }, name: 'unconfined' };
  if (!spec.localhostProfile) throw new SecurityContextError('missing localhost apparmor profile name');
  return { profile: { profileType: 'Localhost', localhostRef: spec.localhostProfile }, name: `localhost/${spec.localhostProfile}` };
}

function appArmorSpec(pod: Pod, container: Container): ProfileSpec | undefined {
  return (
    container.securityContext?.appArmorProfile ??
    profileOfAnnotation(pod.metadata.annotations?.[`${APPARMOR_ANNOTATION}${container.name}`]) ??
    pod.spec.securityContext?.appArmorProfile
  );
}

/**
 * Whether the pod needs AppArmor to run: a container whose profile is anything but Unconfined
 * (pkg/security/apparmor/validate.go isRequired). Such a pod is refused on a host without it.
 */
export function appArmorRequired(pod: Pod): boolean {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers].some((c) => {
    const spec = appArmorSpec(pod, c);
    return spec !== undefined && spec.type !== 'Unconfined';
  });
}

/** `"<name>_<namespace>(<uid>)"`, the kubelet's way of naming a pod in these messages (util/format Pod). */
function podName(pod: Pod): string {
  return `"${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})"`;
}

/**
 * Whether a container that must not run as root would (verifyRunAsNonRoot): null when it may start,
 * else the kubelet's reason. The context's user wins; without one, the image's.
 */
export function runAsNonRootViolation(pod: Pod, container: Container, context: SecurityContext, image: ImageUser): string | null {
  if (context.runAsNonRoot !== true) return null;
  const where = `(pod: ${podName(pod)}, container: ${container.name})`;
  if (context.runAsUser !== undefined) return context.runAsUser === 0 ? `container's runAsUser breaks non-root policy ${where}` : null;
  if (image.uid === undefined && image.username) {
    return `container has runAsNonRoot and image has non-numeric user (${image.username}), cannot verify user is non-root ${where}`;
  }
  const uid = image.uid ?? 0;
  if (uid === 0) return `container has runAsNonRoot and image will run as root ${where}`;
  if (uid < 0 || uid > 2147483647) return `container has runAsNonRoot and image has an invalid user id (${uid}). (Must be 1-(2147483647)) ${where}`;
  return null;
}

/**
 * fsGroup, the pod's supplementalGroups, then the groups its volumes add (the PersistentVolumes'
 * `pv.beta.kubernetes.io/gid`, GetExtraSupplementalGroupsForPod): the groups every container's
 * process also has.
 */
function supplementalGroups(pod: Pod, volumeGroups: readonly number[]): number[] {
  const context = pod.spec.securityContext;
  return [...(context?.fsGroup !== undefined ? [context.fsGroup] : []), ...(context?.supplementalGroups ?? []), ...volumeGroups];
}

/**
 * The CRI security context of one container: the effective context's members, the image's user
 * where none is set (a uid, or a name the runtime resolves), the namespaces, the default masked
 * and read-only paths (none with `procMount: Unmasked`), the profiles. `pidTarget` is an ephemeral
 * container's target (withPidTarget). Throws SecurityContextError for a profile the kubelet refuses.
 */
export function containerSecurityContext(
  pod: Pod,
  container: Container,
  image: ImageUser,
  settings: SecuritySettings,
  pidTarget?: string,
  userns?: UserNamespace,
  volumeGroups: readonly number[] = [],
): LinuxContainerSecurityContext {
  const context = effectiveSecurityContext(pod, container);
  const unmasked = context.procMount === 'Unmasked';
  const appArmor = appArmorFor(pod, container);
  const user =
    context.runAsUser !== undefined
      ? { runAsUser: context.runAsUser }
      : image.uid !== undefined
        ? { runAsUser: image.uid }
        : image.username
          ? { runAsUsername: image.username }
          : { runAsUser: 0 };
  const policy = pod.spec.securityContext?.supplementalGroupsPolicy;
  const selinuxOptions = selinux(context.seLinuxOptions);
  return {
    ...(context.capabilities ? { capabilities: { add: [...(context.capabilities.add ?? [])], drop: [...(context.capabilities.drop ?? [])] } } : {}),
    privileged: context.privileged === true,
    namespaceOptions: withPidTarget(namespacesForPod(pod, userns), pidTarget),
    ...(selinuxOptions ? { selinuxOptions } : {}),
    ...user,
    ...(context.runAsGroup !== undefined ? { runAsGroup: context.runAsGroup } : {}),
    readonlyRootfs: context.readOnlyRootFilesystem === true,
    supplementalGroups: supplementalGroups(pod, volumeGroups),
    ...(policy ? { supplementalGroupsPolicy: policy } : {}),
    noNewPrivs: context.allowPrivilegeEscalation === false,
    maskedPaths: unmasked ? [] : [...DEFAULT_MASKED_PATHS],
    readonlyPaths: unmasked ? [] : [...DEFAULT_READONLY_PATHS],
    seccomp: seccompFor(pod, container, settings),
    ...(appArmor ? { apparmor: appArmor.profile, apparmorProfile: appArmor.name } : {}),
  };
}

/** Whether any container of the pod, init, regular or ephemeral, is privileged (container/helpers.go HasPrivilegedContainer). */
function hasPrivilegedContainer(pod: Pod): boolean {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers, ...(pod.spec.ephemeralContainers ?? [])].some((c) => c.securityContext?.privileged === true);
}

/**
 * The sandbox's own security context: the pod's namespaces, user, group and SELinux options, its
 * supplemental groups, privileged when a container is, and always the runtime's default seccomp
 * profile (its pause process needs no more).
 */
export function sandboxSecurityContext(pod: Pod, userns?: UserNamespace, volumeGroups: readonly number[] = []): LinuxSandboxSecurityContext {
  const context = pod.spec.securityContext;
  const selinuxOptions = selinux(context?.seLinuxOptions);
  return {
    namespaceOptions: namespacesForPod(pod, userns),
    ...(selinuxOptions ? { selinuxOptions } : {}),
    ...(context?.runAsUser !== undefined ? { runAsUser: context.runAsUser } : {}),
    ...(context?.runAsGroup !== undefined ? { runAsGroup: context.runAsGroup } : {}),
    supplementalGroups: supplementalGroups(pod, volumeGroups),
    ...(context?.supplementalGroupsPolicy ? { supplementalGroupsPolicy: context.supplementalGroupsPolicy } : {}),
    privileged: hasPrivilegedContainer(pod),
    seccomp: { profileType: 'RuntimeDefault' },
  };
}
