/**
 * `npm run cluster [-- --nodes=N] [-- statelet flags…]`: a one-command local cluster to play with.
 * Starts the control plane the cluster tests use (kube-apiserver + etcd, kube-scheduler and
 * kube-controller-manager built from Go modules, on loopback, fresh data; node IPAM gives each
 * Node a /24 of 10.244.0.0/16), then one `statelet` process on sim:// running N nodes
 * (`statelet-node`, or `statelet-node-0` … for N > 1), each with its own identity, plus the static
 * pods of examples/ on the first. Prints the admin kubeconfig and kubectl lines to try. Ctrl-C
 * stops everything.
 *
 * It needs Go (the first run builds the control plane and the controllers, several minutes; later
 * runs start in seconds). As root, pods get addresses of their node's pod CIDR (Services get
 * endpoints); otherwise loopback ones, and statelet says so.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startControlPlane } from '../test/support/controlPlane.ts';

const NODE = 'statelet-node';
const CLUSTER_CIDR = '10.244.0.0/16';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const args = process.argv.slice(2);
// --nodes=N or --nodes N: the control plane needs each node's name before statelet starts.
const nodesAt = args.findIndex((arg) => arg === '--nodes' || arg.startsWith('--nodes='));
const nodes = nodesAt < 0 ? 1 : Number(args[nodesAt] === '--nodes' ? args[nodesAt + 1] : args[nodesAt]!.slice('--nodes='.length));
if (!Number.isInteger(nodes) || nodes < 1 || nodes > 254) {
  console.error(`npm run cluster: --nodes must be between 1 and 254 (one /24 of ${CLUSTER_CIDR} each), not ${nodes}`);
  process.exit(2);
}
const names = nodes === 1 ? [NODE] : Array.from({ length: nodes }, (_, i) => `${NODE}-${i}`);

const cp = await startControlPlane({
  nodeNames: names,
  required: true,
  controllers: true,
  controllerManagerArgs: ['--allocate-node-cidrs=true', `--cluster-cidr=${CLUSTER_CIDR}`, '--node-cidr-mask-size=24'],
});
if (!cp) process.exit(1);

const agent = spawn(
  process.execPath,
  [
    path.join(root, 'bin/statelet.js'),
    '--container-runtime-endpoint=sim://',
    // Each node reads its own credentials: {node} is its name.
    `--kubeconfig=${nodes === 1 ? cp.nodeKubeconfig(NODE) : path.join(path.dirname(cp.nodeKubeconfig(names[0]!)), '{node}.kubeconfig')}`,
    `--hostname-override=${NODE}`,
    // The API server reaches each node's API (logs, exec) at its InternalIP: 127.0.0.1 for one
    // node, 127.0.1.1 and on for --nodes (each node serves at its own address).
    ...(nodes === 1 ? ['--node-ip=127.0.0.1'] : []),
    `--client-ca-file=${cp.kubeletClientCaFile}`,
    ...(nodes === 1 ? [`--pod-manifest-path=${path.join(root, 'examples')}`] : []),
    `--root-dir=${path.join(root, '.statelet-cluster')}`,
    `--pod-logs-dir=${path.join(root, '.statelet-cluster/logs')}`,
    '--visualizer-port=10260',
    ...args,
  ],
  { stdio: 'inherit', cwd: root },
);

const kubectl = cp.kubectlPath;
const visualizer = `\n  live statecharts of ${names[0]}:  http://${nodes === 1 ? '127.0.0.1' : '127.0.1.1'}:10260/`;
process.stdout.write(`
statelet cluster: API server ${cp.server}, ${nodes === 1 ? `node ${NODE}` : `${nodes} nodes ${names[0]} … ${names.at(-1)}`} on sim:// in one process${visualizer}
  export KUBECONFIG=${cp.adminKubeconfig}
  alias kubectl=${kubectl}
  kubectl get nodes -o wide
  kubectl create deployment web --image=busybox --replicas=${Math.max(3, nodes)} -- sh -c 'echo "hello from $HOSTNAME" > index.html; httpd -f -p 8080'
  kubectl expose deployment web --port=80 --target-port=8080
  kubectl get pods -o wide; kubectl get endpointslices
  kubectl run client --image=busybox --restart=Never -- wget -q -O - http://<a web pod's IP>:8080/; kubectl logs client
(kube-scheduler and kube-controller-manager run; Ctrl-C stops the agent and the control plane)

`);

let stopping = false;
const shutdown = async (code: number) => {
  if (stopping) return;
  stopping = true;
  agent.kill('SIGTERM');
  await new Promise((resolve) => (agent.exitCode !== null ? resolve(undefined) : agent.once('exit', resolve)));
  await cp.close();
  process.exit(code);
};
process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));
agent.once('exit', (code) => void shutdown(code ?? 1));
