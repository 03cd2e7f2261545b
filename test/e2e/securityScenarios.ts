/**
 * Security-context scenarios that must tell the same story on sim:// and on containerd: the pod's
 * user and group, a read-only root filesystem, capabilities dropped, the pid namespace per container
 * or shared, seccomp, sysctls (a safe one set, an unsafe one refused at admission), CPU and memory
 * limits in the container's cgroup with the pod's QoS class, and runAsNonRoot refused before the
 * container is created. Each is observed
 * from inside the container (CRI ExecSync, which runs as the container's process does) or through
 * the pod's status.
 */
import { describe, expect, it, vi } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { hostAppArmorEnabled } from '../../src/node/machineInfo.ts';
import { containerStatus } from '../support/agentProcess.ts';
import { type ScenarioRuntime, agentFixture } from './scenarios.ts';

/** A script that runs until stopped, and names itself so pid 1 can be told apart. */
const longRunning = `trap 'exit 0' TERM; while true; do sleep 1; done # own-process`;

function securityManifests(image: string): Record<string, string> {
  const pod = (name: string, podSpec: string, containerSpec = '') => `
apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 2${podSpec}
  containers:
    - name: app
      image: ${image}
      command: ["sh", "-c", "${longRunning}"]${containerSpec}
`;
  return {
    'ids.yaml': pod('ids', '\n  securityContext: { runAsUser: 1000, runAsGroup: 3000 }'),
    'readonly.yaml': pod('readonly', '', '\n      securityContext: { readOnlyRootFilesystem: true }'),
    'nocaps.yaml': pod('nocaps', '', '\n      securityContext: { capabilities: { drop: [ALL] } }'),
    'unknowncap.yaml': pod('unknowncap', '', '\n      securityContext: { capabilities: { add: [FLY] } }'),
    'seccomp.yaml': pod('seccomp', '\n  securityContext: { seccompProfile: { type: RuntimeDefault } }'),
    'shared.yaml': pod('shared', '\n  shareProcessNamespace: true'),
    'nonroot.yaml': pod('nonroot', '\n  securityContext: { runAsNonRoot: true }'),
    'guaranteed.yaml': pod('guaranteed', '', '\n      resources: { limits: { cpu: 100m, memory: 64Mi } }'),
    'burstable.yaml': pod('burstable', '', '\n      resources: { requests: { cpu: 50m, memory: 32Mi } }'),
    'sysctl.yaml': pod('sysctl', '\n  securityContext: { sysctls: [{ name: net.ipv4.ip_unprivileged_port_start, value: "80" }] }'),
    'apparmor.yaml': pod('apparmor', '', '\n      securityContext: { appArmorProfile: { type: RuntimeDefault } }'),
    'unsafe-sysctl.yaml': pod('unsafe-sysctl', '\n  securityContext: { sysctls: [{ name: kernel.msgmax, value: "65536" }] }'),
    // dd as the container's own process, its 200 MB buffer far over the 32Mi limit.
    'oom.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: oom }
spec:
  containers:
    - name: app
      image: ${image}
      command: ["dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"]
      resources: { limits: { memory: 32Mi } }
`,
  };
}

export function defineSecurityScenarios(runtime: ScenarioRuntime): void {
  describe(`security contexts on ${runtime.name}`, () => {
    const fixture = agentFixture(runtime, () => securityManifests(runtime.image));

    const running = (name: string) => fixture.agent.waitForPod(name, (p) => containerStatus(p, 'app')?.state?.running !== undefined);
    /** Runs `script` in the pod's `app` container, as its own process runs. */
    const exec = async (pod: Pod, script: string) => {
      const id = containerStatus(pod, 'app')!.containerID!.replace(/^.*:\/\//, '');
      const result = await fixture.cri.execSync(id, ['sh', '-c', script], 10);
      return { exitCode: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
    };

    it("runs the container as the pod's user and group", async () => {
      const { stdout } = await exec(await running('ids'), 'id -u; id -g');
      expect(stdout).toBe('1000\n3000\n');
    });

    it('refuses writes to a read-only root filesystem', async () => {
      const { exitCode, stderr } = await exec(await running('readonly'), 'touch /file');
      expect(exitCode).toBe(1);
      expect(stderr).toContain('Read-only file system');
    });

    it("keeps the runtime's default capabilities for root, none once all are dropped, and ignores one Linux does not know", async () => {
      const effective = async (name: string) => (await exec(await running(name), 'grep CapEff /proc/self/status')).stdout.trim();
      expect(await effective('readonly')).toBe('CapEff:\t00000000a80425fb');
      expect(await effective('nocaps')).toBe('CapEff:\t0000000000000000');
      // Neither the kubelet nor the API server checks the names; runc skips an unknown one.
      expect(await effective('unknowncap')).toBe('CapEff:\t00000000a80425fb');
    });

    it('filters system calls under RuntimeDefault, and not where the pod names no profile', async () => {
      const mode = async (name: string) => (await exec(await running(name), 'grep Seccomp: /proc/self/status')).stdout.trim();
      expect(await mode('seccomp')).toBe('Seccomp:\t2');
      expect(await mode('ids')).toBe('Seccomp:\t0');
    });

    it('gives each container its own pid namespace unless the pod shares one', async () => {
      const pid1 = async (name: string) => (await exec(await running(name), 'cat /proc/1/cmdline')).stdout;
      expect(await pid1('ids')).toContain('own-process');
      expect(await pid1('shared')).not.toContain('own-process');
    });

    it('sets a safe sysctl in the pod, and refuses a pod asking for one the node does not allow', async () => {
      const { stdout } = await exec(await running('sysctl'), 'cat /proc/sys/net/ipv4/ip_unprivileged_port_start');
      expect(stdout).toBe('80\n');
      const refused = await fixture.agent.waitForPod('unsafe-sysctl', (p) => p.status?.phase === 'Failed');
      expect(refused.status).toMatchObject({ reason: 'SysctlForbidden', message: 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted' });
    });

    it("limits the container's cgroup as its resources ask, and reports the pod's QoS class", async () => {
      // cgroup v2 (sim://, and hosts on the unified hierarchy) or v1 (these machines' containerd): the same values.
      const read = async (name: string, v2: string, v1: string) =>
        (await exec(await running(name), `cat /sys/fs/cgroup/${v2} 2>/dev/null || cat /sys/fs/cgroup/${v1}`)).stdout.trim().split(/\s+/)[0];
      expect(await read('guaranteed', 'cpu.max', 'cpu/cpu.cfs_quota_us')).toBe('10000');
      expect(await read('guaranteed', 'memory.max', 'memory/memory.limit_in_bytes')).toBe('67108864');
      expect(['max', '-1']).toContain(await read('ids', 'cpu.max', 'cpu/cpu.cfs_quota_us'));
      const memory = await read('ids', 'memory.max', 'memory/memory.limit_in_bytes');
      expect(memory === 'max' || Number(memory) >= 2 ** 62).toBe(true);
      const qos = async (name: string) => (await running(name)).status?.qosClass;
      expect([await qos('guaranteed'), await qos('burstable'), await qos('ids')]).toEqual(['Guaranteed', 'Burstable', 'BestEffort']);
    });

    it('kills a container that goes over its memory limit: OOMKilled, exit code 137, restarted as its policy says', async () => {
      const pod = await fixture.agent.waitForPod('oom', (p) => (containerStatus(p, 'app')?.restartCount ?? 0) >= 1, 60_000);
      expect(containerStatus(pod, 'app')?.lastState?.terminated).toMatchObject({ reason: 'OOMKilled', exitCode: 137 });
    });

    it('refuses a pod that needs an AppArmor profile where the host does not enforce AppArmor, as the kubelet does', async () => {
      if (hostAppArmorEnabled()) {
        await running('apparmor');
        return;
      }
      const refused = await fixture.agent.waitForPod('apparmor', (p) => p.status?.phase === 'Failed');
      expect(refused.status).toMatchObject({ reason: 'AppArmor', message: 'Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host' });
    });

    it('does not create a container that would run as root under runAsNonRoot', async () => {
      const pod = await fixture.agent.waitForPod('nonroot', (p) => containerStatus(p, 'app')?.state?.waiting?.reason === 'CreateContainerConfigError');
      const uid = pod.metadata.uid!;
      expect(containerStatus(pod, 'app')?.state?.waiting?.message).toBe(
        `container has runAsNonRoot and image will run as root (pod: "nonroot-e2e-node_default(${uid})", container: app)`,
      );
      expect(pod.status?.phase).toBe('Pending');
      const created = await fixture.cri.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
      expect(created).toEqual([]);
      // Still refused at the next syncs: nothing gets created meanwhile.
      await vi.waitFor(async () => expect((await fixture.agent.pods()).find((p) => p.metadata.uid === uid)?.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('CreateContainerConfigError'));
    });
  });
}
