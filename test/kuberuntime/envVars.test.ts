/** A container's environment (kubelet_pods.go makeEnvironmentVariables), table-tested. */
import { describe, expect, it } from 'vitest';
import type { Container, EnvVar, Pod } from '../../src/api/types.ts';
import { ContainerConfigError } from '../../src/kuberuntime/configs.ts';
import { type EnvInputs, makeEnvironment, readReferencedObjects, referencedObjects, serviceEnv } from '../../src/kuberuntime/envVars.ts';
import type { Service } from '../../src/api/cluster.ts';

function pod(container: Container, extra: Partial<Pod['spec']> = {}): Pod {
  return {
    metadata: { name: 'web', namespace: 'shop', uid: 'uid-1', labels: { app: 'web' }, annotations: { 'team.io/owner': 'ana' } },
    spec: { nodeName: 'node-a', serviceAccountName: 'builder', containers: [container], ...extra },
  };
}

const inputs = (container: Container, extra: Partial<EnvInputs> = {}): EnvInputs => ({
  pod: pod(container),
  container,
  podIPs: ['10.1.0.5', 'fd00::5'],
  hostIPs: ['192.0.2.10'],
  allocatable: { cpu: 4000, memory: 8 * 2 ** 30 },
  configMaps: new Map([['cfg', { MODE: 'fast', LEVEL: '3' }]]),
  secrets: new Map([['creds', { PASSWORD: 'hunter2' }]]),
  services: [],
  ...extra,
});

const env = (...vars: EnvVar[]): Container => ({ name: 'app', image: 'busybox:1', env: vars });
const asMap = (list: { key: string; value: string }[]) => Object.fromEntries(list.map((e) => [e.key, e.value]));
const error = (i: EnvInputs) => {
  try {
    makeEnvironment(i);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(ContainerConfigError);
    return (err as Error).message;
  }
};

