import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { applyPodDefaults, defaultPullPolicy, isDnsSubdomain, validatePod, withoutNullMembers } from '../../src/api/validate.ts';

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
      'init restartPolicy unknown',
      (p) => (p.spec['initContainers'] = [{ name: 'setup', image: 'b', restartPolicy: 'Sometimes' }]),
      'spec.initContainers[0].restartPolicy',
      'Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"',
    ],
    [
      'init restart rules without a restartPolicy',
      (p) => (p.spec['initContainers'] = [{ name: 'setup', image: 'b', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [1] } }] }]),
      'spec.initContainers[0].restartPolicy',
      'Required value: must specify restartPolicy when restart rules are used',
    ],
    ['an init restart rule operator unknown', (p) => (p.spec['initContainers'] = [{ name: 'setup', image: 'b', restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'Is', values: [1] } }] }]), 'spec.initContainers[0].restartPolicyRules[0].exitCodes.operator', 'Unsupported value'],
    ['a sidecar\'s restart rule without exitCodes', (p) => (p.spec['initContainers'] = [{ name: 'proxy', image: 'b', restartPolicy: 'Always', restartPolicyRules: [{ action: 'Restart' }] }]), 'spec.initContainers[0].restartPolicyRules[0].exitCodes', 'Required value'],
    ['a regular container\'s restartPolicy unknown', (p) => (container(p)['restartPolicy'] = 'Sometimes'), 'spec.containers[0].restartPolicy', 'Unsupported value'],
    [
      'restart rules without a container restartPolicy',
      (p) => (container(p)['restartPolicyRules'] = [{ action: 'Restart', exitCodes: { operator: 'In', values: [1] } }]),
      'spec.containers[0].restartPolicy',
      'Required value: must specify restartPolicy when restart rules are used',
    ],
    ['a restart rule without exitCodes', (p) => Object.assign(container(p), { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart' }] }), 'spec.containers[0].restartPolicyRules[0].exitCodes', 'Required value'],
    ['a restart rule action unknown', (p) => Object.assign(container(p), { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Ignore', exitCodes: { operator: 'In', values: [1] } }] }), 'spec.containers[0].restartPolicyRules[0].action', 'Unsupported value'],
    ['a restart rule operator unknown', (p) => Object.assign(container(p), { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'Is', values: [1] } }] }), 'spec.containers[0].restartPolicyRules[0].exitCodes.operator', 'Unsupported value'],
    ['21 restart rules', (p) => Object.assign(container(p), { restartPolicy: 'Never', restartPolicyRules: Array.from({ length: 21 }, () => ({ action: 'Restart', exitCodes: { operator: 'In', values: [1] } })) }), 'spec.containers[0].restartPolicyRules', 'Too many: 21'],
    ['256 exit codes', (p) => Object.assign(container(p), { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: Array.from({ length: 256 }, (_, i) => i) } }] }), 'spec.containers[0].restartPolicyRules[0].exitCodes.values', 'Too many: 256'],
    ['exit codes not integers', (p) => Object.assign(container(p), { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: ['1'] } }] }), 'spec.containers[0].restartPolicyRules[0].exitCodes.values[0]', 'must be an integer'],
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
    // Found by the manifest fuzz (test/chaos/manifestFuzz.ts): the agent read these as their types promise.
    ['creationTimestamp a number (stopped the syncLoop)', (p) => (p.metadata['creationTimestamp'] = 5), 'metadata.creationTimestamp', 'must be a string'],
    ['a quantity in a list (stopped the syncLoop)', (p) => (container(p)['resources'] = { requests: { cpu: [1] } }), 'spec.containers[0].resources.requests[cpu]', 'must be a quantity'],
    ['a quantity that does not parse', (p) => (container(p)['resources'] = { limits: { memory: 'lots' } }), 'spec.containers[0].resources.limits[memory]', 'must be a quantity'],
    ['volumeMounts a string (pod stuck creating)', (p) => (container(p)['volumeMounts'] = 'x'), 'spec.containers[0].volumeMounts', 'must be a list'],
    ['a volumeMount not an object', (p) => (container(p)['volumeMounts'] = [5]), 'spec.containers[0].volumeMounts[0]', 'must be an object'],
    ['envFrom a number (pod stuck creating)', (p) => (container(p)['envFrom'] = 7), 'spec.containers[0].envFrom', 'must be a list'],
    ['fieldRef a string', (p) => (container(p)['env'] = [{ name: 'A', valueFrom: { fieldRef: 'x' } }]), 'spec.containers[0].env[0].valueFrom.fieldRef', 'must be an object'],
    ['exec command a string', (p) => (container(p)['readinessProbe'] = { exec: { command: 'true' } }), 'spec.containers[0].readinessProbe.exec.command', 'must be a list'],
    ['httpGet port an object', (p) => (container(p)['readinessProbe'] = { httpGet: { port: { a: 1 } } }), 'spec.containers[0].readinessProbe.httpGet.port', 'must be a port number or name'],
    ['httpHeaders a string', (p) => (container(p)['readinessProbe'] = { httpGet: { port: 80, httpHeaders: 'x' } }), 'spec.containers[0].readinessProbe.httpGet.httpHeaders', 'must be a list'],
    ['preStop sleep seconds a string', (p) => (container(p)['lifecycle'] = { preStop: { sleep: { seconds: 'x' } } }), 'spec.containers[0].lifecycle.preStop.sleep.seconds', 'must be an integer'],
    ['tty a string', (p) => (container(p)['tty'] = 'yes'), 'spec.containers[0].tty', 'must be a boolean'],
    ['terminationMessagePolicy unknown', (p) => (container(p)['terminationMessagePolicy'] = 'Always'), 'spec.containers[0].terminationMessagePolicy', 'Unsupported value'],
    ['hostname a number (pod stuck creating)', (p) => (p.spec['hostname'] = 5), 'spec.hostname', 'must be a string'],
    ['hostnameOverride not a DNS subdomain', (p) => (p.spec['hostnameOverride'] = 'My_Host'), 'spec.hostnameOverride', 'Invalid value'],
    ['hostnameOverride longer than 64', (p) => (p.spec['hostnameOverride'] = 'a'.repeat(65)), 'spec.hostnameOverride', 'Too long: may not be more than 64 bytes'],
    ['hostnameOverride on the host network', (p) => Object.assign(p.spec, { hostnameOverride: 'h', hostNetwork: true }), 'spec.hostnameOverride', 'Forbidden: may not be specified when hostNetwork is true'],
    ['hostnameOverride with setHostnameAsFQDN', (p) => Object.assign(p.spec, { hostnameOverride: 'h', setHostnameAsFQDN: true }), 'spec.hostnameOverride', 'Forbidden: may not be specified when setHostnameAsFQDN is true'],
    ['hostAliases a string (pod stuck creating)', (p) => (p.spec['hostAliases'] = 'x'), 'spec.hostAliases', 'must be a list'],
    ['hostNetwork a string', (p) => (p.spec['hostNetwork'] = 'yes'), 'spec.hostNetwork', 'must be a boolean'],
    ['a volume of the wrong shape', (p) => (p.spec['volumes'] = [{ name: 5, emptyDir: 'x' }]), 'spec.volumes[0].emptyDir', 'must be an object'],
    ['a toleration key a number', (p) => (p.spec['tolerations'] = [{ key: 5, operator: 'Exists' }]), 'spec.tolerations[0].key', 'must be a string'],
    ['nodeSelector terms a string', (p) => (p.spec['affinity'] = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: 'x' } } }), 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms', 'must be a list'],
    ['dnsPolicy unknown', (p) => (p.spec['dnsPolicy'] = 'Sometimes'), 'spec.dnsPolicy', 'Unsupported value'],
    ['priority a string', (p) => (p.spec['priority'] = 'high'), 'spec.priority', 'must be an integer'],
    ['a label key with a space', (p) => (p.metadata['labels'] = { 'a b': 'x' }), 'metadata.labels[a b]', 'Invalid value'],
    ['a label value too long', (p) => (p.metadata['labels'] = { a: 'v'.repeat(64) }), 'metadata.labels[a]', 'Invalid value'],
    // Security contexts: their shapes, and the API server's rules.
    ['runAsUser a string', (p) => (container(p)['securityContext'] = { runAsUser: '1000' }), 'spec.containers[0].securityContext.runAsUser', 'must be an integer'],
    ['runAsUser negative', (p) => (container(p)['securityContext'] = { runAsUser: -1 }), 'spec.containers[0].securityContext.runAsUser', 'Invalid value'],
    ['capabilities.drop a string', (p) => (container(p)['securityContext'] = { capabilities: { drop: 'ALL' } }), 'spec.containers[0].securityContext.capabilities.drop', 'must be a list'],
    ['a seccomp profile type unknown', (p) => (container(p)['securityContext'] = { seccompProfile: { type: 'Strict' } }), 'spec.containers[0].securityContext.seccompProfile.type', 'Unsupported value'],
    ['procMount unknown', (p) => (container(p)['securityContext'] = { procMount: 'Raw' }), 'spec.containers[0].securityContext.procMount', 'Unsupported value'],
    ['escalation refused to a privileged container', (p) => (container(p)['securityContext'] = { privileged: true, allowPrivilegeEscalation: false }), 'spec.containers[0].securityContext', 'cannot set `allowPrivilegeEscalation` to false and `privileged` to true'],
    ['escalation refused with CAP_SYS_ADMIN added', (p) => (container(p)['securityContext'] = { capabilities: { add: ['CAP_SYS_ADMIN'] }, allowPrivilegeEscalation: false }), 'spec.containers[0].securityContext', 'and `capabilities.Add` CAP_SYS_ADMIN'],
    ['the pod fsGroup a string', (p) => (p.spec['securityContext'] = { fsGroup: 'web' }), 'spec.securityContext.fsGroup', 'must be an integer'],
    ['supplementalGroups of strings', (p) => (p.spec['securityContext'] = { supplementalGroups: ['a'] }), 'spec.securityContext.supplementalGroups[0]', 'must be an integer'],
    ['a pid namespace shared and the host one', (p) => Object.assign(p.spec, { shareProcessNamespace: true, hostPID: true }), 'spec.securityContext.shareProcessNamespace', 'ShareProcessNamespace and HostPID cannot both be enabled'],
    ['hostPID a string', (p) => (p.spec['hostPID'] = 'yes'), 'spec.hostPID', 'must be a boolean'],
    ['hostUsers a string', (p) => (p.spec['hostUsers'] = 'false'), 'spec.hostUsers', 'must be a boolean'],
    ['runtimeClassName a number', (p) => (p.spec['runtimeClassName'] = 1), 'spec.runtimeClassName', 'must be a string'],
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

  it('accepts a regular container\'s own restart policy and rules (ContainerRestartRules)', () => {
    const pod = basePod();
    Object.assign(container(pod), { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'NotIn', values: [0, 1] } }] });
    expect(validatePod(pod).errors).toEqual([]);
  });

  it('accepts an init container\'s own OnFailure or Never with rules, and rules on a sidecar (validateInitContainerRestartPolicy with RestartAllContainersOnContainerExits on)', () => {
    const pod = basePod();
    const rules = [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }];
    pod.spec['initContainers'] = [
      { name: 'retry', image: 'b', restartPolicy: 'OnFailure' },
      { name: 'ruled', image: 'b', restartPolicy: 'Never', restartPolicyRules: rules },
      { name: 'proxy', image: 'b', restartPolicy: 'Always', restartPolicyRules: rules },
    ];
    expect(validatePod(pod).errors).toEqual([]);
  });

  it('accepts a sidecar (init restartPolicy Always) and a missing apiVersion/kind', () => {
    const pod = basePod();
    delete pod['apiVersion'];
    delete pod['kind'];
    pod.spec['initContainers'] = [{ name: 'proxy', image: 'envoy:1', restartPolicy: 'Always' }];
    expect(validatePod(pod).errors).toEqual([]);
  });

  it('accepts every typed field when it has its type, and members it does not read whatever they hold', () => {
    const pod = basePod();
    Object.assign(container(pod), {
      workingDir: '/',
      volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }],
      resources: { requests: { cpu: '100m', memory: 64 }, limits: { cpu: 1 } },
      readinessProbe: { httpGet: { port: 'http', httpHeaders: [{ name: 'a', value: 'b' }] } },
      lifecycle: { preStop: { sleep: { seconds: 1 } } },
      tty: true,
      securityContext: { anything: ['goes'] },
    });
    Object.assign(pod.spec, { volumes: [{ name: 'data', emptyDir: { sizeLimit: '1Gi' } }], hostAliases: [{ ip: '10.0.0.1', hostnames: ['a'] }], dnsPolicy: 'Default', unknownField: 5 });
    expect(validatePod(pod).errors).toEqual([]);
  });

  it('shortens a long bad value in its message', () => {
    const pod = basePod();
    pod.metadata['name'] = 'A'.repeat(10_000);
    const [error] = validatePod(pod).errors;
    expect(error?.field).toBe('metadata.name');
    expect(error?.message.length).toBeLessThan(400);
    expect(error?.message).toContain('(10002 characters)');
  });

  it('takes a member set to null as not set once decoded (withoutNullMembers, as the Go decoder does), without touching its input', () => {
    const pod = basePod();
    pod.metadata['labels'] = null;
    pod.spec['volumes'] = null;
    container(pod)['command'] = null;
    container(pod)['env'] = null;
    const input = structuredClone(pod);
    const result = validatePod(withoutNullMembers(pod));
    expect(result.errors).toEqual([]);
    expect(result.pod?.metadata).not.toHaveProperty('labels');
    expect(result.pod?.spec).not.toHaveProperty('volumes');
    expect(result.pod?.spec.containers[0]).not.toHaveProperty('command');
    expect(result.pod?.spec.containers[0]).not.toHaveProperty('env');
    expect(pod).toEqual(input);
    // A required member set to null is missing, as absent.
    pod.metadata['name'] = null;
    expect(validatePod(withoutNullMembers(pod)).errors).toEqual([expect.objectContaining({ field: 'metadata.name', message: expect.stringContaining('Required value') })]);
    // Nothing null: the same object back.
    const clean = basePod();
    expect(withoutNullMembers(clean)).toBe(clean);
    expect(validatePod(clean).pod).toBe(clean);
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

describe('validatePod: ephemeral containers (validation.go validateEphemeralContainers)', () => {
  const withDebugger = (debugger_: Record<string, unknown>) => {
    const pod = basePod();
    pod.spec['ephemeralContainers'] = [{ name: 'debug', image: 'busybox:1.36', ...debugger_ }];
    return pod;
  };

  it('accepts one added to a pod, with a target among its init and regular containers', () => {
    expect(validatePod(withDebugger({ targetContainerName: 'app', stdin: true, tty: true })).errors).toEqual([]);
    expect(validatePod(withDebugger({ targetContainerName: 'setup' })).errors).toEqual([]);
    // As the API server returns it: an empty `resources` (and empty lists) are no resources.
    expect(validatePod(withDebugger({ resources: {}, ports: [] })).errors).toEqual([]);
    expect(validatePod(withDebugger({ resources: { limits: {}, claims: [] } })).errors).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    ['a target that is no init or regular container', { targetContainerName: 'nope' }, 'spec.ephemeralContainers[0].targetContainerName', 'Not found: "nope"'],
    ['a target that is not a string', { targetContainerName: 3 }, 'spec.ephemeralContainers[0].targetContainerName', 'Invalid value'],
    ["another container's name", { name: 'app' }, 'spec.ephemeralContainers[0].name', 'Duplicate value: "app"'],
    ['no image', { image: undefined }, 'spec.ephemeralContainers[0].image', 'Required value'],
    ['ports', { ports: [{ containerPort: 80 }] }, 'spec.ephemeralContainers[0].ports', 'Forbidden: cannot be set for an Ephemeral Container'],
    ['a probe', { readinessProbe: { exec: { command: ['true'] } } }, 'spec.ephemeralContainers[0].readinessProbe', 'Forbidden'],
    ['lifecycle hooks', { lifecycle: { preStop: { exec: { command: ['true'] } } } }, 'spec.ephemeralContainers[0].lifecycle', 'Forbidden'],
    ['resources', { resources: { limits: { cpu: '1' } } }, 'spec.ephemeralContainers[0].resources', 'Forbidden'],
    ['a subPath', { volumeMounts: [{ name: 'v', mountPath: '/v', subPath: 'x' }] }, 'spec.ephemeralContainers[0].volumeMounts[0].subPath', 'Forbidden'],
    ['a restart policy', { restartPolicy: 'Always' }, 'spec.ephemeralContainers[0].restartPolicy', 'Forbidden'],
  ])('refuses %s', (_case, debugger_, field, message) => {
    const result = validatePod(withDebugger(debugger_));
    expect(result.pod).toBeUndefined();
    expect(result.errors).toContainEqual({ field, message: expect.stringContaining(message) });
  });

  it('refuses any at creation (ValidatePodCreate), and an empty list is none', () => {
    expect(validatePod(withDebugger({}), { create: true }).errors).toEqual([{ field: 'spec.ephemeralContainers', message: 'Forbidden: cannot be set on create' }]);
    const empty = basePod();
    empty.spec['ephemeralContainers'] = [];
    expect(validatePod(empty, { create: true }).errors).toEqual([]);
  });

  it('defaults them as the API does: pull policy and termination message settings, the target kept', () => {
    const pod = validatePod(withDebugger({ targetContainerName: 'app' })).pod!;
    expect(applyPodDefaults(pod).spec.ephemeralContainers).toEqual([
      {
        name: 'debug',
        image: 'busybox:1.36',
        targetContainerName: 'app',
        imagePullPolicy: 'IfNotPresent',
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
      },
    ]);
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
