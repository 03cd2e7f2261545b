/**
 * A node as `kubeadm join` leaves it, under a test directory: `/etc/kubernetes/` (the cluster CA
 * in pki/ca.crt, bootstrap-kubelet.conf, an empty manifests/) and `/var/lib/kubelet/`
 * (config.yaml, kubeadm-flags.env) from the fixtures in test/cluster/fixtures/kubeadm, and the
 * command line systemd runs from kubeadm's drop-in 10-kubeadm.conf, its environment files read as
 * systemd reads them. Every kubeadm path is moved under the test directory; nothing else changes.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ControlPlane } from './controlPlane.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../cluster/fixtures/kubeadm');

export interface KubeadmNode {
  /** The test directory standing for the node's `/`. */
  dir: string;
  /** `/etc/kubernetes` there. */
  etcDir: string;
  /** `/var/lib/kubelet` there. */
  varLibDir: string;
  /** The kubeconfig the kubelet writes after its bootstrap (`/etc/kubernetes/kubelet.conf`). */
  kubeletConf: string;
  /** statelet's arguments: the drop-in's ExecStart after the binary. */
  args: string[];
  remove(): Promise<void>;
}

export interface KubeadmNodeOptions {
  nodeName: string;
  nodeIp: string;
  /** config.yaml's containerRuntimeEndpoint (kubeadm patches it in from instance-config.yaml). */
  containerRuntimeEndpoint: string;
  /** `KUBELET_EXTRA_ARGS` of /etc/default/kubelet (the user's overrides, last on the line), if any, given the node's directories. */
  extraArgs?: (dirs: { etcDir: string; varLibDir: string }) => string[];
}

export async function kubeadmNode(cp: ControlPlane, options: KubeadmNodeOptions): Promise<KubeadmNode> {
  const kubeadm = cp.kubeadm;
  if (!kubeadm) throw new Error('kubeadmNode needs a control plane started with kubeadm: true');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-kubeadm-node-'));
  const etcDir = path.join(dir, 'etc/kubernetes');
  const varLibDir = path.join(dir, 'var/lib/kubelet');
  const etcDefault = path.join(dir, 'etc/default');
  /** kubeadm's absolute paths, moved under the test directory. */
  const moved = (text: string) => text.replaceAll('/etc/kubernetes/', `${etcDir}/`).replaceAll('/var/lib/kubelet/', `${varLibDir}/`).replaceAll('/etc/default/', `${etcDefault}/`);
  for (const d of [path.join(etcDir, 'pki'), path.join(etcDir, 'manifests'), varLibDir, etcDefault]) await mkdir(d, { recursive: true });

  await writeFile(path.join(etcDir, 'pki/ca.crt'), await readFile(kubeadm.caFile));
  await kubeadm.bootstrapKubeconfig(path.join(etcDir, 'bootstrap-kubelet.conf'));
  const fixture = (name: string) => readFile(path.join(FIXTURES, name), 'utf8');
  await writeFile(path.join(varLibDir, 'config.yaml'), moved(await fixture('config.yaml')).replace('CONTAINER_RUNTIME_ENDPOINT', options.containerRuntimeEndpoint));
  await writeFile(path.join(varLibDir, 'kubeadm-flags.env'), (await fixture('kubeadm-flags.env')).replace('NODE_NAME', options.nodeName).replace('NODE_IP', options.nodeIp));
  if (options.extraArgs) await writeFile(path.join(etcDefault, 'kubelet'), `KUBELET_EXTRA_ARGS="${options.extraArgs({ etcDir, varLibDir }).join(' ')}"\n`);

  const command = await execStart(moved(await fixture('10-kubeadm.conf')));
  if (path.basename(command[0] ?? '') !== 'kubelet') throw new Error(`10-kubeadm.conf runs ${command[0]}, not the kubelet`);
  return {
    dir,
    etcDir,
    varLibDir,
    kubeletConf: path.join(etcDir, 'kubelet.conf'),
    args: command.slice(1),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * The last ExecStart of a unit's [Service] section as systemd runs it: `Environment=` and
 * `EnvironmentFile=` (a leading `-`: the file may be missing) in order, `ExecStart=` empty resets
 * it, `$NAME` expands to the variable's value split on white space, `${NAME}` to one word
 * (systemd.service "Command lines"); unset variables expand to nothing.
 */
export async function execStart(unit: string): Promise<string[]> {
  const env = new Map<string, string>();
  let command: string | null = null;
  const lines = unit.replace(/\\\n/g, ' ').split('\n');
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';') || line.startsWith('[')) continue;
    const eq = line.indexOf('=');
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    if (key === 'Environment') {
      for (const assignment of words(value)) setVariable(env, assignment);
    } else if (key === 'EnvironmentFile') {
      const optional = value.startsWith('-');
      const file = optional ? value.slice(1) : value;
      const text = await readFile(file, 'utf8').catch((err: unknown) => {
        if (optional) return '';
        throw err;
      });
      for (const envLine of text.split('\n')) {
        const trimmed = envLine.trim();
        if (trimmed === '' || trimmed.startsWith('#')) continue;
        setVariable(env, words(trimmed).join(' '));
      }
    } else if (key === 'ExecStart') {
      command = value === '' ? null : value;
    }
  }
  if (command === null) throw new Error('the unit has no ExecStart');
  return words(command).flatMap((word) => {
    const whole = /^\$\{(\w+)\}$/.exec(word);
    if (whole) return [env.get(whole[1]!) ?? ''];
    const split = /^\$(\w+)$/.exec(word);
    if (split) return (env.get(split[1]!) ?? '').split(/\s+/).filter(Boolean);
    return [word];
  });
}

function setVariable(env: Map<string, string>, assignment: string): void {
  const eq = assignment.indexOf('=');
  if (eq > 0) env.set(assignment.slice(0, eq), assignment.slice(eq + 1));
}

/** Splits on white space, double quotes grouping (and removed), as systemd splits its settings. */
function words(text: string): string[] {
  const out: string[] = [];
  let current = '';
  let quoted = false;
  let started = false;
  for (const ch of text) {
    if (ch === '"') {
      quoted = !quoted;
      started = true;
    } else if (!quoted && /\s/.test(ch)) {
      if (started) out.push(current);
      current = '';
      started = false;
    } else {
      current += ch;
      started = true;
    }
  }
  if (started) out.push(current);
  return out;
}
