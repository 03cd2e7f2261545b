/**
 * A container's environment, pure (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables,
 * podFieldSelectorRuntimeValue, containerResourceRuntimeValue): `envFrom` in order into a working
 * set (later sources override earlier, keys prefixed), then `env` in order, each `value` expanded
 * against what is known so far and each `valueFrom` resolved (never expanded). The ConfigMaps and
 * Secrets are read beforehand (`referencedObjects` says which) and given by name: `null` when
 * the API has none of that name.
 *
 * A reference that cannot be resolved (an object or key missing and not optional, an unknown
 * field path) throws ContainerConfigError with the kubelet's message: the container waits with
 * CreateContainerConfigError and the sync retries it.
 *
 * Service link variables (pkg/kubelet/envvars/envvars.go FromServices, kubelet_pods.go
 * getServiceEnvVarMap): always those of `default/kubernetes` (KUBERNETES_SERVICE_HOST/PORT, what
 * in-cluster clients read), and with `enableServiceLinks` (default true) those of the pod's own
 * namespace; they are known to `$(VAR)` after the working set, and added where it has no such name.
 * Before the node has listed the Services once, a pod from the API cannot start (the kubelet's
 * "services have not yet been read at least once").
 */
import type { Service } from '../api/cluster.ts';
import { type Container, type EnvVarSource, isStaticPod, type Pod } from '../api/types.ts';
import type { ResourceAmounts } from '../api/quantity.ts';
import { containerResourceValue, podFieldValue } from '../api/downward.ts';
import { ContainerConfigError, expandVars } from './configs.ts';
import type { ObjectReader } from '../client/objects.ts';

/** A ConfigMap's `data` or a Secret's decoded `data`, by key. */
type ObjectData = Readonly<Record<string, string>>;

export interface EnvInputs {
  pod: Pod;
  container: Container;
  /** This sync's pod IPs (the sandbox's; the node's for hostNetwork), first the primary. */
  podIPs: readonly string[];
  /** The node's IPs (--node-ip), first the primary. */
  hostIPs: readonly string[];
  /** The node's allocatable amounts: the limit of a container that sets none (resourceFieldRef). */
  allocatable?: ResourceAmounts;
  configMaps: ReadonlyMap<string, ObjectData | null>;
  secrets: ReadonlyMap<string, ObjectData | null>;
  /** The cluster's Services; null while they have not been listed yet; [] on a node without an API server. */
  services: readonly Service[] | null;
}

/**
 * Reads what the container's environment refers to, for makeEnvironment. Without a reader (no API
 * server) a reference fails as the kubelet's does without a client; a failed read fails the
 * container's config with the read's message (the sync retries).
 */
export async function readReferencedObjects(
  reader: Pick<ObjectReader, 'configMap' | 'secret'> | undefined,
  pod: Pod,
  container: Container,
): Promise<Pick<EnvInputs, 'configMaps' | 'secrets'>> {
  const { configMaps, secrets } = referencedObjects(container);
  const ns = pod.metadata.namespace;
  // The environment reads a ConfigMap's `data` and a Secret's values as text, as they are now (no cached copy).
  const asText = {
    configMap: async (name: string) => (await reader!.configMap(ns, name, 0))?.data ?? null,
    secret: async (name: string) => {
      const found = await reader!.secret(ns, name, 0);
      return found ? Object.fromEntries(Object.entries(found).map(([k, v]) => [k, v.toString('utf8')])) : null;
    },
  };
  const read = async (kind: 'configMap' | 'secret', names: Set<string>) => {
    const found = new Map<string, ObjectData | null>();
    for (const name of names) {
      if (!reader) throw new ContainerConfigError(`couldn't get ${kind} ${ns}/${name}, no kubeClient defined`);
      try {
        found.set(name, await asText[kind](name));
      } catch (err) {
        throw new ContainerConfigError(err instanceof Error ? err.message : String(err));
      }
    }
    return found;
  };
  return { configMaps: await read('configMap', configMaps), secrets: await read('secret', secrets) };
}

/** The ConfigMaps and Secrets the container's environment reads, by name. */
export function referencedObjects(container: Container): { configMaps: Set<string>; secrets: Set<string> } {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef?.name) configMaps.add(from.configMapRef.name);
    if (from.secretRef?.name) secrets.add(from.secretRef.name);
  }
  for (const env of container.env ?? []) {
    const name = env.valueFrom?.configMapKeyRef?.name;
    if (name) configMaps.add(name);
    const secret = env.valueFrom?.secretKeyRef?.name;
    if (secret) secrets.add(secret);
  }
  return { configMaps, secrets };
}