describe('makeEnvironment', () => {
  it.each<[string, string]>([
    ['metadata.name', 'web'],
    ['metadata.namespace', 'shop'],
    ['metadata.uid', 'uid-1'],
    ["metadata.labels['app']", 'web'],
    ["metadata.annotations['team.io/owner']", 'ana'],
    ["metadata.labels['missing']", ''],
    ['spec.nodeName', 'node-a'],
    ['spec.serviceAccountName', 'builder'],
    ['status.podIP', '10.1.0.5'],
    ['status.podIPs', '10.1.0.5,fd00::5'],
    ['status.hostIP', '192.0.2.10'],
    ['status.hostIPs', '192.0.2.10'],
  ])('fieldRef %s is %j', (fieldPath, value) => {
    expect(asMap(makeEnvironment(inputs(env({ name: 'V', valueFrom: { fieldRef: { fieldPath } } }))))).toEqual({ V: value });
  });

  it('rejects an unknown field path with the kubelet message', () => {
    expect(error(inputs(env({ name: 'V', valueFrom: { fieldRef: { fieldPath: 'spec.schedulerName' } } })))).toBe('unsupported fieldPath: spec.schedulerName');
  });

  it.each<[string, Container['resources'], string | undefined, string]>([
    ['limits.cpu', { limits: { cpu: '250m' } }, undefined, '1'],
    ['limits.cpu', { limits: { cpu: '250m' } }, '1m', '250'],
    ['limits.memory', { limits: { memory: '100Mi' } }, '1Mi', '100'],
    ['limits.memory', { limits: { memory: '1500Ki' } }, '1Mi', '2'],
    ['requests.cpu', {}, '1m', '0'],
    ['limits.cpu', {}, undefined, '4'],
    ['limits.memory', {}, '1Gi', '8'],
  ])('resourceFieldRef %s of %j with divisor %s is %s (unset limits: the node allocatable)', (resource, resources, divisor, value) => {
    const c: Container = { ...env({ name: 'V', valueFrom: { resourceFieldRef: { resource, ...(divisor ? { divisor } : {}) } } }), resources };
    expect(asMap(makeEnvironment(inputs(c)))).toEqual({ V: value });
  });

  it('reads keys of ConfigMaps and Secrets, and skips optional ones that are missing', () => {
    const c = env(
      { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'MODE' } } },
      { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'PASSWORD' } } },
      { name: 'GONE', valueFrom: { configMapKeyRef: { name: 'nope', key: 'x', optional: true } } },
      { name: 'NOKEY', valueFrom: { secretKeyRef: { name: 'creds', key: 'token', optional: true } } },
    );
    expect(asMap(makeEnvironment(inputs(c)))).toEqual({ MODE: 'fast', PASSWORD: 'hunter2' });
  });

  it.each<[string, EnvVar, string]>([
    ['a missing ConfigMap', { name: 'V', valueFrom: { configMapKeyRef: { name: 'nope', key: 'x' } } }, 'configmap "nope" not found'],
    ['a missing Secret', { name: 'V', valueFrom: { secretKeyRef: { name: 'nope', key: 'x' } } }, 'secret "nope" not found'],
    ['a missing ConfigMap key', { name: 'V', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'x' } } }, "couldn't find key x in ConfigMap shop/cfg"],
    ['a missing Secret key', { name: 'V', valueFrom: { secretKeyRef: { name: 'creds', key: 'token' } } }, "couldn't find key token in Secret shop/creds"],
  ])('fails the container config on %s', (_, variable, message) => {
    expect(error(inputs(env(variable)))).toBe(message);
  });

  it('takes envFrom first, with prefixes, later sources and env overriding, optional ones skipped', () => {
    const c: Container = {
      ...env({ name: 'LEVEL', value: 'override' }, { name: 'SUMMARY', value: '$(MODE)-$(LEVEL)-$(CFG_MODE)' }),
      envFrom: [
        { configMapRef: { name: 'cfg' } },
        { prefix: 'CFG_', configMapRef: { name: 'cfg' } },
        { secretRef: { name: 'creds' } },
        { configMapRef: { name: 'nope', optional: true } },
      ],
    };
    expect(makeEnvironment(inputs(c))).toEqual([
      { key: 'MODE', value: 'fast' },
      { key: 'LEVEL', value: 'override' },
      { key: 'CFG_MODE', value: 'fast' },
      { key: 'CFG_LEVEL', value: '3' },
      { key: 'PASSWORD', value: 'hunter2' },
      { key: 'SUMMARY', value: 'fast-override-fast' },
    ]);
  });

  it('fails on a missing envFrom source that is not optional', () => {
    expect(error(inputs({ ...env(), envFrom: [{ secretRef: { name: 'nope' } }] }))).toBe('secret "nope" not found');
  });

  it.each<[string, string]>([
    ['$(A)-$(B)', 'a-$(B)'],
    ['$$(A)', '$(A)'],
    ['$(A', '$(A'],
    ['$A', '$A'],
    ['cost $', 'cost $'],
  ])('expands %j to %j with the variables set before it only', (value, expected) => {
    const c = env({ name: 'A', value: 'a' }, { name: 'X', value }, { name: 'B', value: 'b' });
    expect(asMap(makeEnvironment(inputs(c)))['X']).toBe(expected);
  });

  it('never expands a valueFrom', () => {
    const i = inputs(env({ name: 'A', value: 'a' }, { name: 'V', valueFrom: { configMapKeyRef: { name: 'raw', key: 'k' } } }), {
      configMaps: new Map([['raw', { k: '$(A)' }]]),
    });
    expect(asMap(makeEnvironment(i))['V']).toBe('$(A)');
  });
});

