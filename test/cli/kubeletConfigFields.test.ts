/**
 * The KubeletConfiguration as the pinned release defines it and kubeadm writes it: every field
 * has a status, zero values mean the kubelet's defaults, fields statelet does not implement are
 * refused unless at their default, --config-dir drop-ins merge in the kubelet's order.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KUBELET_CONFIG_DEFAULTS, KUBELET_CONFIG_FIELDS, KUBELET_CONFIG_RELEASE, type ConfigField } from '../../src/cli/kubeletConfigApi.ts';
import { CONFIG_FIELD_STATUS } from '../../src/cli/kubeletConfigFields.ts';
import { ConfigFileError, dropInFiles, loadKubeletConfig, mergePatch } from '../../src/cli/kubeletConfig.ts';
import { OPTIONS } from '../../src/cli/options.ts';
import { UsageError, parseCommandLine } from '../../src/cli/flags.ts';
// @ts-expect-error: a plain JavaScript module without declarations
import { pinnedRelease } from '../../scripts/podapi/extract.mjs';

const HEADER = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/kubeadm');
const env = { hostname: () => 'host-a' };

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'statelet-kcfg-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function write(name: string, body: string): string {
  const file = path.join(dir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, body);
  return file;
}

/** Every field path of the release, depth first. */
function fieldPaths(fields: Readonly<Record<string, ConfigField>>, prefix = ''): string[] {
  return Object.entries(fields).flatMap(([name, field]) => [`${prefix}${name}`, ...(field.fields ? fieldPaths(field.fields, `${prefix}${name}.`) : [])]);
}

const SETTING_FIELDS = new Set(OPTIONS.flatMap((spec) => (spec.configField ? [spec.configField] : [])));

/** A field's status: its own, or the one of the block it is in. */
function statusOf(fieldPath: string): string | undefined {
  const parts = fieldPath.split('.');
  for (let length = parts.length; length > 0; length--) {
    const at = parts.slice(0, length).join('.');
    if (SETTING_FIELDS.has(at)) return 'setting';
    const status = CONFIG_FIELD_STATUS[at];
    if (status) return 'defaultOnly' in status ? 'defaultOnly' : 'honoured';
  }
  return undefined;
}

