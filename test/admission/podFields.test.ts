import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { POD_API_RELEASE, POD_API_TYPES } from '../../src/admission/podApi.ts';
import { POD_FIELDS, unsupportedField } from '../../src/admission/podFields.ts';
import { admitPod, type NodeInfo } from '../../src/admission/admit.ts';
import type { Pod } from '../../src/api/types.ts';
// @ts-expect-error: a plain JavaScript module without declarations
import { GENERATED, generate, openApiPath, pinnedRelease } from '../../scripts/podapi/extract.mjs';
import { DOC, readTypes, renderDoc } from '../../scripts/podapi/doc.ts';

describe('the pod field table', () => {
  it('has an entry for every field of the pinned release the node reads, and none for anything else', () => {
    const read = readTypes();
    const missing = read.flatMap((type) => Object.keys(POD_API_TYPES[type] ?? {}).filter((field) => POD_FIELDS[type]?.[field] === undefined).map((field) => `${type}.${field}`));
    expect(missing).toEqual([]);
    // An entry for a type that is not read (under a refused or control-plane field) or a field the release lacks is stale.
    const stale = Object.entries(POD_FIELDS).flatMap(([type, fields]) =>
      Object.keys(fields).filter((field) => !read.includes(type) || !(field in (POD_API_TYPES[type] ?? {}))).map((field) => `${type}.${field}`),
    );
    expect(stale).toEqual([]);
    // The walk reaches the four roots' children: a broken extraction would make this pass vacuously.
    expect(read).toEqual(expect.arrayContaining(['PodSpec', 'Container', 'EphemeralContainer', 'Volume', 'VolumeProjection', 'EmptyDirVolumeSource', 'VolumeMount']));
    expect(Object.keys(POD_API_TYPES.PodSpec ?? {})).toEqual(expect.arrayContaining(['resourceClaims', 'hostUsers', 'hostnameOverride']));
  });

  it('is the pinned release: src/admission/podApi.ts is what its OpenAPI document gives', () => {
    expect(POD_API_RELEASE).toBe(pinnedRelease());
    const source = openApiPath();
    if (!existsSync(source)) {
      // CI builds the control plane first (.ci/run), which puts the release in the module cache.
      if (process.env.CI) throw new Error(`${source} is missing on CI: scripts/controlplane/build.mjs should have fetched k8s.io/kubernetes ${POD_API_RELEASE}`);
      console.warn(`\n*** SKIPPED: the pod API extraction check needs ${source} (node scripts/controlplane/build.mjs fetches it) ***\n`);
      return;
    }
    expect(readFileSync(GENERATED, 'utf8'), 'run node scripts/podapi/extract.mjs').toBe(generate());
  });

  it('is what docs/pod-fields.md says', () => {
    expect(readFileSync(DOC, 'utf8'), 'run npx tsx scripts/podapi/doc.ts').toBe(renderDoc());
  });
});

const node: NodeInfo = { name: 'node-a', maxPods: 10, labels: {}, os: 'linux' };

function pod(spec: Record<string, unknown>): Pod {
  return { metadata: { name: 'p', namespace: 'default', uid: 'u1' }, spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec } } as unknown as Pod;
}

/**
 * A spec setting `type.field` to `value`, reached from PodSpec through implemented fields only
 * (lists as one-item lists where the walk shows them indexed), and the path admission should name.
 */
function specSetting(type: string, field: string, value: unknown): { spec: Record<string, unknown>; path: string } {
  const via = new Map<string, { parent: string; field: string }>();
  const queue = ['PodSpec'];
  while (queue.length > 0 && !via.has(type) && type !== 'PodSpec') {
    const at = queue.shift()!;
    for (const [name, held] of Object.entries(POD_API_TYPES[at] ?? {})) {
      const handling = POD_FIELDS[at]?.[name];
      if (held === null || held === 'PodSpec' || via.has(held) || !handling || !('implemented' in handling)) continue;
      via.set(held, { parent: at, field: name });
      queue.push(held);
    }
  }
  const steps: string[] = [];
  for (let at = type; at !== 'PodSpec'; at = via.get(at)!.parent) steps.unshift(via.get(at)!.field);
  let object: Record<string, unknown> = { [field]: value };
  for (const step of [...steps].reverse()) object = { [step]: [object] };
  return { spec: object, path: `spec${steps.map((s) => `.${s}[0]`).join('')}.${field}` };
}

