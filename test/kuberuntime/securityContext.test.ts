/** Security contexts to the CRI (securityContext.ts), from tables: precedence, fields, profiles, namespaces, runAsNonRoot. */
import { describe, expect, it } from 'vitest';
import type { Container, Pod, SecurityContext } from '../../src/api/types.ts';
import {
  DEFAULT_MASKED_PATHS,
  DEFAULT_READONLY_PATHS,
  type ImageUser,
  appArmorFor,
  containerSecurityContext,
  effectiveSecurityContext,
  namespacesForPod,
  runAsNonRootViolation,
  sandboxSecurityContext,
  seccompFor,
  withPidTarget,
} from '../../src/kuberuntime/securityContext.ts';
import { NamespaceMode } from '../../src/runtime/types.ts';
import { container, makePod } from '../support/pods.ts';

const settings = { seccompDefault: false, seccompProfileRoot: '/var/lib/kubelet/seccomp' };
const withApp = (spec: Partial<Pod['spec']> = {}, context?: SecurityContext): [Pod, Container] => {
  const app = container('app', context ? { securityContext: context } : {});
  return [makePod('web', { containers: [app], ...spec }), app];
};

describe('effective security context', () => {
  it.each<[string, Partial<Pod['spec']>, SecurityContext | undefined, SecurityContext]>([
    ['neither set: empty, never absent', {}, undefined, {}],
    ['the pod gives user, group, runAsNonRoot and SELinux', { securityContext: { runAsUser: 1000, runAsGroup: 3000, runAsNonRoot: true, seLinuxOptions: { level: 's0:c1' }, fsGroup: 2000 } }, undefined, { runAsUser: 1000, runAsGroup: 3000, runAsNonRoot: true, seLinuxOptions: { level: 's0:c1' } }],
    ['the container wins member by member', { securityContext: { runAsUser: 1000, runAsGroup: 3000 } }, { runAsUser: 2000, readOnlyRootFilesystem: true }, { runAsUser: 2000, runAsGroup: 3000, readOnlyRootFilesystem: true }],
    ["SELinux options are replaced whole, not merged", { securityContext: { seLinuxOptions: { user: 'u', level: 's0' } } }, { seLinuxOptions: { type: 't' } }, { seLinuxOptions: { type: 't' } }],
  ])('%s', (_case, spec, context, expected) => {
    const [pod, app] = withApp(spec, context);
    expect(effectiveSecurityContext(pod, app)).toEqual(expected);
  });
});

describe('namespaces', () => {
  it.each<[string, Partial<Pod['spec']>, { network: number; pid: number; ipc: number }]>([
    ['defaults: pod network and ipc, a pid namespace per container', {}, { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD }],
    ['shareProcessNamespace: the pod one', { shareProcessNamespace: true }, { network: NamespaceMode.POD, pid: NamespaceMode.POD, ipc: NamespaceMode.POD }],
    ["hostPID, hostIPC, hostNetwork: the node's", { hostPID: true, hostIPC: true, hostNetwork: true }, { network: NamespaceMode.NODE, pid: NamespaceMode.NODE, ipc: NamespaceMode.NODE }],
  ])('%s', (_case, spec, expected) => expect(namespacesForPod(makePod('p', spec))).toEqual(expected));

  // An ephemeral container's target (kuberuntime_container_linux.go generateLinuxContainerConfig).
  it.each<[string, Partial<Pod['spec']>, string | undefined, { pid: number; targetId?: string }]>([
    ["a target in a pod of per-container pid namespaces: the target's", {}, 'c-app', { pid: NamespaceMode.TARGET, targetId: 'c-app' }],
    ['no target: its own', {}, undefined, { pid: NamespaceMode.CONTAINER }],
    ['shareProcessNamespace: the pod one, whatever the target', { shareProcessNamespace: true }, 'c-app', { pid: NamespaceMode.POD }],
    ["hostPID: the node's, whatever the target", { hostPID: true }, 'c-app', { pid: NamespaceMode.NODE }],
  ])('%s', (_case, spec, target, expected) => {
    const namespaces = withPidTarget(namespacesForPod(makePod('p', spec)), target);
    expect({ pid: namespaces.pid, ...(namespaces.targetId ? { targetId: namespaces.targetId } : {}) }).toEqual(expected);
  });
});

describe('seccomp', () => {
  it.each<[string, Partial<Pod['spec']>, SecurityContext | undefined, boolean, unknown]>([
    ['no profile: Unconfined, explicitly', {}, undefined, false, { profileType: 'Unconfined' }],
    ['no profile with --seccomp-default: RuntimeDefault', {}, undefined, true, { profileType: 'RuntimeDefault' }],
    ["the pod's", { securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }, undefined, false, { profileType: 'RuntimeDefault' }],
    ["the container's over the pod's", { securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }, { seccompProfile: { type: 'Unconfined' } }, true, { profileType: 'Unconfined' }],
    ['Localhost: under <root-dir>/seccomp', {}, { seccompProfile: { type: 'Localhost', localhostProfile: 'audit.json' } }, false, { profileType: 'Localhost', localhostRef: '/var/lib/kubelet/seccomp/audit.json' }],
  ])('%s', (_case, spec, context, seccompDefault, expected) => {
    const [pod, app] = withApp(spec, context);
    expect(seccompFor(pod, app, { ...settings, seccompDefault })).toEqual(expected);
  });

  it('refuses Localhost without a profile, in the kubelet\'s words', () => {
    const [pod, app] = withApp({}, { seccompProfile: { type: 'Localhost' } });
    expect(() => seccompFor(pod, app, settings)).toThrow('localhostProfile must be set if seccompProfile type is Localhost.');
  });
});

