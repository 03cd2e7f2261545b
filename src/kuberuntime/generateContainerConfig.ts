/**
 * A container's CRI config, made afresh before each start as the kubelet makes it
 * (pkg/kubelet/kuberuntime/kuberuntime_container.go generateContainerConfig, with kubelet_pods.go
 * makeEnvironmentVariables and makeMounts): its environment (the ConfigMaps and Secrets it names,
 * read through the node's object cache; the downward API; the Services' link variables), its
 * mounts (the pod's volumes with their subPaths, the managed /etc/hosts, the termination message
 * file of terminationMessage.ts), its CPU and memory
 * settings (resources.ts: CPU, memory, huge pages, swap), its security context
 * (securityContext.ts, with the image's user from the ImageStatus ensureImage read; runAsNonRoot
 * checked) and its log
 * directory, made for the runtime to open the log in. A spec the node cannot satisfy throws
 * ContainerConfigError, which the start reports as CreateContainerConfigError. What it reads of the
 * node is ContainerConfigWork, and nothing else.
 */
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type Container, type Pod, podRef } from '../api/types.ts';
import type { ContainerConfig, ImageInfo, LinuxContainerSecurityContext, Mount, UserNamespace } from '../runtime/types.ts';
import { mkdirAll } from '../volumes/mkdirAll.ts';
import { containerMounts } from '../volumes/plan.ts';
import { resolveSubPaths } from '../volumes/subPath.ts';
import { ContainerConfigError, containerConfig, expandVars } from './configs.ts';
import { makeEnvironment, readReferencedObjects } from './envVars.ts';
import { ETC_HOSTS, managedHostsContent, mountsManagedHosts, podHostnameAndDomain } from './hosts.ts';
import { errorText } from './images.ts';
import type { ContainerType } from './labels.ts';
import { containerResources } from './resources.ts';
import type { PodWork } from './podWork.ts';
import { terminationMessageMount } from './terminationMessage.ts';
import { makeBlockVolumes } from './blockVolumes.ts';
import {
  type ImageUser,
  SecurityContextError,
  containerSecurityContext,
  effectiveSecurityContext,
  runAsNonRootViolation,
} from './securityContext.ts';

/** What a container's config reads of the node. */
export type ContainerConfigWork = Pick<PodWork, 'host' | 'cluster' | 'observe'>;

/** The container to configure, and what its start knows of it. */
export interface ContainerToConfigure {
  pod: Pod;
  container: Container;
  type: ContainerType;
  restartCount: number;
  /** The image as the runtime knows it (ensureImage's answer). */
  image: string;
  /** The user the image runs as (its ImageStatus, which ensureImage read): where the pod names none. */
  imageUser: ImageUser;
  /** The sandbox's address, read only when the environment or the hosts file needs it. */
  podIP(): Promise<string>;
  /** The pod's log directory (the sandbox config's): the container's goes inside. */
  podLogDirectory: string;
  /** An ephemeral container's target: the id of the container whose pid namespace it joins (startContainer.ts namespaceTarget). */
  pidTarget?: string;
  /** The pod's user namespace (the sandbox config's): its containers are in it too. */
  userns?: UserNamespace;
}

/** The user an image runs as, from its ImageStatus (helpers.go getImageUser): a uid, else a name, else root. */
export function imageUserOf(image: ImageInfo | null): ImageUser {
  return image?.uid !== undefined ? { uid: image.uid } : image?.username ? { username: image.username } : {};
}

/** The node's own hosts file, which host-network pods see under the kubelet's header. */
const NODE_HOSTS_FILE = '/etc/hosts';

/**
 * Writes the pod's managed hosts file (again: at each container start) in the pod's directory
 * (made by makePodDataDirs) and returns its mount. A disk that refuses it fails the container's
 * configuration (kubelet_pods.go makeMounts → ensureHostsFile), with the file named: Node's
 * write errors do not name it.
 */
