/**
 * A standalone node (no API server) admits its static pods against the Node it would register,
 * computed from the machine, as the kubelet does (getNodeAnyWay → initialNode): a pod asking for
 * more CPUs than any machine has is rejected with OutOfcpu, and one that fits runs beside it.
 * Through the `statelet` command on sim://, observed on `/pods`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runStatelet } from '../support/agentProcess.ts';

const image = 'statelet.local/busybox:1';
const pod = (name: string, cpu: string) => `
apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  containers:
    - name: app
      image: ${image}
      command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
      resources: { requests: { cpu: "${cpu}" } }
`;

describe('a standalone node on sim://', () => {
  it('rejects a static pod asking for 100,000 CPUs with OutOfcpu and runs one that fits', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-standalone-'));
    await writeFile(path.join(dir, 'huge.yaml'), pod('huge', '100000'));
    await writeFile(path.join(dir, 'small.yaml'), pod('small', '100m'));
    const agent = await runStatelet(['--container-runtime-endpoint', 'sim://', '--pod-manifest-path', dir]);
    try {
      const huge = await agent.waitForPod('huge', (p) => p.status?.phase === 'Failed');
      const cores = os.availableParallelism();
      expect(huge.status).toMatchObject({
        phase: 'Failed',
        reason: 'OutOfcpu',
        message: `Pod was rejected: Node didn't have enough resource: cpu, requested: 100000000, used: 0, capacity: ${cores * 1000}`,
      });
      expect(huge.status?.containerStatuses ?? []).toEqual([]);
      await agent.waitForPod('small', (p) => p.status?.phase === 'Running');
      // The kubelet's event on the pod (a standalone node logs its events).
      expect(await agent.waitForLog(/OutOfcpu/)).toContain('default/huge-e2e-node');
    } finally {
      await agent.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