describe('AppArmor', () => {
  it('takes the container field, then its annotation, then the pod field', () => {
    const [pod, app] = withApp({ securityContext: { appArmorProfile: { type: 'Unconfined' } } });
    expect(appArmorFor(pod, app)).toEqual({ profile: { profileType: 'Unconfined' }, name: 'unconfined' });
    pod.metadata.annotations = { 'container.apparmor.security.beta.kubernetes.io/app': 'localhost/k8s-deny-write' };
    expect(appArmorFor(pod, app)).toEqual({ profile: { profileType: 'Localhost', localhostRef: 'k8s-deny-write' }, name: 'localhost/k8s-deny-write' });
    app.securityContext = { appArmorProfile: { type: 'RuntimeDefault' } };
    expect(appArmorFor(pod, app)).toEqual({ profile: { profileType: 'RuntimeDefault' }, name: 'runtime/default' });
    expect(appArmorFor(...withApp())).toBeUndefined();
    expect(() => appArmorFor(...withApp({}, { appArmorProfile: { type: 'Localhost' } }))).toThrow('missing localhost apparmor profile name');
  });
});

describe('runAsNonRoot', () => {
  const [pod, app] = withApp();
  const where = '(pod: "web_default(uid-web)", container: app)';
  it.each<[string, SecurityContext, ImageUser, string | null]>([
    ['not asked', {}, {}, null],
    ['runAsUser 0', { runAsNonRoot: true, runAsUser: 0 }, { uid: 1000 }, `container's runAsUser breaks non-root policy ${where}`],
    ['runAsUser non-zero: the image is not asked', { runAsNonRoot: true, runAsUser: 1000 }, {}, null],
    ['an image with no user runs as root', { runAsNonRoot: true }, {}, `container has runAsNonRoot and image will run as root ${where}`],
    ['an image user 0', { runAsNonRoot: true }, { uid: 0 }, `container has runAsNonRoot and image will run as root ${where}`],
    ['an image user by name', { runAsNonRoot: true }, { username: 'nginx' }, `container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root ${where}`],
    ['an image user 101', { runAsNonRoot: true }, { uid: 101 }, null],
  ])('%s', (_case, context, image, expected) => expect(runAsNonRootViolation(pod, app, context, image)).toBe(expected));
});

describe('the container security context sent to the runtime', () => {
  it('carries every member, with the default masked and read-only paths', () => {
    const [pod, app] = withApp(
      { securityContext: { runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000], supplementalGroupsPolicy: 'Strict' } },
      { capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] }, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
    );
    expect(containerSecurityContext(pod, app, { uid: 5 }, settings)).toEqual({
      capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] },
      privileged: false,
      namespaceOptions: { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD },
      runAsUser: 1000,
      runAsGroup: 3000,
      readonlyRootfs: true,
      supplementalGroups: [2000, 4000],
      supplementalGroupsPolicy: 'Strict',
      noNewPrivs: true,
      maskedPaths: [...DEFAULT_MASKED_PATHS],
      readonlyPaths: [...DEFAULT_READONLY_PATHS],
      seccomp: { profileType: 'Unconfined' },
    });
  });

  it.each<[string, ImageUser, object]>([
    ["the image's uid where the pod names none", { uid: 101 }, { runAsUser: 101 }],
    ["the image's user name, for the runtime to resolve", { username: 'nginx' }, { runAsUsername: 'nginx' }],
    ['root when the image names no user', {}, { runAsUser: 0 }],
  ])('%s', (_case, image, expected) => {
    const sent = containerSecurityContext(...withApp(), image, settings);
    expect(sent).toMatchObject(expected);
    expect(sent.runAsGroup).toBeUndefined();
  });

  it("joins an ephemeral container's target pid namespace, the other namespaces the pod's", () => {
    expect(containerSecurityContext(...withApp(), {}, settings, 'c-app').namespaceOptions).toEqual({
      network: NamespaceMode.POD,
      pid: NamespaceMode.TARGET,
      ipc: NamespaceMode.POD,
      targetId: 'c-app',
    });
  });

  it('masks nothing with procMount Unmasked; no_new_privs only when escalation is refused', () => {
    const sent = containerSecurityContext(...withApp({}, { procMount: 'Unmasked', allowPrivilegeEscalation: true }), {}, settings);
    expect(sent).toMatchObject({ maskedPaths: [], readonlyPaths: [], noNewPrivs: false });
    expect(sent.capabilities).toBeUndefined();
  });
});

describe('the sandbox security context', () => {
  it("takes the pod's user, groups and namespaces, is privileged when a container is, and always RuntimeDefault seccomp", () => {
    const pod = makePod('web', {
      securityContext: { runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, seccompProfile: { type: 'Unconfined' } },
      initContainers: [container('init', { securityContext: { privileged: true } })],
      hostIPC: true,
    });
    expect(sandboxSecurityContext(pod)).toEqual({
      namespaceOptions: { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.NODE },
      runAsUser: 1000,
      runAsGroup: 3000,
      supplementalGroups: [2000],
      privileged: true,
      seccomp: { profileType: 'RuntimeDefault' },
    });
    expect(sandboxSecurityContext(makePod('plain')).privileged).toBe(false);
    const debugged = makePod('debugged', { ephemeralContainers: [container('debug', { securityContext: { privileged: true } })] });
    expect(sandboxSecurityContext(debugged).privileged).toBe(true);
  });
});
