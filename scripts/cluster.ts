/**
 * `npm run cluster`: a one-command local cluster to play with. Starts the control plane the
 * cluster tests use (kube-apiserver + etcd built from Go modules, on loopback, fresh data), then
 * `statelet` on sim:// as node `statelet-node` with the node's own identity and the static pods of
 * examples/, and prints the admin kubeconfig and kubectl lines to try. Ctrl-C stops both.
 *
 * It needs Go (the first run builds the control plane, several minutes; later runs start in seconds).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startControlPlane } from '../test/support/controlPlane.ts';

const NODE = 'statelet-node';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const cp = await startControlPlane({ nodeNames: [NODE], required: true });
if (!cp) process.exit(1);
// No controller-manager runs: the `default` ServiceAccount that pods need is created here.
await cp.core.createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name: 'default' } } }).catch(() => undefined);

const agent = spawn(
  process.execPath,
  [
    path.join(root, 'bin/statelet.js'),
    '--container-runtime-endpoint=sim://',
    `--kubeconfig=${cp.nodeKubeconfig(NODE)}`,
    `--hostname-override=${NODE}`,
    `--pod-manifest-path=${path.join(root, 'examples')}`,
    `--root-dir=${path.join(root, '.statelet-cluster')}`,
    `--pod-logs-dir=${path.join(root, '.statelet-cluster/logs')}`,
    '--visualizer-port=10260',
    ...process.argv.slice(2),
  ],
  { stdio: 'inherit', cwd: root },
);

const kubectl = cp.kubectlPath;
const visualizer = existsSync(path.join(root, 'visualizer/dist')) ? '\n  live statecharts:  http://127.0.0.1:10260/' : '';
process.stdout.write(`
statelet cluster: API server ${cp.server}, node ${NODE} on sim://${visualizer}
  export KUBECONFIG=${cp.adminKubeconfig}
  alias kubectl=${kubectl}
  kubectl get nodes -o wide
  kubectl run hello --image=busybox --overrides='{"spec":{"nodeName":"${NODE}"}}' -- sh -c 'while true; do date; sleep 5; done'
  kubectl get pods -A -o wide
(no scheduler runs: pods name their node in spec.nodeName; Ctrl-C stops the agent and the control plane)

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