const refusedAtAdmission = Object.entries(POD_FIELDS).flatMap(([type, fields]) =>
  Object.entries(fields).flatMap(([field, handling]) => ('refused' in handling && handling.at === 'admission' ? [[`${type}.${field}`, type, field] as const] : [])),
);

describe('refused fields', () => {
  it.each(refusedAtAdmission)('refuses %s at admission, naming the field', (_, type, field) => {
    const held = POD_API_TYPES[type]?.[field];
    const { spec, path } = specSetting(type, field, held === null ? 'not-accepted' : {});
    const admission = admitPod(pod(spec), [], node);
    expect(admission).toMatchObject({ admit: false, reason: 'PodFeatureUnsupported' });
    expect(admission.admit === false && admission.message).toMatch(new RegExp(`^Pod requires node features that are not available: ${path.replace(/[.[\]]/g, '\\$&')} \\(`));
  });

  it('admits the values a refused field accepts, and unset ones', () => {
    expect(unsupportedField({ containers: [{ name: 'c', volumeMounts: [{ name: 'v', readOnly: true, recursiveReadOnly: 'Disabled' }] }] })).toBeUndefined();
    expect(unsupportedField({ volumes: [{ name: 'v', emptyDir: { medium: 'Memory' } }, { name: 'w', emptyDir: { medium: 'HugePages-2Mi' } }] })).toBeUndefined();
    expect(unsupportedField({ containers: [{ name: 'c', stdinOnce: false, restartPolicyRules: [] }], resourceClaims: [], setHostnameAsFQDN: false })).toBeUndefined();
    expect(unsupportedField({ securityContext: { seLinuxChangePolicy: 'Recursive' } })).toBeUndefined();
  });

  it('admits an init container\'s own restart policy and Restart rules, and refuses the RestartAllContainers action on one', () => {
    const rule = (action: string) => [{ action, exitCodes: { operator: 'In', values: [42] } }];
    expect(unsupportedField({ initContainers: [{ name: 'i', restartPolicy: 'Never', restartPolicyRules: rule('Restart') }, { name: 's', restartPolicy: 'Always', restartPolicyRules: rule('Restart') }] })).toBeUndefined();
    expect(unsupportedField({ initContainers: [{ name: 'i', restartPolicy: 'OnFailure', restartPolicyRules: rule('RestartAllContainers') }] })).toEqual({
      field: 'spec.initContainers[0].restartPolicyRules[0].action',
      why: expect.stringContaining('RestartAllContainers'),
    });
  });

  it('names the first refused field in the pod\'s order, with the index of each list', () => {
    const spec = {
      volumes: [{ name: 'a', emptyDir: {} }, { name: 'b', emptyDir: { medium: 'HugePages', mode: 0o755 } }],
      initContainers: [{ name: 'i', env: [{ name: 'X' }, { name: 'Y', valueFrom: { fileKeyRef: { path: 'f', key: 'k', volumeName: 'a' } } }] }],
    };
    expect(unsupportedField(spec)).toEqual({ field: 'spec.volumes[1].emptyDir.mode', why: expect.stringContaining('EmptyDirVolumeMode') });
    expect(unsupportedField({ initContainers: spec.initContainers })).toEqual({ field: 'spec.initContainers[0].env[1].valueFrom.fileKeyRef', why: expect.stringContaining('EnvFiles') });
  });

  it('leaves volume plugins the node lacks to the mount, resource claims to the pod\'s start, and control-plane fields alone', () => {
    expect(unsupportedField({ volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }] })).toBeUndefined();
    const claims = { resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: 'gpu' }], containers: [{ name: 'c', image: 'busybox', resources: { claims: [{ name: 'gpu' }] } }] };
    expect(admitPod(pod(claims), [], node)).toEqual({ admit: true });
    expect(unsupportedField({ topologySpreadConstraints: [{ maxSkew: 1 }], schedulingGates: [{ name: 'g' }], schedulerName: 'other' })).toBeUndefined();
  });
});
