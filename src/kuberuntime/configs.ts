/**
 * CRI sandbox and container configs built from a pod spec, as the kubelet builds them: metadata,
 * the kubelet's labels and annotations (pkg/kubelet/kuberuntime/labels.go newContainerLabels,
 * newContainerAnnotations), log paths under the pod's log directory (and a running container's
 * log found again from its labels), host-port mappings, and `$(VAR)` expansion in command, args
 * and env.
 */
import path from 'node:path';
import type { Container, Pod } from '../api/types.ts';
import type { Container as RuntimeContainer, ContainerConfig, DnsConfig, Mount, PodSandboxConfig, PortMapping, UserNamespace } from '../runtime/types.ts';
import { sandboxSecurityContext } from './securityContext.ts';
import { sandboxHostname } from './hosts.ts';
import { Annotation, type ContainerType, Label, containerAnnotations, containerLabels, sandboxLabels } from './labels.ts';

/** `<namespace>_<name>_<uid>`, a pod's log directory under the logs root (pkg/kubelet/kuberuntime/helpers.go BuildPodLogsDirectory). */
const podLogDirectoryName = (namespace: string, name: string, uid: string): string => `${namespace}_${name}_${uid}`;

/** `<container>/<restarts>.log`, a container's log in its pod's directory (pkg/kubelet/kuberuntime/helpers.go buildContainerLogsPath). */
const containerLogName = (container: string, restartCount: number | string): string => path.join(container, `${restartCount}.log`);

/** `<logsRoot>/<namespace>_<name>_<uid>`, the kubelet's per-pod log directory. */
export function podLogDirectory(logsRoot: string, pod: Pod): string {
  return path.join(logsRoot, podLogDirectoryName(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid));
}

/**
 * A running container's log file, where the agent put it, from the container's labels and
 * annotations: the log manager and the stats provider find it without a ContainerStatus call
 * (the kubelet asks the runtime for its LogPath). Null for a container the agent did not label.
 */
export function containerLogPath(podLogsDir: string, container: Pick<RuntimeContainer, 'labels' | 'annotations'>): string | null {
  const { labels, annotations } = container;
  const ns = labels[Label.podNamespace];
  const pod = labels[Label.podName];
  const uid = labels[Label.podUid];
  const name = labels[Label.containerName];
  const restarts = annotations[Annotation.restartCount] ?? '0';
  if (!ns || !pod || !uid || !name || !/^\d+$/.test(restarts)) return null;
  return path.join(podLogsDir, podLogDirectoryName(ns, pod, uid), containerLogName(name, restarts));
}

function portMappings(pod: Pod): PortMapping[] {
  const mappings: PortMapping[] = [];
  for (const container of pod.spec.containers) {
    for (const port of container.ports ?? []) {
      if (!port.hostPort) continue;
      mappings.push({
        protocol: port.protocol ?? 'TCP',
        containerPort: port.containerPort,
        hostPort: port.hostPort,
        hostIp: port.hostIP ?? '',
      });
    }
  }
  return mappings;
}

/** What a sandbox's config takes from the node: its DNS, its cgroup, its user namespace (absent: none sent), its cluster domain. */
interface SandboxSettings {
  dns?: DnsConfig | undefined;
  cgroupParent?: string | undefined;
  userns?: UserNamespace | undefined;
  clusterDomain?: string | undefined;
  /** The groups the pod's volumes add (GetExtraSupplementalGroupsForPod). */
  volumeGroups?: readonly number[] | undefined;
}

/**
 * The pod's sandbox config; throws where it cannot be made (a fully qualified hostname longer than
 * the kernel takes), as generatePodSandboxConfig fails.
 */
export function sandboxConfig(pod: Pod, attempt: number, logsRoot: string, { dns, cgroupParent, userns, clusterDomain = '', volumeGroups = [] }: SandboxSettings = {}): PodSandboxConfig {
  // A host-network pod has the node's hostname: the runtime leaves it in the node's UTS namespace
  // and refuses to set one there (kuberuntime_sandbox.go generatePodSandboxConfig).
  const hostname = pod.spec.hostNetwork ? '' : sandboxHostname(pod, clusterDomain);
  if (hostname instanceof Error) throw hostname;
  return {
    metadata: {
      name: pod.metadata.name,
      namespace: pod.metadata.namespace,
      uid: pod.metadata.uid,
      attempt,
    },
    hostname,
    logDirectory: podLogDirectory(logsRoot, pod),
    portMappings: portMappings(pod),
    labels: sandboxLabels(pod),
    annotations: { ...pod.metadata.annotations },
    ...(dns ? { dnsConfig: dns } : {}),
    linux: {
      // The pod's own cgroup, where the node keeps one: the runtime puts the sandbox and the containers under it.
      ...(cgroupParent ? { cgroupParent } : {}),
      securityContext: sandboxSecurityContext(pod, userns, volumeGroups),
      // Admitted against the node's allowlist already; passed as written.
      sysctls: Object.fromEntries((pod.spec.securityContext?.sysctls ?? []).map(({ name, value }) => [name, value])),
    },
  };
}

/**
 * Expands `$(NAME)` references from `vars`; `$$(NAME)` escapes to a literal `$(NAME)` and an
 * unknown reference is left as written, as Kubernetes does.
 */
export function expandVars(text: string, vars: ReadonlyMap<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (match, name: string | undefined) => {
    if (match === '$$') return '$';
    return name !== undefined && vars.has(name) ? (vars.get(name) as string) : match;
  });
}

/** Thrown when a container's config cannot be built (the kubelet's CreateContainerConfigError). */
export class ContainerConfigError extends Error {
  override readonly name = 'ContainerConfigError';
}

/** The container's CRI config; `envs` is its resolved environment (envVars.ts makeEnvironment). */
export function containerConfig(
  pod: Pod,
  container: Container,
  type: ContainerType,
  restartCount: number,
  image: string,
  envs: { key: string; value: string }[],
  mounts: Mount[] = [],
  linux?: ContainerConfig['linux'],
): ContainerConfig {
  // Command and args are expanded with the final environment (ExpandContainerCommandAndArgs).
  const vars = new Map(envs.map((e) => [e.key, e.value]));
  return {
    metadata: { name: container.name, attempt: restartCount },
    image: { image },
    command: (container.command ?? []).map((c) => expandVars(c, vars)),
    args: (container.args ?? []).map((a) => expandVars(a, vars)),
    workingDir: container.workingDir ?? '',
    envs,
    mounts,
    labels: containerLabels(pod, container),
    annotations: containerAnnotations(pod, container, restartCount, type),
    logPath: containerLogName(container.name, restartCount),
    stdin: container.stdin ?? false,
    ...(container.stdinOnce ? { stdinOnce: true } : {}),
    tty: container.tty ?? false,
    ...(linux ? { linux } : {}),
  };
}