/** The environment as CRI takes it: each name once, envFrom's first, in the order first set. */
export function makeEnvironment(inputs: EnvInputs): { key: string; value: string }[] {
  const { pod, container } = inputs;
  const ns = pod.metadata.namespace;
  if (inputs.services === null && !isStaticPod(pod)) throw new ContainerConfigError('services have not yet been read at least once, cannot construct envvars');
  const enableServiceLinks = pod.spec['enableServiceLinks'] !== false;
  const serviceVars = serviceEnv(inputs.services ?? [], ns, enableServiceLinks);
  const vars = new Map<string, string>();
  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    const ref = from.configMapRef ?? from.secretRef;
    if (!ref) continue;
    const kind = from.configMapRef ? 'configmap' : 'secret';
    const data = (kind === 'configmap' ? inputs.configMaps : inputs.secrets).get(ref.name ?? '');
    if (!data) {
      if (ref.optional) continue;
      throw new ContainerConfigError(`${kind} "${ref.name ?? ''}" not found`);
    }
    for (const [key, value] of Object.entries(data)) vars.set(prefix + key, value);
  }
  for (const env of container.env ?? []) {
    if (env.valueFrom) {
      const value = fromSource(env.valueFrom, inputs, ns);
      if (value !== undefined) vars.set(env.name, value);
    } else {
      vars.set(env.name, env.value ? expandVars(env.value, new Map([...serviceVars, ...vars])) : '');
    }
  }
  for (const [key, value] of serviceVars) if (!vars.has(key)) vars.set(key, value);
  return [...vars].map(([key, value]) => ({ key, value }));
}

const envName = (name: string) => name.replace(/-/g, '_').toUpperCase();
const hostPort = (ip: string, port: number) => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);

/** The service link variables a pod in `namespace` sees (getServiceEnvVarMap + FromServices). */
export function serviceEnv(services: readonly Service[], namespace: string, enableServiceLinks: boolean): Map<string, string> {
  const chosen = new Map<string, Service>();
  for (const service of [...services].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))) {
    const ip = service.spec.clusterIP;
    if (!ip || ip === 'None' || !service.spec.ports?.length) continue;
    const name = service.metadata.name;
    if (service.metadata.namespace === 'default' && name === 'kubernetes') {
      if (!chosen.has(name)) chosen.set(name, service);
    } else if (service.metadata.namespace === namespace && enableServiceLinks) {
      chosen.set(name, service);
    }
  }
  const out = new Map<string, string>();
  for (const service of chosen.values()) {
    const prefix = envName(service.metadata.name);
    const ip = service.spec.clusterIP!;
    const ports = service.spec.ports!;
    out.set(`${prefix}_SERVICE_HOST`, ip);
    out.set(`${prefix}_SERVICE_PORT`, String(ports[0]!.port));
    for (const port of ports) if (port.name) out.set(`${prefix}_SERVICE_PORT_${envName(port.name)}`, String(port.port));
    ports.forEach((port, i) => {
      const protocol = (port.protocol || 'TCP').toLowerCase();
      const url = `${protocol}://${hostPort(ip, port.port)}`;
      if (i === 0) out.set(`${prefix}_PORT`, url);
      const portPrefix = `${prefix}_PORT_${port.port}_${protocol.toUpperCase()}`;
      out.set(portPrefix, url);
      out.set(`${portPrefix}_PROTO`, protocol);
      out.set(`${portPrefix}_PORT`, String(port.port));
      out.set(`${portPrefix}_ADDR`, ip);
    });
  }
  return out;
}

/** A `valueFrom`'s value; undefined when an optional reference is missing (the variable is left out). */
function fromSource(source: EnvVarSource, inputs: EnvInputs, ns: string): string | undefined {
  if (source.fieldRef) return orConfigError(podFieldValue(inputs.pod, source.fieldRef.fieldPath, inputs));
  if (source.resourceFieldRef) return orConfigError(containerResourceValue(inputs.pod, inputs.container, source.resourceFieldRef, inputs.allocatable));
  const keyRef = source.configMapKeyRef ?? source.secretKeyRef;
  if (keyRef) {
    const isConfigMap = source.configMapKeyRef !== undefined;
    const data = (isConfigMap ? inputs.configMaps : inputs.secrets).get(keyRef.name ?? '');
    if (!data) {
      if (keyRef.optional) return undefined;
      throw new ContainerConfigError(`${isConfigMap ? 'configmap' : 'secret'} "${keyRef.name ?? ''}" not found`);
    }
    const value = data[keyRef.key];
    if (value === undefined) {
      if (keyRef.optional) return undefined;
      throw new ContainerConfigError(`couldn't find key ${keyRef.key} in ${isConfigMap ? 'ConfigMap' : 'Secret'} ${ns}/${keyRef.name ?? ''}`);
    }
    return value;
  }
  return '';
}

const orConfigError = (value: string | Error): string => {
  if (value instanceof Error) throw new ContainerConfigError(value.message);
  return value;
};
