/** sim://'s container identity (identity.ts): what a script sees of its user, capabilities, seccomp and pid 1, as on Linux with runc. */
import { describe, expect, it } from 'vitest';
import { idOutput, identityOf, procStatus } from '../../src/runtime/sim/identity.ts';
import { type LinuxContainerSecurityContext, NamespaceMode } from '../../src/runtime/types.ts';

const base: LinuxContainerSecurityContext = {
  privileged: false,
  namespaceOptions: { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD },
  readonlyRootfs: false,
  supplementalGroups: [],
  noNewPrivs: false,
  maskedPaths: [],
  readonlyPaths: [],
};
const command = ['sh', '-c', 'sleep 10'];
const capEff = (context: LinuxContainerSecurityContext | undefined) => /CapEff:\t(\w+)/.exec(procStatus(identityOf(context, command)))?.[1];

describe('sim:// container identity', () => {
  it.each<[string, LinuxContainerSecurityContext | undefined, string]>([
    ["root with the runtime's default set", { ...base, runAsUser: 0 }, '00000000a80425fb'],
    ['no security context at all: root, the default set', undefined, '00000000a80425fb'],
    ['every capability dropped', { ...base, capabilities: { add: [], drop: ['ALL'] } }, '0000000000000000'],
    ['all dropped, one added back', { ...base, capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] } }, '0000000000001000'],
    ['privileged: every capability', { ...base, privileged: true }, '000001ffffffffff'],
    ['a user other than root keeps no effective capabilities', { ...base, runAsUser: 1000 }, '0000000000000000'],
  ])('%s: CapEff %s', (_case, context, expected) => expect(capEff(context)).toBe(expected));

  it('names the user, group and groups as /proc and id do', () => {
    const identity = identityOf({ ...base, runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [2000] }, command);
    expect(procStatus(identity)).toContain('Uid:\t1000\t1000\t1000\t1000\nGid:\t3000\t3000\t3000\t3000\nGroups:\t3000 2000 ');
    expect(idOutput(identity, '-u')).toBe('1000');
    expect(idOutput(identity, '-g')).toBe('3000');
    expect(idOutput(identity, '')).toBe('uid=1000 gid=3000 groups=3000,2000');
  });

  it('gives the listed groups only, under Strict as under Merge (sim:// images have no /etc/group to merge)', () => {
    const listed = { ...base, runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [2000, 4000] };
    expect(identityOf({ ...listed, supplementalGroupsPolicy: 'Strict' }, command).groups).toEqual([3000, 2000, 4000]);
    expect(identityOf({ ...listed, supplementalGroupsPolicy: 'Merge' }, command).groups).toEqual([3000, 2000, 4000]);
  });

  it('filters system calls unless unconfined or privileged', () => {
    const seccomp = (context: LinuxContainerSecurityContext) => /Seccomp:\t(\d)/.exec(procStatus(identityOf(context, command)))?.[1];
    expect(seccomp({ ...base, seccomp: { profileType: 'RuntimeDefault' } })).toBe('2');
    expect(seccomp({ ...base, seccomp: { profileType: 'Unconfined' } })).toBe('0');
    expect(seccomp({ ...base, seccomp: { profileType: 'RuntimeDefault' }, privileged: true })).toBe('0');
  });

  it('sees its own command, the pause process or the node init at pid 1', () => {
    expect(identityOf(base, command).pid1).toEqual(command);
    expect(identityOf({ ...base, namespaceOptions: { pid: NamespaceMode.POD } }, command).pid1).toEqual(['/pause']);
    expect(identityOf({ ...base, namespaceOptions: { pid: NamespaceMode.NODE } }, command).pid1).toEqual(['/sbin/init']);
  });

  it('ignores a capability Linux does not know, as runc does; refuses a user name it cannot resolve, as containerd does', () => {
    expect(capEff({ ...base, capabilities: { add: ['FLY'], drop: [] } })).toBe('00000000a80425fb');
    expect(() => identityOf({ ...base, runAsUsername: 'nginx' }, command)).toThrow('no users found for "nginx"');
  });
});