describe('the field table', () => {
  it('is the pinned release', () => {
    expect(KUBELET_CONFIG_RELEASE).toBe(pinnedRelease());
  });

  it('gives every field of KubeletConfiguration v1beta1 a status: a setting, honoured, or accepted at its default only', () => {
    const paths = fieldPaths(KUBELET_CONFIG_FIELDS);
    // A broken extraction would make the walk pass vacuously.
    expect(Object.keys(KUBELET_CONFIG_FIELDS).length).toBeGreaterThanOrEqual(126);
    expect(paths).toEqual(expect.arrayContaining(['authentication.x509.clientCAFile', 'logging.options.json.infoBufferSize', 'shutdownGracePeriod', 'rotateCertificates']));
    // A block (authentication, logging, …) is covered by its fields; a leaf needs its own status or its block's.
    const leaves = paths.filter((fieldPath) => !paths.some((other) => other.startsWith(`${fieldPath}.`)));
    expect(leaves.filter((fieldPath) => statusOf(fieldPath) === undefined)).toEqual([]);
  });

  it('names only fields the release has', () => {
    const paths = new Set(fieldPaths(KUBELET_CONFIG_FIELDS));
    expect([...SETTING_FIELDS, ...Object.keys(CONFIG_FIELD_STATUS)].filter((fieldPath) => !paths.has(fieldPath))).toEqual([]);
  });

  it('accepts every field at the default the release gives it', () => {
    const file = write('defaults.json', JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', ...KUBELET_CONFIG_DEFAULTS }));
    const { warnings } = loadKubeletConfig(file, undefined);
    expect(warnings).toEqual([]);
  });

  // A field each statelet does not implement, at a value other than the default: refused, naming it.
  it.each([
    ['shutdownGracePeriod: 30s', /shutdownGracePeriod: "30s" is refused: statelet does not delay node shutdown/],
    ['enableServer: false', /enableServer: false is refused/],
    ['authentication: {webhook: {cacheTTL: 10s}}', /authentication.webhook.cacheTTL: "10s" is refused: statelet caches TokenReview answers for 2m0s/],
    ['logging: {vmodule: [{filePattern: "x*", verbosity: 4}]}', /logging.vmodule: .* is refused/],
    ['tracing: {}', /tracing: \{\} is refused: statelet exports no OpenTelemetry traces/],
    ['podsPerCore: 4', /podsPerCore: 4 is refused/],
    ['reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]', /reservedMemory: .* is refused/],
    ['healthzPort: null\nenableContentionProfiling: true', /enableContentionProfiling: true is refused/],
  ])('refuses %s', (body, message) => {
    const file = write('c.yaml', `${HEADER}${body}\n`);
    expect(() => loadKubeletConfig(file, undefined)).toThrow(ConfigFileError);
    expect(() => loadKubeletConfig(file, undefined)).toThrow(message);
  });

  it.each([
    ['enableServer: "yes"', 'enableServer: expected a boolean'],
    ['podsPerCore: "4"', 'podsPerCore: expected a number'],
    ['hairpinMode: 3', 'hairpinMode: expected a string'],
    ['reservedMemory: {numaNode: 0}', 'reservedMemory: expected a list'],
    ['qosReserved: [memory]', 'qosReserved: expected an object'],
    ['tracing: 1', 'tracing: expected an object'],
  ])('fails %s as a type error, not a refusal', (body, message) => {
    expect(() => loadKubeletConfig(write('c.yaml', `${HEADER}${body}\n`), undefined)).toThrow(message);
  });

  it('takes the values it honours besides the default: JSON to the API server, any flush frequency; registryPullQPS 0 is no pull limit (a pointer: 0 is not the default)', () => {
    const file = write('c.yaml', `${HEADER}contentType: application/json\nlogging: {flushFrequency: 2s}\nshutdownGracePeriod: 0s\ntracing: null\n`);
    expect(loadKubeletConfig(file, undefined)).toEqual({ settings: {}, origins: {}, warnings: [] });
    expect(loadKubeletConfig(write('q.yaml', `${HEADER}registryPullQPS: 0\nregistryBurst: 3\n`), undefined).settings).toEqual({ registryPullQps: 0, registryBurst: 3 });
    expect(() => loadKubeletConfig(write('d.yaml', `${HEADER}logging: {flushFrequency: soon}\n`), undefined)).toThrow(/logging.flushFrequency: expected a duration/);
  });
});

describe('zero values mean the default (SetDefaults_KubeletConfiguration)', () => {
  it.each([
    ['syncFrequency: 0s', 'syncFrequencyMs', 60_000],
    ['fileCheckFrequency: "0"', 'fileCheckFrequencyMs', 20_000],
    ['runtimeRequestTimeout: 0s', 'runtimeRequestTimeoutMs', 120_000],
    ['evictionPressureTransitionPeriod: 0s', 'evictionPressureTransitionPeriodMs', 300_000],
    ['containerRuntimeEndpoint: ""', 'containerRuntimeEndpoint', 'unix:///run/containerd/containerd.sock'],
    ['port: 0', 'port', 10250],
    ['maxPods: 0', 'maxPods', 110],
    ['eventBurst: 0', 'eventBurst', 100],
    ['cgroupDriver: ""', 'cgroupDriver', 'cgroupfs'],
    ['nodeStatusReportFrequency: 0s', 'nodeStatusReportFrequencyMs', 300_000],
  ] as const)('%s', (body, key, expected) => {
    const result = parseCommandLine(['--config', write('c.yaml', `${HEADER}${body}\n`)], env);
    if (result.kind !== 'run') throw new Error(result.kind);
    expect(result.config[key]).toEqual(expected);
  });

  it('keeps a zero where it is a value: readOnlyPort 0 (no default), healthzPort 0 (a pointer: disabled), an empty enforceNodeAllocatable', () => {
    const file = write('c.yaml', `${HEADER}readOnlyPort: 0\nhealthzPort: 0\nenforceNodeAllocatable: []\ncgroupsPerQOS: true\n`);
    expect(loadKubeletConfig(file, undefined).settings).toEqual({ readOnlyPort: 0, healthzPort: 0, enforceNodeAllocatable: [], cgroupsPerQos: true });
  });

  it('makes an unset report frequency follow an update frequency that was set', () => {
    expect(loadKubeletConfig(write('c.yaml', `${HEADER}nodeStatusUpdateFrequency: 4s\n`), undefined).settings).toMatchObject({ nodeStatusUpdateFrequencyMs: 4_000, nodeStatusReportFrequencyMs: 4_000 });
    expect(loadKubeletConfig(write('c.yaml', `${HEADER}nodeStatusUpdateFrequency: 4s\nnodeStatusReportFrequency: 1m\n`), undefined).settings).toMatchObject({ nodeStatusReportFrequencyMs: 60_000 });
  });
});

describe("kubeadm's config.yaml (J4, with cgroupDriver: cgroupfs)", () => {
  const fixture = path.join(FIXTURES, 'config.yaml');

  it('loads with the kubelet defaults for its zero values and its auth blocks mapped onto the settings', () => {
    const { settings, warnings } = loadKubeletConfig(fixture, undefined);
    expect(warnings).toEqual([]);
    expect(settings).toEqual({
      anonymousAuth: false,
      authenticationTokenWebhook: true,
      clientCaFile: '/etc/kubernetes/pki/ca.crt',
      authorizationMode: 'Webhook',
      cgroupDriver: 'cgroupfs',
      clusterDns: ['10.96.0.10'],
      clusterDomain: 'cluster.local',
      healthzBindAddress: '127.0.0.1',
      healthzPort: 10248,
      imageMaximumGcAgeMs: 0,
      verbosity: 0,
      memorySwapBehavior: '',
      resolvConf: '/run/systemd/resolve/resolv.conf',
      rotateCertificates: true,
      podManifestPath: '/etc/kubernetes/manifests',
    });
  });

  it('runs with the kubelet defaults where it wrote 0s, and the cluster CA for client certificates', () => {
    const result = parseCommandLine(['--config', fixture, '--rotate-certificates=false', '--kubeconfig', '/etc/kubernetes/kubelet.conf'], env);
    if (result.kind !== 'run') throw new Error(result.kind);
    expect(result.config).toMatchObject({
      syncFrequencyMs: 60_000,
      fileCheckFrequencyMs: 20_000,
      runtimeRequestTimeoutMs: 120_000,
      nodeStatusUpdateFrequencyMs: 10_000,
      nodeStatusReportFrequencyMs: 300_000,
      imageMinimumGcAgeMs: 120_000,
      imageMaximumGcAgeMs: 0,
      volumeStatsAggPeriodMs: 60_000,
      containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
      clientCaFile: '/etc/kubernetes/pki/ca.crt',
      readOnlyPort: 0,
    });
  });

  it('refuses cgroupDriver: systemd, saying why', () => {
    const file = write('config.yaml', fs.readFileSync(fixture, 'utf8').replace(/^cgroupDriver: cgroupfs$/m, 'cgroupDriver: systemd'));
    expect(() => loadKubeletConfig(file, undefined)).toThrow(/cgroupDriver: statelet has no systemd cgroup driver: it makes its cgroups through cgroupfs only/);
  });
});

describe('--config-dir drop-ins (server.go mergeKubeletConfigurations)', () => {
  it('lists *.conf files in filepath.WalkDir order: lexical per directory, subdirectories where they sort', () => {
    write('conf.d/20-b.conf', HEADER);
    write('conf.d/10-a.conf', HEADER);
    write('conf.d/15/01-x.conf', HEADER);
    write('conf.d/99-z.yaml', HEADER);
    write('conf.d/30-c.conf.bak', HEADER);
    expect(dropInFiles(path.join(dir, 'conf.d')).map((file) => path.relative(dir, file))).toEqual(['conf.d/10-a.conf', 'conf.d/15/01-x.conf', 'conf.d/20-b.conf']);
  });

  it('is an RFC 7386 merge patch: maps merge, lists replace, null deletes', () => {
    expect(mergePatch({ a: { b: 1, c: 2 }, l: [1, 2], d: 4 }, { a: { c: 3, e: 5 }, l: [9], d: null })).toEqual({ a: { b: 1, c: 3, e: 5 }, l: [9] });
  });

  it('layers flags over drop-ins over --config over the defaults, naming the drop-in a refusal comes from', () => {
    const config = write('config.yaml', `${HEADER}maxPods: 50\nsyncFrequency: 30s\nclusterDomain: cluster.local\nfeatureGates: {AllAlpha: false}\n`);
    write('conf.d/10-pods.conf', `${HEADER}maxPods: 60\nsyncFrequency: null\n`);
    write('conf.d/20-pods.conf', `${HEADER}maxPods: 70\nclusterDNS: [10.96.0.10]\n`);
    const result = parseCommandLine(['--config', config, '--config-dir', path.join(dir, 'conf.d'), '--cluster-dns', '10.96.0.11'], env);
    if (result.kind !== 'run') throw new Error(result.kind);
    // maxPods: the last drop-in; syncFrequency: deleted by a drop-in, so the default; clusterDNS: the flag.
    expect(result.config).toMatchObject({ maxPods: 70, syncFrequencyMs: 60_000, clusterDomain: 'cluster.local', clusterDns: ['10.96.0.11'], configDir: path.join(dir, 'conf.d') });
    write('conf.d/30-shutdown.conf', `${HEADER}shutdownGracePeriod: 30s\n`);
    expect(() => parseCommandLine(['--config', config, '--config-dir', path.join(dir, 'conf.d')], env)).toThrow(`${path.join(dir, 'conf.d/30-shutdown.conf')}: shutdownGracePeriod: "30s" is refused`);
  });

  it('defaults the report frequency before the drop-ins: a drop-in update frequency does not move it, a drop-in reset does', () => {
    const config = write('config.yaml', `${HEADER}nodeStatusUpdateFrequency: 4s\n`);
    write('conf.d/10.conf', `${HEADER}nodeStatusUpdateFrequency: 8s\n`);
    const conf = path.join(dir, 'conf.d');
    expect(loadKubeletConfig(config, conf).settings).toMatchObject({ nodeStatusUpdateFrequencyMs: 8_000, nodeStatusReportFrequencyMs: 4_000 });
    // No --config: the base had the default, 5m, which the drop-in leaves.
    expect(loadKubeletConfig(undefined, conf).settings).toMatchObject({ nodeStatusUpdateFrequencyMs: 8_000 });
    expect(loadKubeletConfig(undefined, conf).settings.nodeStatusReportFrequencyMs).toBeUndefined();
    write('conf.d/20.conf', `${HEADER}nodeStatusReportFrequency: null\n`);
    expect(loadKubeletConfig(config, conf).settings).toMatchObject({ nodeStatusUpdateFrequencyMs: 8_000, nodeStatusReportFrequencyMs: 8_000 });
  });

  it("patches the default eviction thresholds, as the kubelet's defaulted base has them", () => {
    write('conf.d/10.conf', `${HEADER}evictionHard: {memory.available: 200Mi}\n`);
    expect(loadKubeletConfig(undefined, path.join(dir, 'conf.d')).settings.evictionHard).toEqual({ 'memory.available': '200Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' });
  });

  it('with mergeDefaultEvictionSettings, adds the default thresholds the --config file leaves out (server.go loadConfigFile)', () => {
    const file = write('c.yaml', `${HEADER}mergeDefaultEvictionSettings: true\nevictionHard: {memory.available: 300Mi}\n`);
    expect(loadKubeletConfig(file, undefined).settings.evictionHard).toEqual({ 'memory.available': '300Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' });
    expect(loadKubeletConfig(write('d.yaml', `${HEADER}mergeDefaultEvictionSettings: false\nevictionHard: {memory.available: 300Mi}\n`), undefined).settings.evictionHard).toEqual({ 'memory.available': '300Mi' });
    expect(() => loadKubeletConfig(write('e.yaml', `${HEADER}mergeDefaultEvictionSettings: "yes"\n`), undefined)).toThrow(/mergeDefaultEvictionSettings: expected a boolean/);
  });

  it('fails on a drop-in of another kind or version, or none, as the kubelet does', () => {
    write('conf.d/10.conf', 'apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n');
    expect(() => loadKubeletConfig(undefined, path.join(dir, 'conf.d'))).toThrow(/10\.conf: failed to load kubelet dropin file: unknown apiVersion\/kind/);
    write('conf.d/10.conf', 'maxPods: 3\n');
    expect(() => loadKubeletConfig(undefined, path.join(dir, 'conf.d'))).toThrow(/10\.conf: failed to load kubelet dropin file: no apiVersion\/kind/);
    expect(() => loadKubeletConfig(undefined, path.join(dir, 'absent'))).toThrow(/failed to walk through kubelet dropin directory \(ENOENT\)/);
  });

  it('takes a drop-in field of the wrong type as an error, one outside the schema as a warning', () => {
    write('conf.d/10.conf', `${HEADER}maxPods: many\n`);
    expect(() => loadKubeletConfig(undefined, path.join(dir, 'conf.d'))).toThrow(/maxPods: expected an integer/);
    write('conf.d/10.conf', `${HEADER}maxPod: 3\n`);
    expect(loadKubeletConfig(undefined, path.join(dir, 'conf.d')).warnings).toEqual([
      `${path.join(dir, 'conf.d/10.conf')}: unknown field "maxPod" (not in KubeletConfiguration v1beta1) ignored, as the kubelet's lenient decoding does`,
    ]);
  });

  it('warns about a field given twice and takes the last, as lenient decoding does', () => {
    const { settings, warnings } = loadKubeletConfig(write('c.yaml', `${HEADER}maxPods: 3\nmaxPods: 4\n`), undefined);
    expect(settings.maxPods).toBe(4);
    expect(warnings[0]).toMatch(/a field is given twice, the last one is used/);
  });
});

describe('errors are UsageError or ConfigFileError, never a crash', () => {
  it('reports a refused config-file field with the file named', () => {
    const file = write('c.yaml', `${HEADER}podsPerCore: 2\n`);
    expect(() => parseCommandLine(['--config', file], env)).toThrow(ConfigFileError);
    expect(() => parseCommandLine(['--max-pods=x'], env)).toThrow(UsageError);
  });
});
