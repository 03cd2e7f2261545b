/**
 * Probe scenarios that must behave the same on sim:// and on containerd: liveness restarts,
 * readiness flipping the Ready condition both ways, a startup probe that never passes, and an
 * httpGet probe answered by a real HTTP server in the pod (busybox httpd). The test changes a
 * container's files through CRI ExecSync, as `kubectl exec` would.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { Label } from '../../src/kuberuntime/labels.ts';
import { containerStatus } from '../support/agentProcess.ts';
import { type ScenarioRuntime, agentFixture } from './scenarios.ts';

const idle = `trap 'exit 0' TERM; while true; do sleep 1; done`;
const fast = 'periodSeconds: 1, timeoutSeconds: 2';

function probeManifests(image: string): Record<string, string> {
  return {
    'liveness.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: liveness }
spec:
  terminationGracePeriodSeconds: 2
  containers:
    - name: app
      image: ${image}
      command: ["sh", "-c", "touch /tmp/healthy; ${idle}"]
      livenessProbe: { exec: { command: ["test", "-e", "/tmp/healthy"] }, ${fast}, failureThreshold: 1 }
`,
    'readiness.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: readiness }
spec:
  containers:
    - name: app
      image: ${image}
      command: ["sh", "-c", "${idle}"]
      readinessProbe: { exec: { command: ["test", "-e", "/tmp/ready"] }, ${fast}, failureThreshold: 1 }
`,
    'startup.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: startup }
spec:
  terminationGracePeriodSeconds: 2
  containers:
    - name: app
      image: ${image}
      command: ["sh", "-c", "${idle}"]
      startupProbe: { exec: { command: ["test", "-e", "/tmp/never"] }, ${fast}, failureThreshold: 2 }
`,
    'web.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: web }
spec:
  containers:
    - name: httpd
      image: ${image}
      command: ["sh", "-c", "mkdir -p /www; echo ok > /www/healthz; trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]
      ports: [{ name: http, containerPort: 8080 }]
      readinessProbe: { httpGet: { path: /healthz, port: http }, ${fast} }
`,
  };
}

const condition = (pod: Pod, type: string) => pod.status?.conditions?.find((c) => c.type === type)?.status;

export function defineProbeScenarios(runtime: ScenarioRuntime): void {
  describe(`probes on ${runtime.name}`, () => {
    const fixture = agentFixture(runtime, () => probeManifests(runtime.image));
    const exec = async (pod: Pod, command: string[]) => {
      const id = containerStatus(pod, 'app')?.containerID?.split('://')[1] ?? '';
      const result = await fixture.cri.execSync(id, command, 5);
      expect(result.exitCode).toBe(0);
    };

    it('restarts a container whose liveness file was removed, and its restart count grows', async () => {
      const pod = await fixture.agent.waitForPod('liveness', (p) => containerStatus(p, 'app')?.state.running !== undefined);
      expect(containerStatus(pod, 'app')?.restartCount).toBe(0);
      await exec(pod, ['rm', '/tmp/healthy']);
      const restarted = await fixture.agent.waitForPod(
        'liveness',
        (p) => (containerStatus(p, 'app')?.restartCount ?? 0) >= 1 && containerStatus(p, 'app')?.state.running !== undefined,
      );
      expect(containerStatus(restarted, 'app')?.containerID).not.toBe(containerStatus(pod, 'app')?.containerID);
      await fixture.agent.waitForLog(/Liveness probe failed/);
    }, 60_000);

    it('flips Ready with the readiness probe, both ways', async () => {
      const notReady = await fixture.agent.waitForPod('readiness', (p) => containerStatus(p, 'app')?.state.running !== undefined);
      expect(condition(notReady, 'Ready')).toBe('False');
      await exec(notReady, ['touch', '/tmp/ready']);
      const ready = await fixture.agent.waitForPod('readiness', (p) => condition(p, 'Ready') === 'True');
      expect(containerStatus(ready, 'app')?.ready).toBe(true);
      await exec(ready, ['rm', '/tmp/ready']);
      const again = await fixture.agent.waitForPod('readiness', (p) => condition(p, 'Ready') === 'False');
      expect(condition(again, 'ContainersReady')).toBe('False');
      expect(containerStatus(again, 'app')?.restartCount).toBe(0);
    }, 60_000);

    it('kills a container whose startup probe never succeeds, after failureThreshold × period', async () => {
      const pod = await fixture.agent.waitForPod('startup', (p) => (containerStatus(p, 'app')?.restartCount ?? 0) >= 1, 45_000);
      expect(containerStatus(pod, 'app')?.started).toBe(false);
      expect(condition(pod, 'Ready')).toBe('False');
      const containers = await fixture.cri.listContainers({ labelSelector: { [Label.podUid]: pod.metadata.uid } });
      expect(containers.length).toBeGreaterThanOrEqual(2);
    }, 60_000);

    it('passes an httpGet readiness probe answered by httpd in the pod', async () => {
      const pod = await fixture.agent.waitForPod('web', (p) => condition(p, 'Ready') === 'True', 45_000);
      expect(containerStatus(pod, 'httpd')?.ready).toBe(true);
      const answer = await fetch(`http://${pod.status?.podIP}:8080/healthz`);
      expect(await answer.text()).toBe('ok\n');
    }, 60_000);
  });
}
