/**
 * Worker: the round trip of `exec` — a command run in a container and its output and exit code
 * back — through the agent's authenticated API (the path from the API server), against the same
 * through raw CRI (Exec, then the runtime's streaming URL directly), and against ExecSync.
 *   node --expose-gc --import tsx bench/exec.ts --n=300 [--out=FILE]
 *
 * sim:// over its real gRPC socket; the agent's HTTPS server in-process with a client certificate
 * as the API server presents; the client speaks SPDY as client-go does. Every round runs
 * `sh -c 'echo hi; exit 3'` and checks what came back.
 */
import path from 'node:path';
import { CriClient } from '../src/runtime/cri/client.ts';
import { startSimRuntime } from '../src/runtime/sim/server.ts';
import { listedPod, startTestKubeletServer } from '../test/support/kubeletServerFixture.ts';
import { runCommand } from '../test/support/streamingClient.ts';
import { containerConfig, podSandboxConfig } from '../test/runtime/support.ts';
import { argValue, emit, removeDir, round, runWorker, summarize, tempDir } from './lib.ts';
import type { ExecResult } from './results.ts';

const n = Number(argValue('n') ?? 300);
const SCRIPT = ['sh', '-c', 'echo hi; exit 3'];
const streams = { stdin: false, stdout: true, stderr: true, tty: false };

runWorker(async () => {
  const dir = await tempDir('statelet-bench-exec-');
  const sim = await startSimRuntime({ socketPath: path.join(dir, 'cri.sock'), pullDelayMs: 0 });
  const cri = new CriClient(sim.endpoint);
  try {
    const labels = { 'io.kubernetes.pod.uid': 'u1', 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': 'bench' };
    const sandboxConfig = podSandboxConfig('web', { metadata: { name: 'web', namespace: 'bench', uid: 'u1', attempt: 0 }, labels });
    const sandbox = await cri.runPodSandbox(sandboxConfig);
    const container = await cri.createContainer(sandbox, containerConfig('app', { command: ['sleep', 'infinity'], labels: { ...labels, 'io.kubernetes.container.name': 'app' } }), sandboxConfig);
    await cri.startContainer(container);
    const kubelet = await startTestKubeletServer(dir, { pods: () => [listedPod('bench', 'web', 'u1')], runtime: cri });
    const agentUrl = `${kubelet.url}/exec/bench/web/app?${SCRIPT.map((arg) => `command=${encodeURIComponent(arg)}`).join('&')}&output=1&error=1`;

    const rounds = async (run: () => Promise<void>) => {
      for (let i = 0; i < 20; i++) await run(); // warm-up
      const times: number[] = [];
      const cpu = process.cpuUsage();
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await run();
        times.push(performance.now() - t0);
      }
      const used = process.cpuUsage(cpu);
      return { ...summarize(times), cpuMsPerExec: round((used.user + used.system) / 1000 / n, 2) };
    };
    const expectHi = (result: { stdout: string; exitCode: number }) => {
      if (result.stdout !== 'hi\n' || result.exitCode !== 3) throw new Error(`unexpected exec result ${JSON.stringify(result)}`);
    };

    const execSync = await rounds(async () => {
      const result = await cri.execSync(container, SCRIPT, 10);
      expectHi({ stdout: result.stdout.toString(), exitCode: result.exitCode });
    });
    const rawCri = await rounds(async () => expectHi(await runCommand(await cri.exec({ containerId: container, cmd: SCRIPT, ...streams }))));
    const agent = await rounds(async () => expectHi(await runCommand(agentUrl, kubelet.credentials)));
    await kubelet.close();
    const result: ExecResult = { n, execSync, rawCri, agent };
    await emit(result);
  } finally {
    cri.close();
    await sim.close();
    await removeDir(dir);
  }
});
