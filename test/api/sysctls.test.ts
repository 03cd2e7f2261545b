/** Which sysctls a pod may set (api/sysctls.ts, the kubelet's sysctl allowlist), from tables. */
import { describe, expect, it } from 'vitest';
import { forbiddenSysctl, sysctlNamespace, unsafeSysctlPatternProblem } from '../../src/api/sysctls.ts';

describe('sysctls', () => {
  it.each<[string, 'ipc' | 'net' | null]>([
    ['net.core.somaxconn', 'net'],
    ['kernel.shm_rmid_forced', 'ipc'],
    ['kernel.msgmax', 'ipc'],
    ['kernel.sem', 'ipc'],
    ['fs.mqueue.msg_max', 'ipc'],
    ['kernel.pid_max', null],
    ['vm.swappiness', null],
  ])('%s is in the %s namespace', (name, expected) => expect(sysctlNamespace(name)).toBe(expected));

  it.each<[string, string | null]>([
    ['net.core.somaxconn', null],
    ['net.*', null],
    ['kernel.msg*', null],
    ['kernel/shm_rmid_forced', null],
    ['kernel.*', 'the sysctl "kernel.*" are not known to be namespaced'],
    ['vm.swappiness', 'the sysctl "vm.swappiness" are not known to be namespaced'],
  ])('--allowed-unsafe-sysctls %s', (pattern, expected) => expect(unsafeSysctlPatternProblem(pattern)).toBe(expected));

  it.each<[string, string[], { hostNetwork?: boolean; hostIPC?: boolean }, string[], string | null]>([
    ['a safe one', ['net.ipv4.tcp_syncookies'], {}, [], null],
    ['a safe one written with slashes', ['kernel/shm_rmid_forced'], {}, [], null],
    ['an unsafe one not allowed', ['kernel.msgmax'], {}, [], 'forbidden sysctl: "kernel.msgmax" not allowlisted'],
    ['an unsafe one allowed by name', ['net.core.somaxconn'], {}, ['net.core.somaxconn'], null],
    ['an unsafe one allowed by prefix', ['kernel.msgmax'], {}, ['kernel.msg*'], null],
    ['a net one with the host network, even safe', ['net.ipv4.tcp_syncookies'], { hostNetwork: true }, [], 'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled'],
    ['an ipc one with the host ipc', ['kernel.shm_rmid_forced'], { hostIPC: true }, [], 'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled'],
    ['the first forbidden one is named', ['net.ipv4.tcp_syncookies', 'vm.swappiness', 'kernel.msgmax'], {}, ['vm.*'], 'forbidden sysctl: "vm.swappiness" not allowlisted'],
  ])('%s', (_case, names, pod, allowed, expected) => expect(forbiddenSysctl(names.map((name) => ({ name })), pod, allowed)).toBe(expected));
});