async function hostsMount(podsDir: string, pod: Pod, podIPs: readonly string[], clusterDomain: string): Promise<Mount> {
  const nodeHosts = pod.spec.hostNetwork ? await readFile(NODE_HOSTS_FILE, 'utf8').catch(() => '') : '';
  const file = path.join(podsDir, pod.metadata.uid, 'etc-hosts');
  try {
    await writeFile(file, managedHostsContent(pod, podIPs, podHostnameAndDomain(pod, clusterDomain), nodeHosts));
    await chmod(file, 0o644);
  } catch (err) {
    throw new ContainerConfigError(`failed to write the pod's hosts file ${file}: ${errorText(err)}`);
  }
  return { containerPath: ETC_HOSTS, hostPath: file, readonly: false };
}

/**
 * The container's security context for the runtime, or ContainerConfigError with the reason it
 * may not run: a user that breaks runAsNonRoot, a profile the kubelet refuses.
 */
function securityContextFor(deps: ContainerConfigWork, { pod, container, imageUser, pidTarget, userns }: ContainerToConfigure): LinuxContainerSecurityContext {
  const violation = runAsNonRootViolation(pod, container, effectiveSecurityContext(pod, container), imageUser);
  if (violation) throw new ContainerConfigError(violation);
  try {
    return containerSecurityContext(pod, container, imageUser, deps.host.security, pidTarget, userns, deps.host.volumes.extraSupplementalGroups(pod.metadata.uid));
  } catch (err) {
    if (err instanceof SecurityContextError) throw new ContainerConfigError(err.message);
    throw err;
  }
}

export async function generateContainerConfig(deps: ContainerConfigWork, target: ContainerToConfigure): Promise<ContainerConfig> {
  const { pod, container } = target;
  // The raw block devices first, whose errors come before the environment's (GenerateRunContainerOptions).
  const blockVolumes = await makeBlockVolumes(container, deps.host.volumes.mountedVolumes(pod.metadata.uid));
  if ('error' in blockVolumes) throw new ContainerConfigError(blockVolumes.error);
  const objects = await readReferencedObjects(deps.cluster?.objects, pod, container);
  const hostIPs = deps.host.hostIPs ?? [];
  const podIPs = pod.spec.hostNetwork ? hostIPs : [await target.podIP()].filter(Boolean);
  const allocatable = deps.host.allocatable?.();
  const services = deps.cluster ? deps.cluster.services() : [];
  const envs = makeEnvironment({ pod, container, podIPs, hostIPs, services, ...objects, ...(allocatable ? { allocatable } : {}) });
  const env = new Map(envs.map((e) => [e.key, e.value]));
  const volumeMounts = deps.host.podsDir
    ? containerMounts(deps.host.podsDir, pod, container, (text) => expandVars(text, env), deps.host.volumes.mountedVolumes(pod.metadata.uid))
    : { mounts: [] };
  if ('error' in volumeMounts) throw new ContainerConfigError(volumeMounts.error);
  const resolved = await resolveSubPaths(volumeMounts.mounts, container.name);
  if ('error' in resolved) throw new ContainerConfigError(resolved.error);
  const mounts: Mount[] = [...resolved.mounts];
  if (deps.host.podsDir && mountsManagedHosts(pod, container, podIPs)) mounts.push(await hostsMount(deps.host.podsDir, pod, podIPs, deps.host.dns?.clusterDomain ?? ''));
  if (deps.host.podsDir) {
    const terminationLog = await terminationMessageMount(deps.host.podsDir, pod, container, (err) =>
      deps.observe.log('error', 'Error on creating termination-log file', { pod: podRef(pod), container: container.name, err: errorText(err) }),
    );
    if (terminationLog) mounts.push(terminationLog);
  }
  // After the environment and mounts, whose errors come first.
  const securityContext = securityContextFor(deps, target);
  // The container's log directory, before the runtime opens its log there (kuberuntime_container.go generateContainerConfig).
  await mkdirAll(path.join(target.podLogDirectory, container.name), 0o755).catch((err: unknown) => {
    throw new ContainerConfigError(`create container log directory for container ${container.name} failed: ${errorText(err)}`);
  });
  const resources = containerResources(pod, container, { memoryCapacityBytes: deps.host.memoryCapacityBytes, ...deps.host.memoryFeatures });
  const config = containerConfig(pod, container, target.type, target.restartCount, target.image, envs, mounts, { resources, securityContext });
  return blockVolumes.devices.length > 0 ? { ...config, devices: blockVolumes.devices } : config;
}
