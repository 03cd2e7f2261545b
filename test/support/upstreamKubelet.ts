/**
 * The upstream kubelet (built from the test control plane's module graph by
 * `scripts/controlplane/build.mjs --conformance=kubelet`) as the node of a test cluster, on the
 * private containerd: the yardstick statelet is compared with (`npm run conformance --
 * --agent=kubelet`, the benchmark). Configured as statelet is in the same runs: cgroupfs (these
 * machines have no systemd), its QoS and pod cgroups, cgroup v1 allowed, client certificates from the API server's kubelet-client CA, every caller
 * with one allowed, no read-only port, swap tolerated.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface UpstreamKubeletOptions {
  /** The kubelet binary. */
  binary: string;
  /** CRI endpoint of the containerd to run on (`unix:///…/containerd.sock`). */
  runtimeEndpoint: string;
  /** The node's identity (a kubeconfig with the node's client certificate). */
  kubeconfig: string;
  nodeName: string;
  /** The node's address: advertised in its status and served on. */
  nodeIp: string;
  /** CA of the API server's client certificate for logs, exec and port-forward. */
  clientCaFile: string;
  /** Its root directory; the configuration file and serving certificate go there too. */
  rootDir: string;
  /** Every line the kubelet writes (stderr and stdout). */
  onOutput?: (chunk: string) => void;
}

export interface UpstreamKubelet {
  child: ChildProcess;
  stop(): Promise<void>;
}

/** The KubeletConfiguration the runs give the kubelet (a YAML document, JSON being YAML). */
export function kubeletConfiguration(options: Pick<UpstreamKubeletOptions, 'runtimeEndpoint' | 'nodeIp' | 'clientCaFile' | 'rootDir'>): string {
  return JSON.stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      containerRuntimeEndpoint: options.runtimeEndpoint,
      cgroupDriver: 'cgroupfs',
      // Its QoS and pod cgroups (kubepods under the root): with cgroupsPerQOS off, an in-place
      // resize makes the v1.37 kubelet panic (no pod cgroup to read in doPodResizeAction).
      cgroupsPerQOS: true,
      failSwapOn: false,
      // These machines are on cgroup v1, which the kubelet refuses by default since v1.35.
      failCgroupV1: false,
      address: options.nodeIp,
      readOnlyPort: 0,
      authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: { clientCAFile: options.clientCaFile } },
      authorization: { mode: 'AlwaysAllow' },
      podLogsDir: path.join(options.rootDir, 'logs'),
      resolvConf: '/etc/resolv.conf',
    },
    null,
    2,
  );
}

export async function startUpstreamKubelet(options: UpstreamKubeletOptions): Promise<UpstreamKubelet> {
  await mkdir(options.rootDir, { recursive: true });
  const config = path.join(options.rootDir, 'kubelet-config.yaml');
  await writeFile(config, kubeletConfiguration(options));
  const child = spawn(
    options.binary,
    [
      `--config=${config}`,
      `--kubeconfig=${options.kubeconfig}`,
      `--hostname-override=${options.nodeName}`,
      `--node-ip=${options.nodeIp}`,
      `--root-dir=${options.rootDir}`,
      `--cert-dir=${path.join(options.rootDir, 'pki')}`,
      '--v=1',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const forward = (chunk: Buffer) => options.onOutput?.(chunk.toString());
  child.stdout!.on('data', forward);
  child.stderr!.on('data', forward);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
