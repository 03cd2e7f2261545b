import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { applyPodDefaults, defaultPullPolicy, isDnsSubdomain, validatePod } from '../../src/api/validate.ts';

/** A valid pod as plain JSON, so cases can break it in ways the `Pod` type would not allow. */
function basePod(): Record<string, unknown> & { metadata: Record<string, unknown>; spec: Record<string, unknown> } {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', uid: 'u-1' },
    spec: {
      initContainers: [{ name: 'setup', image: 'busybox:1.36' }],
      containers: [
        {
          name: 'app',
          image: 'nginx:1.25',
          command: ['sleep'],
          args: ['10'],
          env: [{ name: 'A', value: '1' }],
          ports: [{ containerPort: 80 }],
          livenessProbe: { exec: { command: ['true'] } },
        },
      ],
    },
  };
}

type Mutate = (pod: ReturnType<typeof basePod>) => void;
const container = (pod: ReturnType<typeof basePod>, i = 0): Record<string, unknown> => {
  const list = pod.spec['containers'];
  if (!Array.isArray(list)) throw new Error('test pod has no containers');
  return list[i] as Record<string, unknown>;
};

describe('validatePod', () => {
  it('accepts a valid pod and returns it typed', () => {
    const result = validatePod(basePod());
    expect(result.errors).toEqual([]);
    expect(result.pod?.metadata.name).toBe('web');
  });

  const failures: [string, Mutate, string, string][] = [
    ['not v1', (p) => (p['apiVersion'] = 'v2'), 'apiVersion', 'Unsupported value'],
    ['not a Pod', (p) => (p['kind'] = 'Deployment'), 'kind', 'Unsupported value'],
    ['no metadata', (p) => delete (p as Record<string, unknown>)['metadata'], 'metadata', 'Required value'],
    ['no name', (p) => delete p.metadata['name'], 'metadata.name', 'Required value'],
    ['uppercase name', (p) => (p.metadata['name'] = 'Web'), 'metadata.name', 'Invalid value'],
    ['name too long', (p) => (p.metadata['name'] = 'a'.repeat(254)), 'metadata.name', 'Invalid value'],
    ['namespace with a dot', (p) => (p.metadata['namespace'] = 'a.b'), 'metadata.namespace', 'Invalid value'],
    ['no namespace', (p) => delete p.metadata['namespace'], 'metadata.namespace', 'Required value'],
    ['no uid', (p) => (p.metadata['uid'] = ''), 'metadata.uid', 'Required value'],
    ['non-string label', (p) => (p.metadata['labels'] = { a: 1 }), 'metadata.labels[a]', 'Invalid value'],
    ['no spec', (p) => delete (p as Record<string, unknown>)['spec'], 'spec', 'Required value'],
    ['no containers', (p) => delete p.spec['containers'], 'spec.containers', 'Required value'],
    ['empty containers', (p) => (p.spec['containers'] = []), 'spec.containers', 'Required value'],
    ['containers not a list', (p) => (p.spec['containers'] = { name: 'a' }), 'spec.containers', 'Invalid value'],
    ['container name missing', (p) => delete container(p)['name'], 'spec.containers[0].name', 'Required value'],
    ['container name not a label', (p) => (container(p)['name'] = 'a_b'), 'spec.containers[0].name', 'Invalid value'],
    ['image missing', (p) => delete container(p)['image'], 'spec.containers[0].image', 'Required value'],
    ['image with spaces', (p) => (container(p)['image'] = ' nginx'), 'spec.containers[0].image', 'Invalid value'],
    [
      'duplicate across init and regular',
      (p) => (container(p)['name'] = 'setup'),
      'spec.containers[0].name',
      'Duplicate value: "setup"',
    ],
    ['bad restartPolicy', (p) => (p.spec['restartPolicy'] = 'Sometimes'), 'spec.restartPolicy', 'Unsupported value'],
    [
      'init restartPolicy not Always',
      (p) => (p.spec['initContainers'] = [{ name: 'setup', image: 'b', restartPolicy: 'Never' }]),
      'spec.initContainers[0].restartPolicy',
      'Unsupported value',
    ],
    [
      'restartPolicy on a regular container',
      (p) => (container(p)['restartPolicy'] = 'Always'),
      'spec.containers[0].restartPolicy',
      'Forbidden',
    ],
    ['bad imagePullPolicy', (p) => (container(p)['imagePullPolicy'] = 'Sometimes'), 'spec.containers[0].imagePullPolicy', 'Unsupported value'],
    ['port 0', (p) => (container(p)['ports'] = [{ containerPort: 0 }]), 'spec.containers[0].ports[0].containerPort', 'Invalid value'],
    ['port 65536', (p) => (container(p)['ports'] = [{ containerPort: 65536 }]), 'spec.containers[0].ports[0].containerPort', 'Invalid value'],
    ['port not an integer', (p) => (container(p)['ports'] = [{ containerPort: 80.5 }]), 'spec.containers[0].ports[0].containerPort', 'Invalid value'],
    ['port missing', (p) => (container(p)['ports'] = [{ name: 'http' }]), 'spec.containers[0].ports[0].containerPort', 'Required value'],
    ['bad protocol', (p) => (container(p)['ports'] = [{ containerPort: 1, protocol: 'ICMP' }]), 'spec.containers[0].ports[0].protocol', 'Unsupported value'],
    ['negative grace', (p) => (p.spec['terminationGracePeriodSeconds'] = -1), 'spec.terminationGracePeriodSeconds', 'Invalid value'],
    ['fractional grace', (p) => (p.spec['terminationGracePeriodSeconds'] = 1.5), 'spec.terminationGracePeriodSeconds', 'Invalid value'],
    ['zero active deadline', (p) => (p.spec['activeDeadlineSeconds'] = 0), 'spec.activeDeadlineSeconds', 'Invalid value'],
    ['command not a list', (p) => (container(p)['command'] = 'sleep 1'), 'spec.containers[0].command', 'Invalid value'],
    ['args with a number', (p) => (container(p)['args'] = ['a', 1]), 'spec.containers[0].args[1]', 'Invalid value'],
    ['env without name', (p) => (container(p)['env'] = [{ value: 'x' }]), 'spec.containers[0].env[0].name', 'Required value'],
    ['probe without handler', (p) => (container(p)['livenessProbe'] = { periodSeconds: 5 }), 'spec.containers[0].livenessProbe', 'Required value'],
    [
      'liveness successThreshold 2',
      (p) => (container(p)['livenessProbe'] = { exec: { command: ['true'] }, successThreshold: 2 }),
      'spec.containers[0].livenessProbe.successThreshold',
      'Invalid value',
    ],
    ['tolerations not a list', (p) => (p.spec['tolerations'] = 'all'), 'spec.tolerations', 'Invalid value'],
  ];

  it.each(failures)('rejects %s', (_name, mutate, field, message) => {
    const pod = basePod();
    mutate(pod);
    const result = validatePod(pod);
    expect(result.pod).toBeUndefined();
    expect(result.errors).toContainEqual({ field, message: expect.stringContaining(message) });
  });

  it('reports the second use of a name, not the first', () => {
    const pod = basePod();
    pod.spec['containers'] = [
      { name: 'a', image: 'x' },
      { name: 'a', image: 'y' },
    ];
    expect(validatePod(pod).errors.map((e) => e.field)).toEqual(['spec.containers[1].name']);
  });

  it('accepts a sidecar (init restartPolicy Always) and a missing apiVersion/kind', () => {
    const pod = basePod();
    delete pod['apiVersion'];
    delete pod['kind'];
    pod.spec['initContainers'] = [{ name: 'proxy', image: 'envoy:1', restartPolicy: 'Always' }];
    expect(validatePod(pod).errors).toEqual([]);
  });

  it('rejects non-objects', () => {
    expect(validatePod('pod').errors).toHaveLength(1);
    expect(validatePod(null).pod).toBeUndefined();
  });

  it('checks subdomains label by label', () => {
    expect(isDnsSubdomain('a.b-c.d')).toBe(true);
    expect(isDnsSubdomain('a..b')).toBe(false);
    expect(isDnsSubdomain('-a')).toBe(false);
  });
});

