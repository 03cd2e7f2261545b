/**
 * Probes on the real agent and the simulated runtime: the statelet command with a static pod whose
 * readiness exec probe (`test -e /tmp/ready`, run through ExecSync) passes once the container has
 * touched the file, and whose liveness probe fails until the container is restarted.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { runStatelet } from '../support/agentProcess.ts';

const image = 'statelet.local/busybox:1';
const readyCondition = (pod: Pod) => pod.status?.conditions?.find((c) => c.type === 'Ready')?.status;

describe('probes on sim://', () => {
  it('readiness follows an exec probe; a failing liveness probe restarts the container', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-probes-'));
    const manifest = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'probed', namespace: 'default' },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'main',
            image,
            command: ['sh', '-c', 'sleep 2; touch /tmp/ready; sleep infinity'],
            readinessProbe: { exec: { command: ['test', '-e', '/tmp/ready'] }, periodSeconds: 1, failureThreshold: 1 },
          },
          {
            name: 'sick',
            image,
            command: ['sh', '-c', 'sleep infinity'],
            livenessProbe: { exec: { command: ['test', '-e', '/tmp/alive'] }, periodSeconds: 1, failureThreshold: 2, terminationGracePeriodSeconds: 1 },
          },
        ],
      },
    };
    await writeFile(path.join(dir, 'probed.json'), JSON.stringify(manifest));
    const agent = await runStatelet(['--container-runtime-endpoint', 'sim://', '--pod-manifest-path', dir]);
    try {
      const running = await agent.waitForPod('probed', (p) => p.status?.phase === 'Running', 15_000);
      expect(readyCondition(running)).toBe('False');
      await agent.waitForPod(
        'probed',
        (p) => p.status?.containerStatuses?.find((c) => c.name === 'main')?.ready === true,
        15_000,
      );
      await agent.waitForPod('probed', (p) => (p.status?.containerStatuses?.find((c) => c.name === 'sick')?.restartCount ?? 0) >= 1, 20_000);
      await agent.waitForLog(/Unhealthy.*Liveness probe failed/, 5_000);
    } finally {
      await agent.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
