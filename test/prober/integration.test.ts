/**
 * The whole chain on the fake runtime: the probe manager (real handlers, exec through ExecSync)
 * learns the pod from the status manager, its results go through the syncLoop and the pod workers
 * to the pod actor, whose syncs turn them into status (Ready) and kills (liveness).
 */
import { describe, expect, it, vi } from 'vitest';
import type { Probe } from '../../src/api/types.ts';
import type { LogFields } from '../../src/log.ts';
import { startFakeNode } from '../support/fakeNode.ts';
import { container, makePod } from '../support/pods.ts';

function harness() {
  const lines: { message: string; fields?: LogFields }[] = [];
  const log = (_level: string, message: string, fields?: LogFields) => void lines.push({ message, ...(fields ? { fields } : {}) });
  // The probe scheduler runs on the node's one simulated clock; first ticks half a period in.
  const { clock, runtime, statuses, podManager, syncLoop, podActor } = startFakeNode({ log, random: () => 0.5 });
  /** Advances simulated time one second at a time, letting promises settle in between. */
  const advance = async (ms: number) => {
    for (let t = 0; t < ms; t += 500) {
      clock.increment(500);
      await new Promise<void>((resolve) => setImmediate(resolve));
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  };
  return { clock, runtime, statuses, podManager, syncLoop, podActor, advance, lines };
}

const exec = (command: string[], extra: Partial<Probe> = {}): Probe => ({ exec: { command }, periodSeconds: 1, ...extra });

describe('probes end to end on the fake runtime', () => {
  it('a readiness exec probe flips Ready when the file appears', async () => {
    const h = harness();
    let ready = false;
    h.runtime.setExecHandler(() => ({ stdout: Buffer.alloc(0), stderr: Buffer.from(ready ? '' : 'no file'), exitCode: ready ? 0 : 1 }));
    h.syncLoop.send({ type: 'CONFIG.ADD', source: 'file', pods: [makePod('web', { containers: [container('main', { readinessProbe: exec(['test', '-e', '/tmp/ready'], { failureThreshold: 1 }) })] })] });
    const readyCondition = () => h.statuses.get('uid-web')?.conditions?.find((c) => c.type === 'Ready')?.status;
    await vi.waitFor(() => expect(h.statuses.get('uid-web')?.phase).toBe('Running'));
    await h.advance(3_000);
    expect(readyCondition()).toBe('False');
    ready = true;
    await h.advance(2_000);
    await vi.waitFor(() => expect(readyCondition()).toBe('True'));
    expect(h.syncLoop.getSnapshot().context.routed['PROBE.RESULT']).toBe(1);
    ready = false;
    await h.advance(2_000);
    await vi.waitFor(() => expect(readyCondition()).toBe('False'));
    expect(h.lines.some((l) => l.message === 'Unhealthy' && /Readiness probe failed: no file/.test(String(l.fields?.['message'])))).toBe(true);
  });

  it('a failing liveness probe restarts the container, with the probe grace period', async () => {
    const h = harness();
    h.runtime.setExecHandler(() => ({ stdout: Buffer.from('dead'), stderr: Buffer.alloc(0), exitCode: 1 }));
    const pod = makePod('sick', {
      terminationGracePeriodSeconds: 30,
      containers: [container('main', { livenessProbe: exec(['check'], { failureThreshold: 2, terminationGracePeriodSeconds: 4 }) })],
    });
    h.syncLoop.send({ type: 'CONFIG.ADD', source: 'file', pods: [pod] });
    await vi.waitFor(() => expect(h.statuses.get('uid-sick')?.phase).toBe('Running'));
    const [first] = await h.runtime.listContainers();
    await h.advance(3_000);
    await vi.waitFor(async () => {
      const containers = await h.runtime.listContainers();
      expect(containers.find((c) => c.id === first!.id)?.state).toBe('CONTAINER_EXITED');
      expect(containers.some((c) => c.id !== first!.id && c.state === 'CONTAINER_RUNNING')).toBe(true);
    });
    expect(h.runtime.calls.find((c) => c.method === 'stopContainer' && c.target === first!.id)?.timeoutSeconds).toBe(4);
    expect(h.lines.some((l) => l.message === 'Unhealthy' && /Liveness probe failed: dead/.test(String(l.fields?.['message'])))).toBe(true);
    await vi.waitFor(() => expect(h.statuses.get('uid-sick')?.containerStatuses?.[0]?.restartCount).toBe(1));
  });
});
