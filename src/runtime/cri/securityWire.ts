/**
 * The `linux` security sections of the sandbox and container configs (api.proto
 * LinuxSandboxSecurityContext, LinuxContainerSecurityContext) between their TypeScript shapes and
 * the wire, both ways: the gRPC client writes them, sim://'s server reads them, through the same
 * functions. Optional messages the kubelet leaves unset (a uid wrapper, a profile) stay null on the
 * wire, so the runtime sees "not set" rather than a zero.
 */
import {
  type IdMapping,
  type UserNamespace,
  type LinuxContainerResources,
  type LinuxContainerSecurityContext,
  type LinuxSandboxSecurityContext,
  type NamespaceOptions,
  type SELinuxOption,
  type SecurityProfile,
  type SupplementalGroupsPolicy,
  NamespaceMode,
  definedOnly,
} from '../types.ts';
import {
  type WireEnum,
  type WireInt64,
  type WireLinuxContainerResources,
  type WireLinuxContainerSecurityContext,
  type WireLinuxSandboxSecurityContext,
  type WireSELinuxOption,
  type WireSecurityProfile,
  type WireIdMapping,
  type WireUserNamespace,
  enumValue,
  int64ToNumber,
  namespaceModeFromWire,
  namespaceModeToWire,
} from './wire.ts';

const PROFILE_TYPES = ['RuntimeDefault', 'Unconfined', 'Localhost'] as const;
const GROUPS_POLICIES = ['Merge', 'Strict'] as const;

type WireNamespaces = NonNullable<WireLinuxContainerSecurityContext['namespaceOptions']>;

const usernsToWire = (userns: UserNamespace): WireUserNamespace => ({ mode: namespaceModeToWire(userns.mode), uids: userns.uids, gids: userns.gids });

export function namespacesToWire(options: NamespaceOptions | undefined): WireNamespaces {
  return {
    network: namespaceModeToWire(options?.network),
    pid: namespaceModeToWire(options?.pid),
    ipc: namespaceModeToWire(options?.ipc),
    targetId: options?.targetId ?? '',
    usernsOptions: options?.usernsOptions ? usernsToWire(options.usernsOptions) : null,
  };
}

const mappingsFromWire = (mappings: readonly WireIdMapping[] | undefined): IdMapping[] =>
  (mappings ?? []).map(({ hostId, containerId, length }) => ({ hostId, containerId, length }));

export function namespacesFromWire(wire: WireNamespaces | null): NamespaceOptions {
  const mode = (value: WireEnum) => namespaceModeFromWire(value) ?? NamespaceMode.POD;
  if (!wire) return { network: NamespaceMode.POD, pid: NamespaceMode.POD, ipc: NamespaceMode.POD };
  const userns = wire.usernsOptions;
  return {
    network: mode(wire.network),
    pid: mode(wire.pid),
    ipc: mode(wire.ipc),
    ...(wire.targetId ? { targetId: wire.targetId } : {}),
    ...(userns ? { usernsOptions: { mode: mode(userns.mode), uids: mappingsFromWire(userns.uids), gids: mappingsFromWire(userns.gids) } } : {}),
  };
}

const profileToWire = (profile: SecurityProfile | undefined): WireSecurityProfile | null =>
  profile ? { profileType: profile.profileType, localhostRef: profile.localhostRef ?? '' } : null;

function profileFromWire(wire: WireSecurityProfile | null): SecurityProfile | undefined {
  if (!wire) return undefined;
  const profileType = enumValue(PROFILE_TYPES, wire.profileType) ?? 'RuntimeDefault';
  return wire.localhostRef ? { profileType, localhostRef: wire.localhostRef } : { profileType };
}

const selinuxToWire = (options: SELinuxOption | undefined): WireSELinuxOption | null => (options ? { ...options } : null);
const selinuxFromWire = (wire: WireSELinuxOption | null): SELinuxOption | undefined => (wire ? { ...wire } : undefined);
const int64ToWire = (value: number | undefined) => (value === undefined ? null : { value: String(value) });
const int64FromWire = (wire: { value: WireInt64 } | null) => (wire ? int64ToNumber(wire.value) : undefined);
const groupsPolicyFromWire = (wire: WireEnum): SupplementalGroupsPolicy => enumValue(GROUPS_POLICIES, wire) ?? 'Merge';

export function resourcesToWire(resources: LinuxContainerResources | undefined): WireLinuxContainerResources | null {
  if (!resources) return null;
  const { cpuPeriod, cpuQuota, cpuShares, memoryLimitInBytes, oomScoreAdj } = resources;
  return {
    cpuPeriod: String(cpuPeriod),
    cpuQuota: String(cpuQuota),
    cpuShares: String(cpuShares),
    memoryLimitInBytes: String(memoryLimitInBytes),
    oomScoreAdj: String(oomScoreAdj),
    cpusetCpus: '',
    cpusetMems: '',
    hugepageLimits: (resources.hugepageLimits ?? []).map(({ pageSize, limit }) => ({ pageSize, limit: String(limit) })),
    unified: { ...resources.unified },
    memorySwapLimitInBytes: String(resources.memorySwapLimitInBytes ?? 0),
  };
}

