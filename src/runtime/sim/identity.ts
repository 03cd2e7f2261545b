/**
 * Who a sim:// container's process is, from its CRI security context, as runc would make it on
 * Linux: its uid, gid and groups, its capability sets (a capability Linux does not know is
 * ignored, as runc ignores it), its seccomp and no_new_privs state, and which process it sees as
 * pid 1 (its own, the pod's pause, the node's init, or the pid 1 of the container it targets). The engine writes the result where a script reads it on Linux
 * (`/proc/self/status`, `/proc/1/cmdline`), and the shell's `id` reads it back, so one manifest
 * prints the same on sim:// and on containerd with busybox.
 */
import { type LinuxContainerSecurityContext, NamespaceMode } from '../types.ts';
import { SimError } from './errors.ts';

/** The Linux capabilities by bit (include/uapi/linux/capability.h). */
const CAPABILITIES = [
  'CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'SETPCAP', 'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_ADMIN', 'NET_RAW', 'IPC_LOCK', 'IPC_OWNER', 'SYS_MODULE', 'SYS_RAWIO', 'SYS_CHROOT',
  'SYS_PTRACE', 'SYS_PACCT', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_NICE', 'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'MKNOD', 'LEASE',
  'AUDIT_WRITE', 'AUDIT_CONTROL', 'SETFCAP', 'MAC_OVERRIDE', 'MAC_ADMIN', 'SYSLOG', 'WAKE_ALARM', 'BLOCK_SUSPEND', 'AUDIT_READ',
  'PERFMON', 'BPF', 'CHECKPOINT_RESTORE',
] as const;

/** The set a container runtime gives by default (containerd's oci.WithDefaultSpec). */
const DEFAULT_CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FSETID', 'FOWNER', 'MKNOD', 'NET_RAW', 'SETGID', 'SETUID', 'SETFCAP', 'SETPCAP', 'NET_BIND_SERVICE', 'SYS_CHROOT', 'KILL', 'AUDIT_WRITE'];

/** What stands at pid 1 in the pod's and the node's pid namespaces. */
const POD_INIT = '/pause';
const NODE_INIT = '/sbin/init';

export interface SimIdentity {
  uid: number;
  gid: number;
  groups: number[];
  /** Capability sets as bit masks. */
  effective: bigint;
  bounding: bigint;
  /** `/proc/self/status` Seccomp: 0 disabled, 2 filtering. */
  seccomp: 0 | 2;
  noNewPrivs: boolean;
  /** What `/proc/1/cmdline` holds: the container's own command, the pod's pause process or the node's init. */
  pid1: string[];
}

/** A capability's bit; none for a name Linux does not know, which runc ignores (with a warning in its log) and so does sim://. */
const bit = (name: string): bigint => {
  const index = (CAPABILITIES as readonly string[]).indexOf(name.replace(/^CAP_/, ''));
  return index < 0 ? 0n : 1n << BigInt(index);
};
const ALL = (1n << BigInt(CAPABILITIES.length)) - 1n;

/** The bounding set: the default, less what is dropped, plus what is added (`ALL` in either meaning every one). */
function bounding(context: LinuxContainerSecurityContext | undefined): bigint {
  if (context?.privileged) return ALL;
  let set = DEFAULT_CAPABILITIES.reduce((mask, name) => mask | bit(name), 0n);
  for (const name of context?.capabilities?.drop ?? []) set &= name === 'ALL' ? 0n : ~bit(name);
  for (const name of context?.capabilities?.add ?? []) set |= name === 'ALL' ? ALL : bit(name);
  return set;
}

/**
 * The identity of a container's processes. A uid or a name the image does not know is the
 * runtime's concern (containerd reads the image's /etc/passwd); sim:// images know no names, so a
 * name that is not a number is refused, as containerd refuses one it cannot find. `target` is what
 * runs at pid 1 in the namespace of the container a pid TARGET container joins (an ephemeral
 * container's target): the joining container sees the target's processes, not its own command.
 */
export function identityOf(context: LinuxContainerSecurityContext | undefined, command: string[], target?: readonly string[]): SimIdentity {
  let uid = context?.runAsUser ?? 0;
  if (context?.runAsUsername !== undefined) {
    if (!/^\d+$/.test(context.runAsUsername)) throw new SimError('UNKNOWN', `failed to generate container spec: no users found for "${context.runAsUsername}" in the image's /etc/passwd`);
    uid = Number(context.runAsUsername);
  }
  const gid = context?.runAsGroup ?? 0;
  const set = bounding(context);
  const pidMode = context?.namespaceOptions.pid ?? NamespaceMode.POD;
  return {
    uid,
    gid,
    // The primary group and the groups the kubelet lists (fsGroup, supplementalGroups). Merge would
    // add the user's groups from the image's /etc/group, Strict would not (the runtime's rule);
    // sim:// images have no /etc/group, so both policies give exactly these.
    groups: [...new Set([gid, ...(context?.supplementalGroups ?? [])])],
    // A process that is not root keeps no effective capabilities across exec (no ambient set).
    effective: uid === 0 ? set : 0n,
    bounding: set,
    seccomp: context?.privileged || !context?.seccomp || context.seccomp.profileType === 'Unconfined' ? 0 : 2,
    noNewPrivs: context?.noNewPrivs ?? false,
    pid1:
      pidMode === NamespaceMode.CONTAINER
        ? command
        : pidMode === NamespaceMode.NODE
          ? [NODE_INIT]
          : pidMode === NamespaceMode.TARGET && target
            ? [...target]
            : [POD_INIT],
  };
}

const hex = (mask: bigint) => mask.toString(16).padStart(16, '0');

/** The lines of `/proc/self/status` that tell who the process is (as Linux writes them). */
export function procStatus(identity: SimIdentity): string {
  const ids = (id: number) => `${id}\t${id}\t${id}\t${id}`;
  return [
    'Name:\tsh',
    `Uid:\t${ids(identity.uid)}`,
    `Gid:\t${ids(identity.gid)}`,
    `Groups:\t${identity.groups.join(' ')} `,
    `CapInh:\t${hex(0n)}`,
    `CapPrm:\t${hex(identity.effective)}`,
    `CapEff:\t${hex(identity.effective)}`,
    `CapBnd:\t${hex(identity.bounding)}`,
    `CapAmb:\t${hex(0n)}`,
    `NoNewPrivs:\t${identity.noNewPrivs ? 1 : 0}`,
    `Seccomp:\t${identity.seccomp}`,
    '',
  ].join('\n');
}

/** What busybox `id` prints for this identity (no names: sim:// images have no /etc/passwd). */
export function idOutput(identity: Pick<SimIdentity, 'uid' | 'gid' | 'groups'>, flag: '' | '-u' | '-g' | '-G'): string {
  if (flag === '-u') return `${identity.uid}`;
  if (flag === '-g') return `${identity.gid}`;
  if (flag === '-G') return identity.groups.join(' ');
  return `uid=${identity.uid} gid=${identity.gid} groups=${identity.groups.join(',')}`;
}
