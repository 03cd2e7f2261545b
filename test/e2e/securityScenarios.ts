/**
 * Security-context scenarios that must tell the same story on sim:// and on containerd: the pod's
 * user and group, a read-only root filesystem, capabilities dropped, the pid namespace per container
 * or shared, seccomp, sysctls (a safe one set, an unsafe one refused at admission), CPU and memory
 * limits in the container's cgroup with the pod's QoS class, no swap (NoSwap), runAsNonRoot refused before the
 * container is created, an emptyDir given to the pod's fsGroup, and the container's user in its
 * status where the runtime reports it. Each is observed
 * from inside the container (CRI ExecSync, which runs as the container's process does) or through
 * the pod's status.
 */
import { access, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { hostAppArmorEnabled } from '../../src/node/machineInfo.ts';
import { agentCgroupRoot, containerStatus } from '../support/agentProcess.ts';
import { asRootOrSkip } from '../support/asRoot.ts';
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
    'strict.yaml': pod('strict', '\n  securityContext: { supplementalGroups: [4000], supplementalGroupsPolicy: Strict }'),
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
    'transient.yaml': pod('transient', ''),
    'fsgroup.yaml': pod(
      'fsgroup',
      '\n  securityContext: { runAsUser: 1000, fsGroup: 2000 }\n  volumes: [{ name: data, emptyDir: {} }]',
      '\n      volumeMounts: [{ name: data, mountPath: /data }]',
    ),
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

    it("reports the container's user in its status where the runtime reports it (sim://; not containerd 1.6)", async () => {
      const pod = await running('ids');
      // CRI: a runtime with the supplemental_groups_policy feature reports ContainerStatus.user.
      const reports = (await fixture.cri.status()).features?.supplementalGroupsPolicy === true;
      const user = containerStatus(pod, 'app')?.user;
      if (reports) expect(user).toEqual({ linux: { uid: 1000, gid: 3000, supplementalGroups: [3000] } });
      else expect(user).toBeUndefined();
    });

    it("gives an emptyDir to the pod's fsGroup: its group, setgid, writable by the pod's user", async () => {
      if (!asRootOrSkip("the fsGroup scenario (the node gives the volume to group 2000)")) return;
      const pod = await running('fsgroup');
      // The file the pod's user makes there belongs to the group too: the directory's setgid bit.
      const result = await exec(pod, "id -u; stat -c '%g %a' /data; touch /data/x && stat -c %g /data/x");
      expect(result).toMatchObject({ exitCode: 0, stdout: '1000\n2000 2777\n2000\n' });
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

    it('gives the container no swap beyond its memory limit (NoSwap), and on cgroup v2 the OOM group', async () => {
      // v1 (these machines' containerd, swap accounted): memory+swap equal to memory; v2 (sim://):
      // memory.swap.max 0 and memory.oom.group 1, as the unified map asks.
      const pod = await running('guaranteed');
      const cat = async (file: string) => (await exec(pod, `cat /sys/fs/cgroup/${file}`)).stdout.trim();
      const v2 = (await exec(pod, 'test -f /sys/fs/cgroup/memory.max && echo v2 || echo v1')).stdout.trim() === 'v2';
      if (v2) {
        expect([await cat('memory.swap.max'), await cat('memory.oom.group')]).toEqual(['0', '1']);
      } else if ((await exec(pod, 'test -f /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes')).exitCode === 0) {
        expect(await cat('memory/memory.memsw.limit_in_bytes')).toBe('67108864');
        expect(await cat('memory/memory.limit_in_bytes')).toBe('67108864');
      }
    });

    it('kills a container that goes over its memory limit: OOMKilled, exit code 137, restarted as its policy says', async () => {
      const pod = await fixture.agent.waitForPod('oom', (p) => (containerStatus(p, 'app')?.restartCount ?? 0) >= 1, 60_000);
      expect(containerStatus(pod, 'app')?.lastState?.terminated).toMatchObject({ reason: 'OOMKilled', exitCode: 137 });
    });

    it('keeps the kubelet\'s cgroups: kubepods, a cgroup per QoS class and per pod with its values, removed with the pod', async () => {
      // containerd: the host's cgroupfs (v1 on these machines); sim://: its tree under --root-dir, laid out as v2.
      const mount = runtime.endpoint().startsWith('sim://') ? path.join(fixture.agent.rootDir, 'sim-cgroup') : '/sys/fs/cgroup';
      const v2 = await access(path.join(mount, 'cgroup.controllers')).then(() => true, () => false);
      const kubepods = `${agentCgroupRoot(fixture.agent.rootDir).slice(1)}/kubepods`;
      const file = (cgroup: string, v1: string, v2name: string) => (v2 ? path.join(mount, cgroup, v2name) : path.join(mount, v1.split('.')[0]!, cgroup, v1));
      const read = async (cgroup: string, v1: string, v2name: string) => (await readFile(file(cgroup, v1, v2name), 'utf8')).trim();
      const podCgroup = async (name: string, qos: string) => `${kubepods}${qos}/pod${(await running(name)).metadata.uid}`;
      // cpu.shares on v1; on v2 the kubelet's own conversion to cpu.weight (1 + (shares − 2) × 9999 / 262142).
      const shares = (cgroup: string) => read(cgroup, 'cpu.shares', 'cpu.weight');
      const weight = (s: number) => String(v2 ? 1 + Math.floor(((s - 2) * 9999) / 262142) : s);

      const guaranteed = await podCgroup('guaranteed', '');
      expect(await shares(guaranteed)).toBe(weight(102));
      expect((await read(guaranteed, 'cpu.cfs_quota_us', 'cpu.max')).split(' ')[0]).toBe('10000');
      expect(await read(guaranteed, 'memory.limit_in_bytes', 'memory.max')).toBe('67108864');
      const burstable = await podCgroup('burstable', '/burstable');
      expect(await shares(burstable)).toBe(weight(51));
      expect(['-1', 'max']).toContain((await read(burstable, 'cpu.cfs_quota_us', 'cpu.max')).split(' ')[0]);
      const besteffort = await podCgroup('ids', '/besteffort');
      expect(await shares(besteffort)).toBe(weight(2));
      // The QoS levels: besteffort the minimum, burstable the Burstable pods' CPU requests (50m here).
      expect(await shares(`${kubepods}/besteffort`)).toBe(weight(2));
      expect(await shares(`${kubepods}/burstable`)).toBe(weight(51));
      expect(Number(await shares(kubepods))).toBeGreaterThan(Number(weight(1024)));

      // Deleted, the pod's cgroup goes with it.
      const transient = await podCgroup('transient', '/besteffort');
      await access(file(transient, 'cpu.shares', 'cpu.weight'));
      await rm(path.join(fixture.dir, 'transient.yaml'));
      await vi.waitFor(async () => expect(await access(file(transient, 'cpu.shares', 'cpu.weight')).then(() => 'there', () => 'gone')).toBe('gone'), { timeout: 30_000, interval: 250 });
    });

    it('runs a pod with supplementalGroupsPolicy Strict where the runtime supports it, and refuses it where it does not', async () => {
      if ((await fixture.cri.status()).features?.supplementalGroupsPolicy === true) {
        expect((await exec(await running('strict'), 'id -G')).stdout.trim()).toBe('0 4000');
        return;
      }
      const refused = await fixture.agent.waitForPod('strict', (p) => p.status?.phase === 'Failed');
      expect(refused.status).toMatchObject({ reason: 'SupplementalGroupsPolicyNotSupported', message: 'Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node' });
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