describe('service link variables', () => {
  const svc = (namespace: string, name: string, clusterIP: string, ports: { name?: string; port: number; protocol?: string }[]): Service => ({
    metadata: { name, namespace, uid: `${namespace}-${name}` },
    spec: { clusterIP, ports },
  });
  const services = [
    svc('default', 'kubernetes', '10.96.0.1', [{ name: 'https', port: 443 }]),
    svc('shop', 'web-api', '10.96.4.2', [{ name: 'http', port: 80 }, { name: 'dns', port: 53, protocol: 'UDP' }]),
    svc('shop', 'headless', 'None', [{ port: 80 }]),
    svc('other', 'db', '10.96.9.9', [{ port: 5432 }]),
  ];

  it('gives the kubernetes service always and the namespace services with links, in FromServices form', () => {
    expect(Object.fromEntries(serviceEnv(services, 'shop', true))).toEqual({
      KUBERNETES_SERVICE_HOST: '10.96.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      KUBERNETES_SERVICE_PORT_HTTPS: '443',
      KUBERNETES_PORT: 'tcp://10.96.0.1:443',
      KUBERNETES_PORT_443_TCP: 'tcp://10.96.0.1:443',
      KUBERNETES_PORT_443_TCP_PROTO: 'tcp',
      KUBERNETES_PORT_443_TCP_PORT: '443',
      KUBERNETES_PORT_443_TCP_ADDR: '10.96.0.1',
      WEB_API_SERVICE_HOST: '10.96.4.2',
      WEB_API_SERVICE_PORT: '80',
      WEB_API_SERVICE_PORT_HTTP: '80',
      WEB_API_SERVICE_PORT_DNS: '53',
      WEB_API_PORT: 'tcp://10.96.4.2:80',
      WEB_API_PORT_80_TCP: 'tcp://10.96.4.2:80',
      WEB_API_PORT_80_TCP_PROTO: 'tcp',
      WEB_API_PORT_80_TCP_PORT: '80',
      WEB_API_PORT_80_TCP_ADDR: '10.96.4.2',
      WEB_API_PORT_53_UDP: 'udp://10.96.4.2:53',
      WEB_API_PORT_53_UDP_PROTO: 'udp',
      WEB_API_PORT_53_UDP_PORT: '53',
      WEB_API_PORT_53_UDP_ADDR: '10.96.4.2',
    });
  });

  it('keeps only the kubernetes service without links', () => {
    expect([...serviceEnv(services, 'shop', false).keys()].every((k) => k.startsWith('KUBERNETES_'))).toBe(true);
  });

  it('brackets IPv6 addresses in the link URLs', () => {
    expect(serviceEnv([svc('default', 'kubernetes', 'fd00::1', [{ port: 443 }])], 'x', true).get('KUBERNETES_PORT')).toBe('tcp://[fd00::1]:443');
  });

  it('adds them to the environment where it has no such name, and lets values refer to them', () => {
    const c = env({ name: 'KUBERNETES_SERVICE_HOST', value: 'mine' }, { name: 'API', value: 'https://$(WEB_API_SERVICE_HOST)' });
    const result = asMap(makeEnvironment(inputs(c, { services })));
    expect(result).toMatchObject({ KUBERNETES_SERVICE_HOST: 'mine', KUBERNETES_SERVICE_PORT: '443', API: 'https://10.96.4.2' });
  });

  it('holds a pod from the API back until the Services have been listed; a static pod goes on', () => {
    expect(error(inputs(env({ name: 'A', value: 'a' }), { services: null }))).toBe('services have not yet been read at least once, cannot construct envvars');
    const staticPod = pod(env({ name: 'A', value: 'a' }));
    staticPod.metadata.annotations = { 'kubernetes.io/config.source': 'file' };
    expect(asMap(makeEnvironment({ ...inputs(env({ name: 'A', value: 'a' }), { services: null }), pod: staticPod }))).toEqual({ A: 'a' });
  });
});

describe('reading what the environment refers to', () => {
  const c: Container = {
    ...env({ name: 'M', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'MODE' } } }, { name: 'P', valueFrom: { secretKeyRef: { name: 'creds', key: 'PASSWORD' } } }),
    envFrom: [{ configMapRef: { name: 'extra' } }],
  };

  it('names each ConfigMap and Secret once', () => {
    expect(referencedObjects(c)).toEqual({ configMaps: new Set(['extra', 'cfg']), secrets: new Set(['creds']) });
  });

  it('reads them, null for the missing ones', async () => {
    const reader = {
      configMap: async (_ns: string, name: string) => (name === 'cfg' ? { data: { MODE: 'fast' }, binaryData: {} } : null),
      secret: async () => ({ PASSWORD: Buffer.from('p') }),
    };
    const read = await readReferencedObjects(reader, pod(c), c);
    expect(read.configMaps).toEqual(new Map([['extra', null], ['cfg', { MODE: 'fast' }]]));
    expect(read.secrets).toEqual(new Map([['creds', { PASSWORD: 'p' }]]));
  });

  it('fails as the kubelet does without an API client, and with the read error otherwise', async () => {
    await expect(readReferencedObjects(undefined, pod(c), c)).rejects.toThrow("couldn't get configMap shop/extra, no kubeClient defined");
    const failing = { configMap: async () => Promise.reject(new Error('GET configmaps shop/extra: 403 Forbidden')), secret: async () => null };
    await expect(readReferencedObjects(failing, pod(c), c)).rejects.toThrow(ContainerConfigError);
  });

  it('reads nothing for a container without references', async () => {
    expect(await readReferencedObjects(undefined, pod(env({ name: 'A', value: 'a' })), env({ name: 'A', value: 'a' }))).toEqual({ configMaps: new Map(), secrets: new Map() });
  });
});
