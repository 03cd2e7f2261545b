/**
 * Which kernel parameters a pod may set (pkg/kubelet/sysctl/safe_sysctls.go, allowlist.go,
 * namespace.go), pure: the safe ones every node allows, the namespaced groups an operator may allow
 * more of with --allowed-unsafe-sysctls, and the check of one pod against both. A sysctl outside
 * the pod's own namespaces would change the node for every pod; those are never allowed.
 */

/** Allowed on every node: namespaced, and unable to hurt other pods. */
export const SAFE_SYSCTLS: readonly string[] = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
  'net.ipv4.tcp_rmem',
  'net.ipv4.tcp_wmem',
];

/** The namespace a sysctl lives in, by its name (namespace.go): the pod's ipc or network one, or none (the node's). */
export function sysctlNamespace(name: string): 'ipc' | 'net' | null {
  if (name.startsWith('net.')) return 'net';
  if (name.startsWith('kernel.shm') || name.startsWith('kernel.msg') || name === 'kernel.sem' || name.startsWith('fs.mqueue.')) return 'ipc';
  return null;
}

/** `kernel/shm_rmid_forced` is `kernel.shm_rmid_forced`: a name may use either separator. */
export function normalizeSysctl(name: string): string {
  return name.replaceAll('/', '.');
}

/** A pattern of --allowed-unsafe-sysctls (`net.core.somaxconn`, `kernel.msg*`) that is not namespaced: the kubelet's startup error. */
export function unsafeSysctlPatternProblem(pattern: string): string | null {
  const name = normalizeSysctl(pattern);
  // A prefix pattern is namespaced when its prefix is (`kernel.shm*`, `net.*`): so is all it matches.
  const namespaced = sysctlNamespace(name.endsWith('*') ? name.slice(0, -1) : name) !== null;
  return namespaced ? null : `the sysctl "${pattern}" are not known to be namespaced`;
}

function matches(pattern: string, name: string): boolean {
  const p = normalizeSysctl(pattern);
  return p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : name === p;
}

/** Why the pod may not set one of its sysctls (allowlist.go Admit): null when it may set them all. */
export function forbiddenSysctl(
  sysctls: readonly { name: string }[],
  pod: { hostNetwork?: boolean; hostIPC?: boolean },
  allowedUnsafe: readonly string[],
): string | null {
  for (const { name: raw } of sysctls) {
    const name = normalizeSysctl(raw);
    const namespace = sysctlNamespace(name);
    if (namespace === 'net' && pod.hostNetwork) return `forbidden sysctl: "${raw}" not allowed with host net enabled`;
    if (namespace === 'ipc' && pod.hostIPC) return `forbidden sysctl: "${raw}" not allowed with host ipc enabled`;
    if (SAFE_SYSCTLS.includes(name)) continue;
    if (namespace !== null && allowedUnsafe.some((pattern) => matches(pattern, name))) continue;
    return `forbidden sysctl: "${raw}" not allowlisted`;
  }
  return null;
}