/** The wire's empty list, map and zero read back as absent, as the types say. */
export function resourcesFromWire(wire: WireLinuxContainerResources | null): LinuxContainerResources | undefined {
  if (!wire) return undefined;
  const swap = int64ToNumber(wire.memorySwapLimitInBytes);
  return definedOnly<LinuxContainerResources>({
    cpuPeriod: int64ToNumber(wire.cpuPeriod),
    cpuQuota: int64ToNumber(wire.cpuQuota),
    cpuShares: int64ToNumber(wire.cpuShares),
    memoryLimitInBytes: int64ToNumber(wire.memoryLimitInBytes),
    oomScoreAdj: int64ToNumber(wire.oomScoreAdj),
    hugepageLimits: wire.hugepageLimits.length ? wire.hugepageLimits.map(({ pageSize, limit }) => ({ pageSize, limit: int64ToNumber(limit) })) : undefined,
    unified: Object.keys(wire.unified).length ? { ...wire.unified } : undefined,
    memorySwapLimitInBytes: swap !== 0 ? swap : undefined,
  });
}

export function sandboxSecurityToWire(context: LinuxSandboxSecurityContext | undefined): WireLinuxSandboxSecurityContext | null {
  if (!context) return null;
  return {
    namespaceOptions: namespacesToWire(context.namespaceOptions),
    selinuxOptions: selinuxToWire(context.selinuxOptions),
    runAsUser: int64ToWire(context.runAsUser),
    runAsGroup: int64ToWire(context.runAsGroup),
    readonlyRootfs: false,
    supplementalGroups: (context.supplementalGroups ?? []).map(String),
    supplementalGroupsPolicy: context.supplementalGroupsPolicy ?? 'Merge',
    privileged: context.privileged ?? false,
    seccomp: profileToWire(context.seccomp),
    apparmor: null,
  };
}

export function sandboxSecurityFromWire(wire: WireLinuxSandboxSecurityContext | null): LinuxSandboxSecurityContext | undefined {
  if (!wire) return undefined;
  return definedOnly<LinuxSandboxSecurityContext>({
    namespaceOptions: namespacesFromWire(wire.namespaceOptions),
    selinuxOptions: selinuxFromWire(wire.selinuxOptions),
    runAsUser: int64FromWire(wire.runAsUser),
    runAsGroup: int64FromWire(wire.runAsGroup),
    supplementalGroups: wire.supplementalGroups.map(int64ToNumber),
    supplementalGroupsPolicy: groupsPolicyFromWire(wire.supplementalGroupsPolicy),
    privileged: wire.privileged,
    seccomp: profileFromWire(wire.seccomp),
  });
}

export function containerSecurityToWire(context: LinuxContainerSecurityContext | undefined): WireLinuxContainerSecurityContext | null {
  if (!context) return null;
  return {
    capabilities: context.capabilities ? { addCapabilities: context.capabilities.add, dropCapabilities: context.capabilities.drop, addAmbientCapabilities: [] } : null,
    privileged: context.privileged,
    namespaceOptions: namespacesToWire(context.namespaceOptions),
    selinuxOptions: selinuxToWire(context.selinuxOptions),
    runAsUser: int64ToWire(context.runAsUser),
    runAsUsername: context.runAsUsername ?? '',
    runAsGroup: int64ToWire(context.runAsGroup),
    readonlyRootfs: context.readonlyRootfs,
    supplementalGroups: context.supplementalGroups.map(String),
    supplementalGroupsPolicy: context.supplementalGroupsPolicy ?? 'Merge',
    noNewPrivs: context.noNewPrivs,
    maskedPaths: context.maskedPaths,
    readonlyPaths: context.readonlyPaths,
    seccomp: profileToWire(context.seccomp),
    apparmor: profileToWire(context.apparmor),
    apparmorProfile: context.apparmorProfile ?? '',
  };
}

export function containerSecurityFromWire(wire: WireLinuxContainerSecurityContext | null): LinuxContainerSecurityContext | undefined {
  if (!wire) return undefined;
  return definedOnly<LinuxContainerSecurityContext>({
    capabilities: wire.capabilities ? { add: [...wire.capabilities.addCapabilities], drop: [...wire.capabilities.dropCapabilities] } : undefined,
    privileged: wire.privileged,
    namespaceOptions: namespacesFromWire(wire.namespaceOptions),
    selinuxOptions: selinuxFromWire(wire.selinuxOptions),
    runAsUser: int64FromWire(wire.runAsUser),
    runAsUsername: wire.runAsUsername || undefined,
    runAsGroup: int64FromWire(wire.runAsGroup),
    readonlyRootfs: wire.readonlyRootfs,
    supplementalGroups: wire.supplementalGroups.map(int64ToNumber),
    supplementalGroupsPolicy: groupsPolicyFromWire(wire.supplementalGroupsPolicy),
    noNewPrivs: wire.noNewPrivs,
    maskedPaths: [...wire.maskedPaths],
    readonlyPaths: [...wire.readonlyPaths],
    seccomp: profileFromWire(wire.seccomp),
    apparmor: profileFromWire(wire.apparmor),
    apparmorProfile: wire.apparmorProfile || undefined,
  });
}
