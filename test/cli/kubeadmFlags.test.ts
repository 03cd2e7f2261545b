/**
 * kubeadm's command line for the kubelet (10-kubeadm.conf + kubeadm-flags.env, cmd/kubeadm/app/phases/kubelet/flags.go)
 * through the CLI parse function: it parses, deprecated config-backed flags warn in pflag's words,
 * removed flags fail as the kubelet fails them, --version prints what kubeadm's preflight reads.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { kubeletVersion, parseCommandLine } from '../../src/cli/flags.ts';
import { KUBELET_FLAGS } from '../../src/cli/kubeletConfigApi.ts';
import { OPTIONS } from '../../src/cli/options.ts';
import { commandLine } from '../support/commandLine.ts';

const env = { hostname: () => 'host-a' };
const cli = commandLine('host-a');
const usage = cli.usageError;

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/kubeadm');


/** systemd's expansion of the drop-in's ExecStart: its Environment= lines and the env file, split on spaces. */
function kubeadmCommandLine(configPath: string): string[] {
  const unit = fs.readFileSync(path.join(FIXTURES, '10-kubeadm.conf'), 'utf8');
  const vars = new Map<string, string>();
  for (const match of unit.matchAll(/^Environment="(\w+)=(.*)"$/gm)) vars.set(match[1]!, match[2]!);
  for (const match of fs.readFileSync(path.join(FIXTURES, 'kubeadm-flags.env'), 'utf8').matchAll(/^(\w+)="(.*)"$/gm)) vars.set(match[1]!, match[2]!);
  const execStart = [...unit.matchAll(/^ExecStart=(.+)$/gm)].at(-1)![1]!;
  return execStart
    .replace(/\$(\w+)/g, (_all, name: string) => vars.get(name) ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .slice(1)
    .map((arg) => arg.replace('/var/lib/kubelet/config.yaml', configPath));
}

describe("kubeadm's kubelet command line", () => {
  const argv = kubeadmCommandLine(path.join(FIXTURES, 'config.yaml'));

  it('is what the unit and the env file expand to', () => {
    expect(argv).toEqual([
      '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',
      '--kubeconfig=/etc/kubernetes/kubelet.conf',
      `--config=${path.join(FIXTURES, 'config.yaml')}`,
      '--hostname-override=worker-1',
      '--node-ip=10.0.0.21',
      '--register-with-taints=node-role.kubernetes.io/worker=:NoSchedule',
    ]);
  });

  it('parses every flag, TLS bootstrap and rotation included', () => {
    const result = parseCommandLine(argv, env);
    if (result.kind !== 'run') throw new Error(result.kind);
    expect(result.config).toMatchObject({ bootstrapKubeconfig: '/etc/kubernetes/bootstrap-kubelet.conf', rotateCertificates: true });
  });

  it('runs with the node name, address and taint kubeadm gives', () => {
    const result = parseCommandLine([...argv.filter((arg) => !arg.startsWith('--bootstrap-kubeconfig')), '--rotate-certificates=false'], env);
    if (result.kind !== 'run') throw new Error(result.kind);
    expect(result.config).toMatchObject({
      nodeName: 'worker-1',
      nodeIp: '10.0.0.21',
      registerWithTaints: [{ key: 'node-role.kubernetes.io/worker', effect: 'NoSchedule' }],
      kubeconfig: '/etc/kubernetes/kubelet.conf',
      clientCaFile: '/etc/kubernetes/pki/ca.crt',
    });
    // --register-with-taints and --rotate-certificates are config-backed: pflag warns, as for the kubelet.
    expect(result.warnings).toEqual([
      'Flag --register-with-taints has been deprecated, This parameter should be set via the config file specified by the Kubelet\'s --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.',
      'Flag --rotate-certificates has been deprecated, This parameter should be set via the config file specified by the Kubelet\'s --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.',
    ]);
  });
});

describe('flags the kubelet removed', () => {
  it.each(['--pod-infra-container-image=registry.k8s.io/pause:3.10', '--container-runtime=remote', '--container-runtime', '--network-plugin=cni'])('%s fails as an unknown flag', (flag) => {
    expect(usage([flag])).toBe(`failed to parse kubelet flag: unknown flag: ${flag.split('=')[0]}`);
    expect(KUBELET_FLAGS[flag.slice(2).split('=')[0]!]).toBeUndefined();
  });
});

describe('flags and the kubelet', () => {
  it('warns for each flag the kubelet deprecates, once per use, and not for the others', () => {
    const result = parseCommandLine(['--max-pods=5', '--max-pods=6', '--root-dir=/tmp/x', '--minimum-container-ttl-duration=1m'], env);
    if (result.kind !== 'run') throw new Error(result.kind);
    expect(result.warnings).toEqual([
      expect.stringMatching(/^Flag --max-pods has been deprecated, This parameter should be set via the config file/),
      expect.stringMatching(/^Flag --max-pods has been deprecated/),
      'Flag --minimum-container-ttl-duration has been deprecated, Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.',
    ]);
  });

  it("uses the kubelet's name for each of its flags statelet has, and a config field the kubelet has", () => {
    // statelet's own flags (visualizer, PLEG, …) are not the kubelet's; every other flag must be spelled as the kubelet spells it.
    const own = new Set(['read-only-address', 'pod-logs-dir', 'pleg-relist-period', 'evented-pleg', 'evented-pleg-relist-period', 'crash-loop-backoff-initial', 'crash-loop-backoff-max', 'container-gc-period', 'nodes', 'visualizer-port', 'inspect', 'inspect-url', 'node-status-report-frequency', 'node-lease-duration-seconds', 'container-log-monitor-interval']);
    const unknown = OPTIONS.flatMap((spec) => (spec.flag && !own.has(spec.flag) && KUBELET_FLAGS[spec.flag] === undefined ? [spec.flag] : []));
    expect(unknown).toEqual([]);
  });
});

describe('--version', () => {
  const printed = (argv: string[]) => {
    const result = parseCommandLine(argv, env);
    if (result.kind !== 'version') throw new Error(result.kind);
    return result.text;
  };

  it("prints what kubeadm's preflight parses (preflight/utils.go GetKubeletVersion)", () => {
    const text = printed(['--version']);
    expect(text).toBe(`Kubernetes ${kubeletVersion()}`);
    expect(text).toMatch(/^\s*Kubernetes v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)[-0-9a-zA-Z_.+]*\s*$/);
    expect(printed(['--version=true'])).toBe(text);
  });

  it("prints the parts with =raw, statelet's own version among them", () => {
    const manifest = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(printed(['--version=raw'])).toMatch(new RegExp(`^version\\.Info\\{Major:"1", Minor:"37", GitVersion:"v1\\.37\\.0-statelet\\.${manifest.version.replaceAll('.', '\\.')}", StateletVersion:"${manifest.version.replaceAll('.', '\\.')}"`));
  });

  it('runs normally with --version=false and refuses a version to report instead', () => {
    expect(parseCommandLine(['--version=false'], env).kind).toBe('run');
    expect(usage(['--version=v1.37.9'])).toMatch(/^--version=v1.37.9 is refused: statelet reports the version of the release it follows/);
    expect(usage(['--version=maybe'])).toMatch(/invalid value "maybe" for flag --version/);
  });
});
