/**
 * Pod lifecycle scenarios (restart policies, images, termination) that must behave the same on
 * sim:// and on containerd. Each runs against one agent per runtime.
 */
import { describe, expect, it } from 'vitest';
import { Label } from '../../src/kuberuntime/labels.ts';
import { containerStatus } from '../support/agentProcess.ts';
import { type ScenarioRuntime, agentFixture } from './scenarios.ts';

function lifecycleManifests(image: string): Record<string, string> {
  return {
    'init-fails.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: init-fails }
spec:
  restartPolicy: Never
  initContainers:
    - { name: setup, image: ${image}, command: ["sh", "-c", "echo cannot set up; exit 3"] }
  containers:
    - { name: app, image: ${image}, command: ["sh", "-c", "sleep 3600"] }
`,
    'never-pull.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: never-pull }
spec:
  containers:
    - { name: app, image: statelet.local/doesnotexist:1, imagePullPolicy: Never }
`,
    'completes.yaml': `
apiVersion: v1
kind: Pod
metadata: { name: completes }
spec:
  restartPolicy: OnFailure
  containers:
    - { name: job, image: ${image}, command: ["sh", "-c", "echo done; exit 0"] }
`,
  };
}

export function defineLifecycleScenarios(runtime: ScenarioRuntime): void {
  describe(`pod lifecycle on ${runtime.name}`, () => {
    const fixture = agentFixture(runtime, () => lifecycleManifests(runtime.image));
    const containersOf = async (uid: string) => fixture.cri.listContainers({ labelSelector: { [Label.podUid]: uid } });

    it('fails the pod when its init container fails under restartPolicy Never, never starting the app', async () => {
      const pod = await fixture.agent.waitForPod('init-fails', (p) => p.status?.phase === 'Failed');
      expect(containerStatus(pod, 'setup')?.state.terminated?.exitCode).toBe(3);
      expect(containerStatus(pod, 'app')?.state.running).toBeUndefined();
      const containers = await containersOf(pod.metadata.uid);
      expect(containers.map((c) => c.metadata.name)).toEqual(['setup']);
      const sandboxes = await fixture.cri.listPodSandbox({ labelSelector: { [Label.podUid]: pod.metadata.uid } });
      expect(sandboxes.every((s) => s.state === 'SANDBOX_NOTREADY')).toBe(true);
    }, 45_000);

    it('reports ErrImageNeverPull for a missing image under imagePullPolicy Never', async () => {
      const pod = await fixture.agent.waitForPod('never-pull', (p) => containerStatus(p, 'app')?.state.waiting?.reason === 'ErrImageNeverPull');
      expect(containerStatus(pod, 'app')?.state.waiting?.message).toBe(
        'Container image "statelet.local/doesnotexist:1" is not present with pull policy of Never',
      );
      expect(pod.status?.phase).toBe('Pending');
      expect(await containersOf(pod.metadata.uid)).toEqual([]);
    }, 45_000);

    it('lets a container that exits 0 under OnFailure complete: the pod Succeeds and is not restarted', async () => {
      const pod = await fixture.agent.waitForPod('completes', (p) => p.status?.phase === 'Succeeded');
      const job = containerStatus(pod, 'job');
      expect(job?.state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
      expect(job?.restartCount).toBe(0);
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'PodCompleted' });
      expect(await containersOf(pod.metadata.uid)).toHaveLength(1);
    }, 45_000);
  });
}