describe('defaultPullPolicy', () => {
  it.each([
    ['nginx', 'Always'],
    ['nginx:latest', 'Always'],
    ['registry:5000/nginx', 'Always'],
    ['registry:5000/nginx:1.25', 'IfNotPresent'],
    ['nginx:1.25', 'IfNotPresent'],
    ['nginx@sha256:abcd', 'IfNotPresent'],
    ['nginx:latest@sha256:abcd', 'Always'],
  ])('%s ⇒ %s', (image, policy) => {
    expect(defaultPullPolicy(image)).toBe(policy);
  });
});

describe('applyPodDefaults', () => {
  function validBase(): Pod {
    const { pod } = validatePod(basePod());
    if (!pod) throw new Error('base pod must be valid');
    return pod;
  }

  it('fills the pod-level defaults', () => {
    const spec = applyPodDefaults(validBase()).spec;
    expect(spec.restartPolicy).toBe('Always');
    expect(spec.terminationGracePeriodSeconds).toBe(30);
    expect(spec['dnsPolicy']).toBe('ClusterFirst');
  });

  it('fills container defaults for init and regular containers', () => {
    const pod = validBase();
    pod.spec.containers[0]!.image = 'nginx';
    const out = applyPodDefaults(pod);
    const [app] = out.spec.containers;
    expect(app).toMatchObject({
      imagePullPolicy: 'Always',
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
    });
    expect(app?.ports?.[0]?.protocol).toBe('TCP');
    expect(out.spec.initContainers?.[0]?.imagePullPolicy).toBe('IfNotPresent');
  });

  it('fills probe timings only for probes that exist', () => {
    const [app] = applyPodDefaults(validBase()).spec.containers;
    expect(app?.livenessProbe).toMatchObject({ periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 });
    expect(app?.readinessProbe).toBeUndefined();
    expect(app && 'readinessProbe' in app).toBe(false);
  });

  it('keeps values that are set', () => {
    const pod = validBase();
    pod.spec.restartPolicy = 'Never';
    pod.spec.terminationGracePeriodSeconds = 0;
    pod.spec.containers[0]!.imagePullPolicy = 'Never';
    pod.spec.containers[0]!.livenessProbe = { exec: { command: ['true'] }, periodSeconds: 3 };
    const out = applyPodDefaults(pod);
    expect(out.spec.restartPolicy).toBe('Never');
    expect(out.spec.terminationGracePeriodSeconds).toBe(0);
    expect(out.spec.containers[0]?.imagePullPolicy).toBe('Never');
    expect(out.spec.containers[0]?.livenessProbe?.periodSeconds).toBe(3);
  });

  it('does not modify its input, and its output is still valid', () => {
    const pod = validBase();
    const before = structuredClone(pod);
    const out = applyPodDefaults(pod);
    expect(pod).toEqual(before);
    expect(validatePod(out).errors).toEqual([]);
  });
});
