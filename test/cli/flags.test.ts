import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentDefaults, crashLoopBackOffPolicy } from '../../src/cli/config.ts';
import { DurationError, formatDuration, parseDuration } from '../../src/duration.ts';
import { UsageError, helpText, parseCommandLine } from '../../src/cli/flags.ts';
import { ConfigFileError, loadKubeletConfig, parseKubeletConfig } from '../../src/cli/kubeletConfig.ts';
import { OPTIONS, configz } from '../../src/cli/options.ts';
import { KUBELET_FEATURE_GATES } from '../../src/cli/kubeletConfigApi.ts';
import { commandLine } from '../support/commandLine.ts';

const env = { hostname: () => 'Worker-1.Example' };
const cli = commandLine('Worker-1.Example');
const run = cli.run;
const usageError = cli.usageError;




let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'statelet-cli-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function writeConfig(body: string, name = 'config.yaml'): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, body);
  return file;
}

const HEADER = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';

describe('parseDuration', () => {
  it.each([
    ['20s', 20_000],
    ['1m30s', 90_000],
    ['500ms', 500],
    ['1h', 3_600_000],
    ['1.5s', 1_500],
    ['1.1s', 1_100],
    ['.5m', 30_000],
    ['1.s', 1_000],
    ['0', 0],
    ['+0', 0],
    ['0s', 0],
    ['1h2m3s4ms', 3_723_004],
    ['250us', 0.25],
    ['250µs', 0.25],
    ['250μs', 0.25],
    ['1500ns', 0.0015],
    ['+5s', 5_000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    ['', /expected a number followed by a unit/],
    ['20', /missing unit/],
    ['1.5', /missing unit/],
    ['1m30', /missing unit/],
    ['abc', /expected a number followed by a unit/],
    ['20x', /unknown unit "x"/],
    ['1 s', /unknown unit " s"/],
    ['s', /no number/],
    ['.s', /no number/],
    ['-5s', /must not be negative/],
    ['9999999999h', /out of range/],
  ])('rejects %j', (text, reason) => {
    expect(() => parseDuration(text)).toThrow(DurationError);
    expect(() => parseDuration(text)).toThrow(reason);
  });

  it('accepts negative durations only when asked', () => {
    expect(parseDuration('-1m30s', { allowNegative: true })).toBe(-90_000);
    expect(parseDuration('-0')).toBe(0);
  });

  it.each([
    [20_000, '20s'],
    [60_000, '1m0s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
    [3_723_004, '1h2m3.004s'],
    [1_500, '1.5s'],
    [500, '500ms'],
    [0.25, '250µs'],
    [0.0015, '1.5µs'],
    [0.000001, '1ns'],
    [0, '0s'],
    [-90_000, '-1m30s'],
  ])('formats %d ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('round-trips what it formats', () => {
    for (const ms of [1, 999, 1_001, 59_999, 61_000, 86_400_000, 1.25]) {
      expect(parseDuration(formatDuration(ms))).toBe(ms);
    }
  });
});

describe('parseCommandLine: defaults and forms', () => {
  it('resolves the documented defaults with no arguments', () => {
    const { config, warnings } = run([]);
    expect(config).toEqual({
      manifestUrlHeaders: {},
      registerNode: true,
      rotateCertificates: false,
      serverTLSBootstrap: false,
      tlsCipherSuites: [],
      tlsMinVersion: 'VersionTLS12',
      featureGates: Object.fromEntries(Object.entries(KUBELET_FEATURE_GATES).map(([name, gate]) => [name, gate.default])),
      cloudProvider: '',
      providerId: '',
      nodeLabels: {},
      registerWithTaints: [],
      nodeStatusUpdateFrequencyMs: 10_000,
      nodes: 1,
      nodeStatusReportFrequencyMs: 300_000,
      nodeLeaseDurationSeconds: 40,
      kubeApiQps: 50,
      kubeApiBurst: 100,
      registryPullQps: 5,
      registryBurst: 10,
      eventQps: 50,
      eventBurst: 100,
      clusterDns: [],
      clusterDomain: '',
      resolvConf: '/etc/resolv.conf',
      systemReserved: {},
      kubeReserved: {},
      containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
      imageServiceEndpoint: 'unix:///run/containerd/containerd.sock',
      nodeName: 'worker-1.example',
      rootDir: '/var/lib/kubelet',
      podLogsDir: '/var/log/pods',
      fileCheckFrequencyMs: 20_000,
      runtimeRequestTimeoutMs: 120_000,
      httpCheckFrequencyMs: 20_000,
      syncFrequencyMs: 60_000,
      address: '0.0.0.0',
      readOnlyAddress: '127.0.0.1',
      port: 10250,
      anonymousAuth: false,
      containerLogMaxSize: 10 * 2 ** 20,
      containerLogMaxFiles: 5,
      containerLogMonitorIntervalMs: 10_000,
      seccompDefault: false,
      cgroupsPerQos: true,
      cgroupRoot: '',
      cgroupDriver: 'cgroupfs',
      cpuManagerPolicy: 'none',
      memoryManagerPolicy: 'None',
      topologyManagerPolicy: 'none',
      enforceNodeAllocatable: ['pods'],
      podMaxPids: -1,
      failSwapOn: true,
      failCgroupV1: false,
      oomScoreAdj: -999,
      maxOpenFiles: 1_000_000,
      memorySwapBehavior: '',
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' },
      evictionSoft: {},
      evictionSoftGracePeriod: {},
      evictionMinimumReclaim: {},
      evictionPressureTransitionPeriodMs: 300_000,
      evictionMaxPodGracePeriod: 0,
      volumeStatsAggPeriodMs: 60_000,
      allowedUnsafeSysctls: [],
      readOnlyPort: 10255,
      healthzPort: 10248,
      healthzBindAddress: '127.0.0.1',
      maxPods: 110,
      serializeImagePulls: true,
      imagePullCredentialsVerificationPolicy: 'NeverVerifyPreloadedImages',
      preloadedImagesVerificationAllowlist: [],
      plegRelistPeriodMs: 1_000,
      eventedPleg: true,
      eventedPlegRelistPeriodMs: 10_000,
      crashLoopBackOffInitialMs: 10_000,
      crashLoopBackOffMaxMs: 300_000,
      containerGcPeriodMs: 60_000,
      minimumContainerTtlMs: 0,
      maxDeadContainersPerContainer: 1,
      maxDeadContainers: -1,
      imageGcHighThresholdPercent: 85,
      imageGcLowThresholdPercent: 80,
      imageMinimumGcAgeMs: 120_000,
      imageMaximumGcAgeMs: 0,
      visualizerPort: 0,
      verbosity: 0,
      logFormat: 'text',
    });
    expect(warnings).toEqual([]);
  });

  it('reads the cluster flags: labels, taints, reservations, status and lease periods', () => {
    const { config } = run([
      '--kubeconfig=/etc/kubelet.conf',
      '--register-node=false',
      '--node-labels=team=a,node.kubernetes.io/role=edge',
      '--register-with-taints=dedicated=infra:NoSchedule,gpu:NoExecute',
      '--system-reserved=cpu=100m,memory=256Mi',
      '--kube-reserved=memory=1Gi',
      '--node-status-update-frequency=5s',
      '--node-status-report-frequency=1m',
      '--node-lease-duration-seconds=20',
      '--kube-api-qps=20',
      '--kube-api-burst=40',
      '--event-qps=0',
      '--event-burst=5',
    ]);
    expect(config).toMatchObject({
      kubeconfig: '/etc/kubelet.conf',
      registerNode: false,
      nodeLabels: { team: 'a', 'node.kubernetes.io/role': 'edge' },
      registerWithTaints: [
        { key: 'dedicated', value: 'infra', effect: 'NoSchedule' },
        { key: 'gpu', effect: 'NoExecute' },
      ],
      systemReserved: { cpu: '100m', memory: '256Mi' },
      kubeReserved: { memory: '1Gi' },
      nodeStatusUpdateFrequencyMs: 5_000,
      nodeStatusReportFrequencyMs: 60_000,
      nodeLeaseDurationSeconds: 20,
      kubeApiQps: 20,
      kubeApiBurst: 40,
      eventQps: 0,
      eventBurst: 5,
    });
    expect(usageError(['--kube-api-qps', '-1'])).toBe('invalid value "-1" for flag --kube-api-qps: must be at least 0');
    expect(usageError(['--node-labels', 'bad key=x'])).toMatch(/^invalid value "bad key=x" for flag --node-labels: bad key: name part must be/);
    expect(usageError(['--register-with-taints', 'a=b:Sometimes'])).toBe(
      'invalid value "a=b:Sometimes" for flag --register-with-taints: taint a: effect "Sometimes" is not one of NoSchedule, PreferNoSchedule, NoExecute',
    );
    expect(usageError(['--system-reserved', 'cpu=lots'])).toMatch(/^invalid value "cpu=lots" for flag --system-reserved: cpu: quantities must match/);
    expect(usageError(['--node-lease-duration-seconds', '0'])).toBe('invalid value "0" for flag --node-lease-duration-seconds: must be at least 1');
  });

  it('reads the cluster fields of a KubeletConfiguration file', () => {
    const result = parseKubeletConfig(
      `${HEADER}registerNode: false\nregisterWithTaints: [{key: a, value: b, effect: NoExecute}]\nsystemReserved: {cpu: 500m}\nnodeStatusUpdateFrequency: 20s\nnodeLeaseDurationSeconds: 60\nkubeAPIQPS: 10\neventBurst: 7\n`,
      'k.yaml',
    );
    expect(result.settings).toEqual({
      registerNode: false,
      registerWithTaints: [{ key: 'a', value: 'b', effect: 'NoExecute' }],
      systemReserved: { cpu: '500m' },
      nodeStatusUpdateFrequencyMs: 20_000,
      // defaults.go: an unset report frequency follows an update frequency that was set.
      nodeStatusReportFrequencyMs: 20_000,
      nodeLeaseDurationSeconds: 60,
      kubeApiQps: 10,
      eventBurst: 7,
    });
  });

  it('reads the container GC flags: a zero TTL and -1 (no limit) are valid, below -1 is not', () => {
    const { config } = run(['--minimum-container-ttl-duration', '0s', '--maximum-dead-containers-per-container', '-1', '--maximum-dead-containers=100']);
    expect(config).toMatchObject({ minimumContainerTtlMs: 0, maxDeadContainersPerContainer: -1, maxDeadContainers: 100 });
    expect(run(['--minimum-container-ttl-duration=1m30s']).config.minimumContainerTtlMs).toBe(90_000);
    expect(run(['--container-gc-period=5s']).config.containerGcPeriodMs).toBe(5_000);
    expect(usageError(['--container-gc-period', '0s'])).toBe('invalid value "0s" for flag --container-gc-period: must be greater than 0');
    expect(usageError(['--maximum-dead-containers', '-2'])).toBe('invalid value "-2" for flag --maximum-dead-containers: must be at least -1');
  });

  it("reads the image GC flags and fields, the kubelet's names and defaults (imageMaximumGCAge has no flag)", () => {
    expect(run(['--image-gc-high-threshold=90', '--image-gc-low-threshold', '70', '--minimum-image-ttl-duration=5m']).config).toMatchObject({
      imageGcHighThresholdPercent: 90,
      imageGcLowThresholdPercent: 70,
      imageMinimumGcAgeMs: 300_000,
      imageMaximumGcAgeMs: 0,
    });
    const file = writeConfig(`${HEADER}imageGCHighThresholdPercent: 100\nimageGCLowThresholdPercent: 0\nimageMinimumGCAge: 1s\nimageMaximumGCAge: 168h\n`);
    expect(run(['--config', file]).config).toMatchObject({ imageGcHighThresholdPercent: 100, imageGcLowThresholdPercent: 0, imageMinimumGcAgeMs: 1_000, imageMaximumGcAgeMs: 168 * 3_600_000 });
    // 0s is the zero value, which SetDefaults_KubeletConfiguration makes the default, 2m.
    expect(run(['--config', writeConfig(`${HEADER}imageMinimumGCAge: 0s\n`)]).config.imageMinimumGcAgeMs).toBe(120_000);
    expect(usageError(['--image-maximum-gc-age=1h'])).toBe('failed to parse kubelet flag: unknown flag: --image-maximum-gc-age');
  });

  it.each([
    [['--image-gc-high-threshold=101'], 'invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 and 100, inclusive'],
    [['--image-gc-low-threshold=-1'], 'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) -1 must be between 0 and 100, inclusive'],
    [['--image-gc-low-threshold=85'], 'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 85 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85'],
    [['--image-gc-high-threshold=70'], 'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 80 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 70'],
    [['--minimum-image-ttl-duration=-1m'], 'invalid configuration: imageMinimumGCAge -1m0s must not be negative'],
    [
      ['--image-gc-high-threshold=120', '--image-gc-low-threshold=-5'],
      '[invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 120 must be between 0 and 100, inclusive, ' +
        'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) -5 must be between 0 and 100, inclusive]',
    ],
    [['--image-gc-high-threshold=high'], 'invalid value "high" for flag --image-gc-high-threshold: not an integer'],
    [['--minimum-image-ttl-duration=2'], 'invalid value "2" for flag --minimum-image-ttl-duration: missing unit (expected one of ns, us, µs, ms, s, m, h)'],
  ])("refuses the image GC settings %j with the kubelet's message", (argv, message) => {
    expect(usageError(argv)).toBe(message);
  });

  it.each([
    ['imageMaximumGCAge: -1h\n', 'invalid configuration: imageMaximumGCAge -1h0m0s must not be negative'],
    ['imageMaximumGCAge: 1m\n', 'invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s'],
    ['imageMaximumGCAge: 5m\nimageMinimumGCAge: 5m\n', 'invalid configuration: imageMaximumGCAge 5m0s must be greater than imageMinimumGCAge 5m0s'],
  ])("refuses the config file's %j with the kubelet's message", (fields, message) => {
    expect(usageError(['--config', writeConfig(HEADER + fields)])).toBe(message);
  });

  it.each([
    [['--max-pods', '7']],
    [['--max-pods=7']],
    [['-max-pods', '7']],
    [['-max-pods=7']],
    [['--max_pods=7']],
  ])('reads an int flag written as %j', (argv) => {
    expect(run(argv).config.maxPods).toBe(7);
  });

  it.each([
    [['-v', '2'], 2],
    [['-v=2'], 2],
    [['--v', '2'], 2],
    [['--v=2'], 2],
  ])('reads verbosity from %j', (argv, level) => {
    expect(run(argv).config.verbosity).toBe(level);
  });

  it.each([
    [['--serialize-image-pulls'], true],
    [['--serialize-image-pulls=false'], false],
    [['--serialize-image-pulls=true'], true],
    [['--serialize-image-pulls=0'], false],
    [['--serialize-image-pulls=F'], false],
  ])('reads the boolean form %j', (argv, value) => {
    expect(run(argv).config.serializeImagePulls).toBe(value);
  });

  it('does not let a boolean flag swallow the next argument', () => {
    expect(usageError(['--serialize-image-pulls', 'false'])).toBe(
      'unexpected argument "false": statelet takes only flags',
    );
  });

  it('reads durations, strings, IPs and enums', () => {
    const { config } = run([
      '--sync-frequency', '1m30s',
      '--file-check-frequency=5s',
      '--runtime-request-timeout=15s',
      '--http-check-frequency', '500ms',
      '--pleg-relist-period', '2s',
      '--pod-manifest-path', '/etc/kubernetes/manifests',
      '--manifest-url=https://example.com/pods',
      '--kubeconfig', '/etc/kubernetes/kubelet.conf',
      '--root-dir', '/tmp/statelet',
      '--address', '0.0.0.0',
      '--healthz-bind-address', '::1',
      '--node-ip', '10.0.0.5, fd00::5',
      '--pod-cidr', '10.244.1.0/24, fd00:1::/64',
      '--port', '0',
      '--read-only-port', '0',
      '--healthz-port', '65535',
      '--visualizer-port', '8080',
      '--inspect=stately',
      '--logging-format', 'json',
    ]);
    expect(config).toMatchObject({
      syncFrequencyMs: 90_000,
      fileCheckFrequencyMs: 5_000,
      runtimeRequestTimeoutMs: 15_000,
      httpCheckFrequencyMs: 500,
      plegRelistPeriodMs: 2_000,
      podManifestPath: '/etc/kubernetes/manifests',
      manifestUrl: 'https://example.com/pods',
      kubeconfig: '/etc/kubernetes/kubelet.conf',
      rootDir: '/tmp/statelet',
      address: '0.0.0.0',
      healthzBindAddress: '::1',
      nodeIp: '10.0.0.5,fd00::5',
      podCidr: '10.244.1.0/24,fd00:1::/64',
      port: 0,
      readOnlyPort: 0,
      healthzPort: 65535,
      visualizerPort: 8080,
      inspect: 'stately',
      logFormat: 'json',
    });
  });

  it('lets the last occurrence of a plain flag win', () => {
    expect(run(['--max-pods', '5', '--max-pods', '9']).config.maxPods).toBe(9);
  });

  it('accumulates repeated --manifest-url-header flags per header name, in order', () => {
    const { config } = run([
      '--manifest-url', 'http://config.example/pods',
      '--manifest-url-header', 'a:hello,b:again,c:world',
      '--manifest-url-header', 'b:beautiful',
    ]);
    expect(config.manifestUrlHeaders).toEqual({ a: ['hello'], b: ['again', 'beautiful'], c: ['world'] });
  });

  it('keeps everything after the first colon as the header value', () => {
    expect(run(['--manifest-url=http://config.example/pods', '--manifest-url-header=Authorization:Bearer a:b']).config.manifestUrlHeaders).toEqual({
      Authorization: ['Bearer a:b'],
    });
  });

  it('derives the node name from --hostname-override, lowercased and trimmed', () => {
    const { config } = run(['--hostname-override', ' Node-A ']);
    expect(config.nodeName).toBe('node-a');
    expect(config.hostnameOverride).toBe(' Node-A ');
  });

  it('rejects an empty hostname', () => {
    const blank = () => parseCommandLine([], { hostname: () => '  ' });
    expect(blank).toThrow(UsageError);
    expect(blank).toThrow(/empty hostname/);
  });

  it.each([
    ['/run/k3s/containerd.sock', 'unix:///run/k3s/containerd.sock'],
    ['unix:///run/crio/crio.sock', 'unix:///run/crio/crio.sock'],
    ['sim://', 'sim://'],
    ['sim://fast', 'sim://fast'],
  ])('normalises the endpoint %s to %s', (endpoint, normalised) => {
    const { config } = run(['--container-runtime-endpoint', endpoint]);
    expect(config.containerRuntimeEndpoint).toBe(normalised);
    expect(config.imageServiceEndpoint).toBe(normalised);
  });

  it('keeps a separate image service endpoint', () => {
    const { config } = run(['--container-runtime-endpoint=sim://', '--image-service-endpoint=/run/img.sock']);
    expect(config.containerRuntimeEndpoint).toBe('sim://');
    expect(config.imageServiceEndpoint).toBe('unix:///run/img.sock');
  });

  it('returns help and version without building a config', () => {
    const help = parseCommandLine(['--max-pods=3', '--help'], env);
    expect(help.kind).toBe('help');
    expect(parseCommandLine(['-h'], env).kind).toBe('help');
    // --config is not read for --help, so a missing file does not matter.
    expect(parseCommandLine(['--config', path.join(dir, 'absent.yaml'), '--help'], env).kind).toBe('help');
    const version = parseCommandLine(['--version'], env);
    const manifest: unknown = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    expect(manifest).toHaveProperty('version');
    expect(version).toEqual({ kind: 'version', text: `Kubernetes v1.37.0-statelet.${String(Object(manifest).version)}` });
  });

  it('still rejects a bad flag that comes with --help', () => {
    expect(usageError(['--help', '--max-pods=lots'])).toMatch(/--max-pods/);
  });
});

describe('parseCommandLine: errors', () => {
  it.each([
    [['--bogus'], 'failed to parse kubelet flag: unknown flag: --bogus'],
    // A flag of the kubelet that statelet does not implement: refused by name, not taken for a typo.
    [['--cpu-cfs-quota=false'], 'failed to parse kubelet flag: --cpu-cfs-quota is a flag of the kubelet that statelet does not implement; leave it out (docs/kubelet-config.md lists the kubelet\'s flags and fields with what statelet does with each)'],
    [['--contention-profiling'], 'failed to parse kubelet flag: --contention-profiling is a flag of the kubelet that statelet does not implement; leave it out (docs/kubelet-config.md lists the kubelet\'s flags and fields with what statelet does with each)'],
    [['--bogus=1'], 'failed to parse kubelet flag: unknown flag: --bogus'],
    [['-bogus'], 'failed to parse kubelet flag: unknown flag: -bogus'],
    [['---max-pods=1'], 'bad flag syntax: ---max-pods=1'],
    [['pods'], 'unexpected argument "pods": statelet takes only flags'],
    [['--', 'pods'], 'unexpected argument "pods": statelet takes only flags'],
    [['--max-pods'], 'flag needs an argument: --max-pods'],
    [['--pod-manifest-path', '--max-pods', '3'], 'flag needs an argument: --pod-manifest-path'],
    [['-v'], 'flag needs an argument: -v'],
    [['--max-pods', 'abc'], 'invalid value "abc" for flag --max-pods: not an integer'],
    [['--max-pods=1.5'], 'invalid value "1.5" for flag --max-pods: not an integer'],
    [['--max-pods=-1'], 'invalid value "-1" for flag --max-pods: must be between 0 and 65535'],
    // A block of 65536 user namespace IDs each: the kubelet does not start with more pods than blocks (userns_manager.go MakeUserNsManager).
    [['--max-pods=65536'], 'invalid value "65536" for flag --max-pods: must be between 0 and 65535'],
    [['--port', '65536'], 'invalid value "65536" for flag --port: must be between 0 and 65535'],
    [['--healthz-port=-1'], 'invalid value "-1" for flag --healthz-port: must be between 0 and 65535'],
    [['--read-only-port=http'], 'invalid value "http" for flag --read-only-port: not an integer'],
    [['--serialize-image-pulls=yes'], 'invalid value "yes" for flag --serialize-image-pulls: not a boolean (expected true or false)'],
    [['--sync-frequency', '20'], 'invalid value "20" for flag --sync-frequency: missing unit (expected one of ns, us, µs, ms, s, m, h)'],
    [['--file-check-frequency=0s'], 'invalid value "0s" for flag --file-check-frequency: must be greater than 0'],
    [['--pleg-relist-period=-1s'], 'invalid value "-1s" for flag --pleg-relist-period: must not be negative'],
    [['--evented-pleg-relist-period=0s'], 'invalid value "0s" for flag --evented-pleg-relist-period: must be greater than 0'],
    [['--evented-pleg-relist-period=5m'], 'invalid value "5m" for flag --evented-pleg-relist-period: must be between 1ms and 1m0s (the PLEG is unhealthy after 3m0s without a relist)'],
    [['--crash-loop-backoff-initial=0'], 'invalid value "0" for flag --crash-loop-backoff-initial: must be greater than 0'],
    [['--crash-loop-backoff-max=10m'], 'invalid value "10m" for flag --crash-loop-backoff-max: must be between 1s and 5m0s (the kubelet\'s bounds)'],
    [['--crash-loop-backoff-max=500ms'], 'invalid value "500ms" for flag --crash-loop-backoff-max: must be between 1s and 5m0s (the kubelet\'s bounds)'],
    [['--address', 'localhost'], 'invalid value "localhost" for flag --address: not an IP address'],
    [['--node-ip', '10.0.0.1,10.0.0.2'], 'invalid value "10.0.0.1,10.0.0.2" for flag --node-ip: two addresses must be one IPv4 and one IPv6'],
    [['--pod-cidr', '10.244.1.0'], 'invalid value "10.244.1.0" for flag --pod-cidr: "10.244.1.0" is not a CIDR such as 10.244.1.0/24'],
    [['--pod-cidr', '10.244.1.0/33'], 'invalid value "10.244.1.0/33" for flag --pod-cidr: "10.244.1.0/33" is not a CIDR such as 10.244.1.0/24'],
    [['--pod-cidr', '10.1.0.0/16,10.2.0.0/16'], 'invalid value "10.1.0.0/16,10.2.0.0/16" for flag --pod-cidr: at most one IPv4 and one IPv6 CIDR'],
    [['--logging-format=xml'], 'invalid value "xml" for flag --logging-format: expected one of: text, json'],
    [['--inspect', 'chrome'], 'invalid value "chrome" for flag --inspect: expected one of: stately'],
    [['--manifest-url', 'ftp://x/y'], 'invalid value "ftp://x/y" for flag --manifest-url: expected an http:// or https:// URL'],
    [['--manifest-url-header', 'novalue'], 'invalid value "novalue" for flag --manifest-url-header: malformed pair "novalue", expected name:value'],
    [['--help=maybe'], 'invalid value "maybe" for flag --help: not a boolean (expected true or false)'],
  ])('%j fails with %j', (argv, message) => {
    expect(usageError(argv)).toBe(message);
  });

  it.each([
    ['tcp://10.0.0.1:2375', /unsupported scheme "tcp:\/\/"/],
    ['npipe:////./pipe/containerd', /unsupported scheme "npipe:\/\/"/],
    ['containerd.sock', /expected unix:\/\/<socket path>, sim:\/\/, or an absolute socket path/],
    ['unix://', /no socket path/],
    ['', /must not be empty/],
  ])('rejects the runtime endpoint %j, naming the flag', (endpoint, reason) => {
    const message = usageError([`--container-runtime-endpoint=${endpoint}`]);
    expect(message).toMatch(/^invalid value ".*" for flag --container-runtime-endpoint: /);
    expect(message).toMatch(reason);
  });

  it('names --image-service-endpoint when that endpoint is bad', () => {
    expect(usageError(['--image-service-endpoint', 'http://x'])).toMatch(
      /^invalid value "http:\/\/x" for flag --image-service-endpoint: unsupported scheme "http:\/\/"/,
    );
  });
});

describe('help text', () => {
  const text = helpText();

  it('lists every flag in the table, with its config-file field', () => {
    for (const spec of OPTIONS) {
      if (spec.flag !== undefined) expect(text).toContain(`--${spec.flag}`);
      if (spec.configField !== undefined) expect(text).toContain(spec.configField);
    }
    expect(text).toContain('--help');
    expect(text).toContain('--version');
  });

  it('puts each flag on one line with its default in Go form', () => {
    const line = (flag: string) => text.split('\n').find((candidate) => candidate.includes(`--${flag} `));
    expect(line('sync-frequency')).toMatch(/\(default 1m0s; config: syncFrequency\)$/);
    expect(line('max-pods')).toMatch(/\(default 110; config: maxPods\)$/);
    expect(line('root-dir')).toMatch(/\(default "\/var\/lib\/kubelet"\)$/);
    expect(line('address')).toMatch(/default 0\.0\.0\.0/);
    expect(line('read-only-address')).toMatch(/default 127\.0\.0\.1/);
  });

  it('groups flags under headings', () => {
    expect(text.indexOf('Static pods:')).toBeGreaterThan(-1);
    expect(text.indexOf('Static pods:')).toBeLessThan(text.indexOf('--pod-manifest-path'));
    expect(text.indexOf('Logging:')).toBeLessThan(text.indexOf('--logging-format'));
    expect(text.indexOf('Logging:')).toBeGreaterThan(text.indexOf('--pod-manifest-path'));
  });
});

describe('PLEG and crash-loop backoff settings', () => {
  it('reads the evented PLEG flags', () => {
    expect(run(['--evented-pleg-relist-period', '30s']).config).toMatchObject({
      eventedPleg: true,
      eventedPlegRelistPeriodMs: 30_000,
    });
    expect(run(['--evented-pleg=false']).config.eventedPleg).toBe(false);
    expect(run(['--evented-pleg']).config.eventedPleg).toBe(true);
  });

  it('reads the crash-loop backoff flags', () => {
    const { config } = run(['--crash-loop-backoff-initial', '1s', '--crash-loop-backoff-max=1m']);
    expect(config).toMatchObject({ crashLoopBackOffInitialMs: 1_000, crashLoopBackOffMaxMs: 60_000 });
    expect(crashLoopBackOffPolicy(config)).toEqual({ initialMs: 1_000, maxMs: 60_000 });
  });

  it('lowers the initial crash-loop delay to a smaller maximum, as the kubelet does', () => {
    expect(crashLoopBackOffPolicy(run(['--crash-loop-backoff-max=5s']).config)).toEqual({ initialMs: 5_000, maxMs: 5_000 });
  });

  it("reads the kubelet's crashLoopBackOff.maxContainerRestartPeriod, under the flag", () => {
    const file = writeConfig(`${HEADER}crashLoopBackOff:\n  maxContainerRestartPeriod: 1m\n`);
    expect(loadKubeletConfig(file, undefined).settings).toEqual({ crashLoopBackOffMaxMs: 60_000 });
    expect(run(['--config', file]).config.crashLoopBackOffMaxMs).toBe(60_000);
    expect(run(['--config', file, '--crash-loop-backoff-max', '2m']).config.crashLoopBackOffMaxMs).toBe(120_000);
    expect(parseKubeletConfig(`${HEADER}crashLoopBackOff: {}\n`, 'config.yaml').settings).toEqual({ crashLoopBackOffMaxMs: 300_000 });
  });

  it.each([
    [`${HEADER}crashLoopBackOff: 1m\n`, 'config.yaml: crashLoopBackOff: expected an object such as { maxContainerRestartPeriod: "5m" }'],
    [`${HEADER}crashLoopBackOff: {maxContainerRestartPeriod: 60}\n`, 'config.yaml: crashLoopBackOff: maxContainerRestartPeriod: expected a duration string such as "20s"'],
    [`${HEADER}crashLoopBackOff: {maxContainerRestartPeriod: 6m}\n`, "config.yaml: crashLoopBackOff: maxContainerRestartPeriod: must be between 1s and 5m0s (the kubelet's bounds)"],
  ])('rejects %j', (text, message) => {
    expect(() => parseKubeletConfig(text, 'config.yaml')).toThrow(message);
  });

  it('shows the new flags in help with their defaults', () => {
    const line = (flag: string) => helpText().split('\n').find((candidate) => candidate.includes(`--${flag} `));
    expect(line('evented-pleg-relist-period')).toMatch(/\(default 10s\)$/);
    expect(line('crash-loop-backoff-initial')).toMatch(/\(default 10s\)$/);
    expect(line('crash-loop-backoff-max')).toMatch(/\(default 5m0s; config: crashLoopBackOff\)$/);
    expect(line('evented-pleg')).toMatch(/\(default true\)$/);
  });
});

describe('--config precedence', () => {
  it('layers defaults < config file < flags', () => {
    const file = writeConfig(
      HEADER +
        [
          'maxPods: 50',
          'syncFrequency: 30s',
          'address: 0.0.0.0',
          'containerRuntimeEndpoint: unix:///run/crio/crio.sock',
          'staticPodURLHeader:',
          '  a: [from-file]',
        ].join('\n'),
    );
    const { config } = run([
      '--config', file,
      '--max-pods', '20',
      '--manifest-url', 'http://config.example/pods',
      '--manifest-url-header', 'b:from-flag',
    ]);
    expect(config.maxPods).toBe(20); // flag over file
    expect(config.syncFrequencyMs).toBe(30_000); // file over default
    expect(config.address).toBe('0.0.0.0'); // file over default
    expect(config.containerRuntimeEndpoint).toBe('unix:///run/crio/crio.sock');
    expect(config.imageServiceEndpoint).toBe('unix:///run/crio/crio.sock');
    expect(config.healthzPort).toBe(10248); // default, set nowhere else
    // A header flag replaces the file's headers instead of adding to them, as in the kubelet.
    expect(config.manifestUrlHeaders).toEqual({ b: ['from-flag'] });
    expect(config.configFile).toBe(file);
  });

  it('lets an empty flag clear a path set in the file', () => {
    const file = writeConfig(`${HEADER}staticPodPath: /etc/kubernetes/manifests\n`);
    expect(run(['--config', file]).config.podManifestPath).toBe('/etc/kubernetes/manifests');
    expect(run(['--config', file, '--pod-manifest-path=']).config.podManifestPath).toBeUndefined();
  });

  it('switches to the config-file default for readOnlyPort, as the kubelet does', () => {
    const file = writeConfig(HEADER);
    expect(run(['--config', file]).config.readOnlyPort).toBe(0);
    expect(run(['--config', file, '--read-only-port', '10255']).config.readOnlyPort).toBe(10255);
    expect(run([]).config.readOnlyPort).toBe(10255);
  });

  it('takes a field statelet does not implement at its default, and refuses another value', () => {
    const file = writeConfig(`${HEADER}maxPods: 3\nclusterDNS: [10.96.0.10]\nclusterDomain: cluster.local\ncpuManagerReconcilePeriod: 10s\nevictionHard:\n  memory.available: 100Mi\n`);
    const { config, warnings } = run(['--config', file]);
    expect(config).toMatchObject({ maxPods: 3, clusterDns: ['10.96.0.10'], clusterDomain: 'cluster.local', evictionHard: { 'memory.available': '100Mi' } });
    expect(warnings).toEqual([]);
    expect(() => run(['--config', writeConfig(`${HEADER}cpuManagerReconcilePeriod: 5s\n`)])).toThrow(/cpuManagerReconcilePeriod: "5s" is refused: statelet has the CPU and Topology Managers' "none" policy only/);
    expect(run(['--cluster-dns', '10.96.0.10,fd00::a', '--resolv-conf=']).config).toMatchObject({ clusterDns: ['10.96.0.10', 'fd00::a'], resolvConf: '' });
    expect(usageError(['--cluster-dns', 'dns.example'])).toMatch(/^invalid value "dns.example" for flag --cluster-dns: not an IP address/);
  });

  it('rejects maxParallelImagePulls above 1 while pulls are serialized, from either source', () => {
    const file = writeConfig(`${HEADER}maxParallelImagePulls: 3\n`);
    expect(usageError(['--config', file])).toMatch(/maxParallelImagePulls \(3\) cannot be larger than 1/);
    expect(run(['--config', file, '--serialize-image-pulls=false']).config.maxParallelImagePulls).toBe(3);
  });

  it('reads imagePullCredentialsVerificationPolicy and its allowlist, refusing what the kubelet refuses', () => {
    expect(run([]).config).toMatchObject({ imagePullCredentialsVerificationPolicy: 'NeverVerifyPreloadedImages', preloadedImagesVerificationAllowlist: [] });
    const allowlisted = writeConfig(`${HEADER}imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [registry.example.com/team/*]\n`);
    expect(run(['--config', allowlisted]).config).toMatchObject({ imagePullCredentialsVerificationPolicy: 'NeverVerifyAllowlistedImages', preloadedImagesVerificationAllowlist: ['registry.example.com/team/*'] });
    const unknown = writeConfig(`${HEADER}imagePullCredentialsVerificationPolicy: Sometimes\n`);
    expect(() => run(['--config', unknown])).toThrow(/imagePullCredentialsVerificationPolicy: expected one of: NeverVerify, NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages, AlwaysVerify/);
    const tagged = writeConfig(`${HEADER}imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [registry.example.com/app:1]\n`);
    expect(() => run(['--config', tagged])).toThrow(/preloadedImagesVerificationAllowlist: neither tag nor digest is accepted in an image reference: registry.example.com\/app:1/);
    const unused = writeConfig(`${HEADER}preloadedImagesVerificationAllowlist: [registry.example.com/*]\n`);
    expect(usageError(['--config', unused])).toMatch(/can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVerificationPolicy` is not "NeverVerifyAllowlistedImages"/);
  });

  it('takes the credential provider plugin flags together, never one alone', () => {
    const both = ['--image-credential-provider-config', '/etc/kubernetes/credential-providers.yaml', '--image-credential-provider-bin-dir=/usr/libexec/credential-providers'];
    expect(run(both).config).toMatchObject({ imageCredentialProviderConfig: '/etc/kubernetes/credential-providers.yaml', imageCredentialProviderBinDir: '/usr/libexec/credential-providers' });
    const neither = run([]).config;
    expect(neither.imageCredentialProviderConfig).toBeUndefined();
    expect(neither.imageCredentialProviderBinDir).toBeUndefined();
    const together = '--image-credential-provider-config and --image-credential-provider-bin-dir go together: give both or neither';
    expect(usageError(both.slice(0, 2))).toBe(together);
    expect(usageError(both.slice(2))).toBe(together);
    expect(usageError([...both.slice(2), '--image-credential-provider-config='])).toBe(together);
  });

  it('fails for a missing config file, naming it', () => {
    const missing = path.join(dir, 'nope.yaml');
    expect(() => run(['--config', missing])).toThrow(ConfigFileError);
    expect(() => run(['--config', missing])).toThrow(`${missing}: cannot read kubelet config file (ENOENT)`);
  });
});

describe('KubeletConfiguration file', () => {
  it('maps every supported field', () => {
    const file = writeConfig(
      HEADER +
        [
          'staticPodPath: /etc/kubernetes/manifests',
          'staticPodURL: http://10.0.0.1/pods',
          'staticPodURLHeader:',
          '  X-Token: [one, two]',
          'syncFrequency: 2m',
          'fileCheckFrequency: 10s',
          'httpCheckFrequency: 1m30s',
          'address: 10.0.0.9',
          'port: 11250',
          'readOnlyPort: 11255',
          'healthzPort: 11248',
          'healthzBindAddress: 0.0.0.0',
          'maxPods: 42',
          'serializeImagePulls: false',
          'maxParallelImagePulls: 4',
          'containerRuntimeEndpoint: /run/containerd/containerd.sock',
          'imageServiceEndpoint: sim://',
        ].join('\n'),
    );
    expect(loadKubeletConfig(file, undefined)).toMatchObject({
      settings: {
        podManifestPath: '/etc/kubernetes/manifests',
        manifestUrl: 'http://10.0.0.1/pods',
        manifestUrlHeaders: { 'X-Token': ['one', 'two'] },
        syncFrequencyMs: 120_000,
        fileCheckFrequencyMs: 10_000,
        httpCheckFrequencyMs: 90_000,
        address: '10.0.0.9',
        port: 11250,
        readOnlyPort: 11255,
        healthzPort: 11248,
        healthzBindAddress: '0.0.0.0',
        maxPods: 42,
        serializeImagePulls: false,
        maxParallelImagePulls: 4,
        containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
        imageServiceEndpoint: 'sim://',
      },
      warnings: [],
    });
  });

  it('reads JSON as well as YAML', () => {
    const file = writeConfig(
      JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', maxPods: 9 }),
      'config.json',
    );
    expect(loadKubeletConfig(file, undefined).settings).toEqual({ maxPods: 9 });
  });

  it('resolves a relative staticPodPath against the file’s directory', () => {
    const file = writeConfig(`${HEADER}staticPodPath: manifests\n`);
    expect(loadKubeletConfig(file, undefined).settings.podManifestPath).toBe(path.join(dir, 'manifests'));
  });

  it('treats null as not set', () => {
    expect(parseKubeletConfig(`${HEADER}maxPods: null\n`, 'config.yaml').settings).toEqual({});
  });

  it.each([
    ['apiVersion: v1\nkind: KubeletConfiguration\n', 'config.yaml: apiVersion is "v1", expected "kubelet.config.k8s.io/v1beta1"'],
    ['kind: KubeletConfiguration\n', 'config.yaml: apiVersion is null, expected "kubelet.config.k8s.io/v1beta1"'],
    ['apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n', 'config.yaml: kind is "Pod", expected "KubeletConfiguration"'],
    ['- a\n- b\n', 'config.yaml: expected a KubeletConfiguration object'],
    ['   \n', 'config.yaml: kubelet config file is empty'],
    [`${HEADER}maxPods: "110"\n`, 'config.yaml: maxPods: expected an integer'],
    [`${HEADER}maxPods: 1.5\n`, 'config.yaml: maxPods: expected an integer'],
    [`${HEADER}maxPods: -1\n`, 'config.yaml: maxPods: must be between 0 and 65535'],
    [`${HEADER}port: 70000\n`, 'config.yaml: port: must be between 0 and 65535'],
    [`${HEADER}serializeImagePulls: "false"\n`, 'config.yaml: serializeImagePulls: expected a boolean'],
    [`${HEADER}syncFrequency: 60\n`, 'config.yaml: syncFrequency: expected a duration string such as "20s"'],
    [`${HEADER}syncFrequency: 60x\n`, 'config.yaml: syncFrequency: unknown unit "x" (expected one of ns, us, µs, ms, s, m, h)'],
    [`${HEADER}address: [1, 2]\n`, 'config.yaml: address: expected a string'],
    [`${HEADER}containerRuntimeEndpoint: tcp://x:1\n`, 'config.yaml: containerRuntimeEndpoint: unsupported scheme "tcp://" (expected unix://, sim:// or an absolute socket path)'],
    [`${HEADER}staticPodURLHeader: {a: b}\n`, 'config.yaml: staticPodURLHeader: header "a": expected a list of strings'],
    [`${HEADER}staticPodURLHeader: [a]\n`, 'config.yaml: staticPodURLHeader: expected a map of header name to a list of values'],
    [`${HEADER}maxParallelImagePulls: 0\n`, 'config.yaml: maxParallelImagePulls: must be at least 1'],
    [`${HEADER}userNamespaces: {idsPerPod: 131072}\n`, 'config.yaml: userNamespaces.idsPerPod: 131072 is refused: statelet gives each pod of its own user namespace 65536 IDs, the default'],
    [`${HEADER}userNamespaces: 65536\n`, 'config.yaml: userNamespaces: expected an object'],
  ])('rejects %j', (text, message) => {
    expect(() => parseKubeletConfig(text, 'config.yaml')).toThrow(ConfigFileError);
    expect(() => parseKubeletConfig(text, 'config.yaml')).toThrow(message);
  });

  it('takes userNamespaces with the default idsPerPod, which is what statelet gives each pod', () => {
    expect(parseKubeletConfig(`${HEADER}userNamespaces: {idsPerPod: 65536}\n`, 'k.yaml')).toEqual({ settings: {}, warnings: [] });
  });

  it('names the file for YAML syntax errors', () => {
    expect(() => parseKubeletConfig(`${HEADER}maxPods: [1\n`, 'config.yaml')).toThrow(/^config\.yaml: not valid YAML or JSON/);
  });

  it('returns a warning per unknown field and still maps the known ones', () => {
    const result = parseKubeletConfig(`${HEADER}maxPods: 4\nnotAField: {Foo: true}\nreservedMemory: []\nuserNamespaces: {idsPerPods: 65536}\n`, 'k.yaml');
    expect(result.settings).toEqual({ maxPods: 4 });
    expect(result.warnings).toEqual([
      'k.yaml: unknown field "notAField" (not in KubeletConfiguration v1beta1) ignored, as the kubelet\'s lenient decoding does',
      'k.yaml: unknown field "userNamespaces.idsPerPods" (not in KubeletConfiguration v1beta1) ignored, as the kubelet\'s lenient decoding does',
    ]);
  });

  it.each([
    ['cpuManagerPolicy', 'none', 'static', /^k\.yaml: cpuManagerPolicy: statelet does not implement the "static" policy \(exclusive CPUs/, 'unknown policy: "dynamic"'],
    ['memoryManagerPolicy', 'None', 'Static', /^k\.yaml: memoryManagerPolicy: statelet does not implement the "Static" policy \(NUMA-pinned memory/, 'unknown policy: "dynamic"'],
    ['topologyManagerPolicy', 'none', 'single-numa-node', /^k\.yaml: topologyManagerPolicy: statelet does not implement the "single-numa-node" policy/, '"dynamic" must be one of: ["none" "best-effort" "restricted" "single-numa-node"]'],
  ])('refuses a %s other than its default at start, naming the field', (field, implemented, refused, refusal, unknown) => {
    expect(parseKubeletConfig(`${HEADER}${field}: ${implemented}\n`, 'k.yaml')).toEqual({ settings: { [field]: implemented }, warnings: [] });
    expect(() => parseKubeletConfig(`${HEADER}${field}: ${refused}\n`, 'k.yaml')).toThrow(refusal);
    expect(() => parseKubeletConfig(`${HEADER}${field}: dynamic\n`, 'k.yaml')).toThrow(`k.yaml: ${field}: ${unknown}`);
  });

  it('refuses the manager policy flags other than their defaults, naming the flag', () => {
    expect(run(['--cpu-manager-policy=none', '--memory-manager-policy=None', '--topology-manager-policy=none']).config).toMatchObject({
      cpuManagerPolicy: 'none',
      memoryManagerPolicy: 'None',
      topologyManagerPolicy: 'none',
    });
    expect(usageError(['--cpu-manager-policy=static'])).toMatch(/^invalid value "static" for flag --cpu-manager-policy: statelet does not implement the "static" policy/);
    expect(usageError(['--memory-manager-policy', 'Static'])).toMatch(/^invalid value "Static" for flag --memory-manager-policy: statelet does not implement/);
    expect(usageError(['--topology-manager-policy=best-effort'])).toMatch(/^invalid value "best-effort" for flag --topology-manager-policy: statelet does not implement/);
    // A flag still overrides the file, as every other setting: the file's refusal is its own.
    const file = writeConfig(`${HEADER}topologyManagerPolicy: none\n`);
    expect(usageError(['--config', file, '--topology-manager-policy=restricted'])).toMatch(/--topology-manager-policy: statelet does not implement the "restricted" policy/);
  });

  it('refuses the systemd cgroup driver, and takes cgroupfs', () => {
    expect(() => parseKubeletConfig(`${HEADER}cgroupDriver: systemd\n`, 'k.yaml')).toThrow(/no systemd cgroup driver: it makes its cgroups through cgroupfs only/);
    expect(parseKubeletConfig(`${HEADER}cgroupDriver: cgroupfs\ncgroupsPerQOS: false\npodPidsLimit: 100\nenforceNodeAllocatable: [pods]\n`, 'k.yaml').settings).toEqual({
      cgroupDriver: 'cgroupfs',
      cgroupsPerQos: false,
      podMaxPids: 100,
      enforceNodeAllocatable: ['pods'],
    });
    expect(() => parseKubeletConfig(`${HEADER}enforceNodeAllocatable: [pods, system-reserved]\n`, 'k.yaml')).toThrow(/--system-reserved-cgroup/);
  });

  it('reads --fail-swap-on and failSwapOn, the flag over the file', () => {
    expect(run(['--fail-swap-on=false']).config.failSwapOn).toBe(false);
    expect(run(['--fail-swap-on']).config.failSwapOn).toBe(true);
    const file = writeConfig(`${HEADER}failSwapOn: false\n`);
    expect(run(['--config', file]).config.failSwapOn).toBe(false);
    expect(run(['--config', file, '--fail-swap-on=true']).config.failSwapOn).toBe(true);
    expect(() => parseKubeletConfig(`${HEADER}failSwapOn: "no"\n`, 'k.yaml')).toThrow('k.yaml: failSwapOn: expected a boolean');
  });

  it.each<[string, '' | 'NoSwap']>([
    ['memorySwap: {swapBehavior: NoSwap}', 'NoSwap'],
    ['memorySwap: {swapBehavior: ""}', ''],
    ['memorySwap: {}', ''],
  ])('takes %s (NoSwap, the only swap behaviour statelet has)', (line, behavior) => {
    expect(parseKubeletConfig(`${HEADER}${line}\n`, 'k.yaml')).toEqual({ settings: { memorySwapBehavior: behavior }, warnings: [] });
  });

  it.each([
    ['memorySwap: {swapBehavior: LimitedSwap}', 'k.yaml: memorySwap: swapBehavior: LimitedSwap is not implemented by statelet, whose containers never swap: use NoSwap (or leave it empty)'],
    ['memorySwap: {swapBehavior: UnlimitedSwap}', 'k.yaml: memorySwap: swapBehavior: "UnlimitedSwap" must be one of: "", "LimitedSwap" or "NoSwap" (statelet implements NoSwap only)'],
    ['memorySwap: NoSwap', 'k.yaml: memorySwap: expected an object such as { swapBehavior: NoSwap }'],
    ['memorySwap: {swapBehavior: 1}', 'k.yaml: memorySwap: swapBehavior: expected a string'],
  ])('refuses %s rather than run without it', (line, message) => {
    expect(() => parseKubeletConfig(`${HEADER}${line}\n`, 'k.yaml')).toThrow(message);
  });

  it('shows the authentication, authorization and logging settings in /configz in their blocks', () => {
    expect(configz(run(['--client-ca-file=/ca.crt', '--anonymous-auth=false', '--authorization-mode=AlwaysAllow', '-v', '3']).config)).toMatchObject({
      authentication: { x509: { clientCAFile: '/ca.crt' }, anonymous: { enabled: false } },
      authorization: { mode: 'AlwaysAllow' },
      logging: { format: 'text', verbosity: 3 },
    });
  });

  it('shows failSwapOn and memorySwap in /configz as a kubelet config file writes them', () => {
    expect(configz(run([]).config)).toMatchObject({ failSwapOn: true, memorySwap: {} });
    const file = writeConfig(`${HEADER}failSwapOn: false\nmemorySwap: {swapBehavior: NoSwap}\n`);
    expect(configz(run(['--config', file]).config)).toMatchObject({ failSwapOn: false, memorySwap: { swapBehavior: 'NoSwap' } });
  });

  it('has config-file defaults that differ from flag defaults only in readOnlyPort', () => {
    const flagDefaults: Record<string, unknown> = { ...agentDefaults('flags') };
    const fileDefaults: Record<string, unknown> = { ...agentDefaults('config-file') };
    const differing = Object.keys(flagDefaults).filter((key) => JSON.stringify(flagDefaults[key]) !== JSON.stringify(fileDefaults[key]));
    expect(differing).toEqual(['readOnlyPort']);
  });
});

describe('a setting given where it would be ignored (never accept a setting and ignore it)', () => {
  const NO_EFFECT = 'and statelet does not take a setting it would ignore';
  // Each flag alone is refused, naming what it needs; with that, it is taken.
  const refused: { argv: string[]; message: string; takenWith: string[] }[] = [
    ...['--register-node=false', '--register-with-taints=a=b:NoSchedule', '--node-status-update-frequency=5s', '--node-status-report-frequency=1m', '--node-lease-duration-seconds=20', '--kube-api-qps=5', '--kube-api-burst=5', '--event-qps=5', '--event-burst=5'].map((flag) => ({
      argv: [flag],
      message: `${flag.slice(0, flag.indexOf('='))}: has no effect without --kubeconfig, ${NO_EFFECT}`,
      takenWith: ['--kubeconfig=/etc/kubelet.conf'],
    })),
    { argv: ['--file-check-frequency=5s'], message: `--file-check-frequency: has no effect without --pod-manifest-path (staticPodPath), ${NO_EFFECT}`, takenWith: ['--pod-manifest-path=/m'] },
    { argv: ['--http-check-frequency=5s'], message: `--http-check-frequency: has no effect without --manifest-url (staticPodURL), ${NO_EFFECT}`, takenWith: ['--manifest-url=http://x/pods'] },
    { argv: ['--manifest-url-header=a:b'], message: `--manifest-url-header: has no effect without --manifest-url (staticPodURL), ${NO_EFFECT}`, takenWith: ['--manifest-url=http://x/pods'] },
    { argv: ['--evented-pleg=false', '--evented-pleg-relist-period=30s'], message: `--evented-pleg-relist-period: has no effect without --evented-pleg, ${NO_EFFECT}`, takenWith: ['--evented-pleg'] },
    {
      argv: ['--cgroups-per-qos=false', '--pod-max-pids=100', '--enforce-node-allocatable=none'],
      message: `--pod-max-pids: has no effect without --cgroups-per-qos (cgroupsPerQOS), which makes the cgroups it sets, ${NO_EFFECT}`,
      takenWith: ['--cgroups-per-qos'],
    },
    {
      argv: ['--cgroups-per-qos=false', '--cgroup-root=/x', '--enforce-node-allocatable=none'],
      message: `--cgroup-root: has no effect without --cgroups-per-qos (cgroupsPerQOS), which makes the cgroups it sets, ${NO_EFFECT}`,
      takenWith: ['--cgroups-per-qos'],
    },
    {
      argv: ['--cgroups-per-qos=false', '--enforce-node-allocatable=pods'],
      message: '--enforce-node-allocatable: cgroupsPerQOS (--cgroups-per-qos) must be set to true when "pods" contained in enforceNodeAllocatable (--enforce-node-allocatable); give --enforce-node-allocatable=none',
      takenWith: ['--cgroups-per-qos'],
    },
    { argv: ['--inspect-url=ws://localhost:9000'], message: `--inspect-url: has no effect without --inspect=stately, ${NO_EFFECT}`, takenWith: ['--inspect=stately'] },
    {
      argv: ['--authorization-mode=Webhook'],
      message: '--authorization-mode: Webhook needs --kubeconfig: no client provided, cannot use webhook authorization',
      takenWith: ['--kubeconfig=/etc/kubelet.conf'],
    },
    {
      argv: ['--authentication-token-webhook'],
      message: '--authentication-token-webhook: needs --kubeconfig: no client provided, cannot use webhook authentication',
      takenWith: ['--kubeconfig=/etc/kubelet.conf'],
    },
  ];
  it.each(refused)('$argv', ({ argv, message, takenWith }) => {
    expect(usageError(argv)).toBe(message);
    expect(run([...argv, ...takenWith]).warnings.filter((warning) => !warning.startsWith('Flag --'))).toEqual([]);
  });

  it('takes what does apply without the rest: AlwaysAllow, no token webhook, a pod cgroup default left alone', () => {
    expect(run(['--authorization-mode=AlwaysAllow', '--authentication-token-webhook=false']).config).toMatchObject({ authorizationMode: 'AlwaysAllow', authenticationTokenWebhook: false });
    // The default enforcement ("pods") is no one's request: --cgroups-per-qos=false alone is taken.
    expect(run(['--cgroups-per-qos=false']).config).toMatchObject({ cgroupsPerQos: false, enforceNodeAllocatable: ['pods'] });
  });

  it('warns about such a field of a config file (the file may be shared with kubelets), as about an unknown one', () => {
    const file = writeConfig(`${HEADER}registerNode: true\nhttpCheckFrequency: 20s\nfileCheckFrequency: 20s\nstaticPodPath: /m\nunknownField: 1\n`);
    expect(run(['--config', file]).warnings).toEqual([
      `${file}: unknown field "unknownField" (not in KubeletConfiguration v1beta1) ignored, as the kubelet's lenient decoding does`,
      `${file}: ignoring field "registerNode": has no effect without --kubeconfig, ${NO_EFFECT}`,
      `${file}: ignoring field "httpCheckFrequency": has no effect without --manifest-url (staticPodURL), ${NO_EFFECT}`,
    ]);
  });
});
