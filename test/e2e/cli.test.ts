import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runStatelet, runStateletOnce } from '../support/agentProcess.ts';

describe('statelet command line', () => {
  it('rejects an unknown flag with a message naming it', async () => {
    const { code, output } = await runStateletOnce(['--bogus-flag']);
    expect(code).toBe(1);
    expect(output).toContain('failed to parse kubelet flag: unknown flag: --bogus-flag');
  });

  it("fails a flag the kubelet removed as it does, exit 1, and prints the version kubeadm's preflight reads", async () => {
    const removed = await runStateletOnce(['--pod-infra-container-image=registry.k8s.io/pause:3.10']);
    expect(removed.code).toBe(1);
    expect(removed.output).toContain('statelet: failed to parse kubelet flag: unknown flag: --pod-infra-container-image');
    const version = await runStateletOnce(['--version']);
    expect(version.code).toBe(0);
    expect(version.output).toMatch(/^Kubernetes v1\.37\.0-statelet\.\d+\.\d+\.\d+\n$/);
  });

  it("refuses by name a kubelet flag it does not implement; with --fail-cgroupv1 it stops on a cgroup v1 host in the kubelet's words", async () => {
    const notImplemented = await runStateletOnce(['--contention-profiling']);
    expect(notImplemented.code).toBe(1);
    expect(notImplemented.output).toContain('failed to parse kubelet flag: --contention-profiling is a flag of the kubelet that statelet does not implement');
    // The host's cgroups decide: only a v1 host (one hierarchy per controller, as these machines) stops for it.
    if (existsSync('/sys/fs/cgroup/cgroup.controllers')) return;
    const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-cgroupv1-'));
    try {
      const { code, output } = await runStateletOnce(['--container-runtime-endpoint=unix:///nonexistent/cri.sock', '--fail-cgroupv1', `--root-dir=${root}`]);
      expect(code).toBe(1);
      expect(output).toContain('statelet: kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('rejects a bad value with a message naming the flag and the value', async () => {
    const { code, output } = await runStateletOnce(['--sync-frequency', 'soon']);
    expect(code).toBe(1);
    expect(output).toMatch(/invalid value "soon" for flag --sync-frequency/);
  });

  it('refuses a flag it would otherwise ignore, naming it and what it needs, before starting anything', async () => {
    const { code, output } = await runStateletOnce(['--container-runtime-endpoint', 'sim://', '--http-check-frequency', '5s']);
    expect(code).toBe(1);
    expect(output).toContain('statelet: --http-check-frequency: has no effect without --manifest-url (staticPodURL)');
  });

  it('refuses an --allowed-unsafe-sysctls entry that is not namespaced, as the kubelet does at start', async () => {
    const { code, output } = await runStateletOnce(['--allowed-unsafe-sysctls', 'net.core.somaxconn,vm.swappiness']);
    expect(code).toBe(1);
    expect(output).toContain('the sysctl "vm.swappiness" are not known to be namespaced');
  });

  it('does not start when the credential provider plugins do not register, with the kubelet\'s message, and runs when they do', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-credprov-'));
    try {
      const config = path.join(dir, 'credential-providers.yaml');
      await writeFile(config, 'apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []\n');
      const binDir = path.join(dir, 'bin');
      const args = ['--container-runtime-endpoint', 'sim://', '--root-dir', path.join(dir, 'root'), '--image-credential-provider-config', config, '--image-credential-provider-bin-dir', binDir];
      const missingDir = await runStateletOnce(args);
      expect(missingDir.code).toBe(1);
      expect(missingDir.output).toContain(`statelet: Failed to register CRI auth plugins: plugin binary directory ${binDir} did not exist`);
      await mkdir(binDir);
      const noProviders = await runStateletOnce(args);
      expect(noProviders.code).toBe(1);
      expect(noProviders.output).toContain('statelet: Failed to register CRI auth plugins: failed to validate credential provider config: providers: Required value: at least 1 item in plugins is required');
      // Plugins that register: the agent runs, their credentials tried after a pod's pull secrets'.
      await writeFile(config, 'apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - {name: p, matchImages: [registry.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}\n');
      await writeFile(path.join(binDir, 'p'), '#!/bin/sh\n', { mode: 0o755 });
      const registered = await runStatelet(['--container-runtime-endpoint', 'sim://', '--image-credential-provider-config', config, '--image-credential-provider-bin-dir', binDir]);
      try {
        expect(await registered.waitForLog(/Registered credential provider plugins/)).toContain('p');
        expect(registered.child.exitCode).toBeNull();
      } finally {
        await registered.stop();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('prints help with the kubelet flag names', async () => {
    const { code, output } = await runStateletOnce(['--help']);
    expect(code).toBe(0);
    for (const flag of ['--pod-manifest-path', '--container-runtime-endpoint', '--read-only-port', '--healthz-port', '--sync-frequency']) {
      expect(output).toContain(flag);
    }
  });

  it('keeps running with an unreachable runtime socket, says which, and reports unhealthy', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-nosock-'));
    const socket = path.join(dir, 'missing.sock');
    const agent = await runStatelet(['--container-runtime-endpoint', `unix://${socket}`]);
    try {
      const line = await agent.waitForLog(/Container runtime is not reachable/);
      expect(line).toContain(socket);
      const health = await agent.healthz();
      expect(health.status).toBe(500);
      expect(health.body).toMatch(/runtime|pleg/);
      expect(agent.child.exitCode).toBeNull();
      expect(await agent.pods()).toEqual([]);
    } finally {
      await agent.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it('stops cleanly on SIGTERM; sets its own OOM score adjustment and open file limit at start, or says why not', async () => {
    const agent = await runStatelet(['--container-runtime-endpoint', 'sim://', '--oom-score-adj=-998', '--max-open-files=65000']);
    // Lowering the score and raising the hard limit need CAP_SYS_RESOURCE, which a root in a container may lack.
    if (agent.output().includes('Failed to ApplyOOMScoreAdj')) expect(agent.output()).toMatch(/Failed to ApplyOOMScoreAdj" oomScoreAdj=-998 err=/);
    else expect((await readFile(`/proc/${agent.child.pid}/oom_score_adj`, 'utf8')).trim()).toBe('-998');
    if (agent.output().includes('Failed to set rlimit on max file handles')) expect(agent.output()).toMatch(/Failed to set rlimit on max file handles" maxOpenFiles=65000 err=/);
    else expect(await readFile(`/proc/${agent.child.pid}/limits`, 'utf8')).toMatch(/Max open files\s+65000\s+65000/);
    agent.child.kill('SIGTERM');
    expect(await agent.waitForExit()).toBe(0);
    expect(agent.output()).toContain('Stopping; pods keep running');
    await agent.stop();
  }, 30_000);
});
