/** Lifecycle test support: a sleep on a SimulatedClock, a loopback HTTP server, runtime deps. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SimulatedClock } from 'xstate';
import { type Sleep, sleepOn } from '../../src/clock.ts';
import type { Pod } from '../../src/api/types.ts';
import { executePlan } from '../../src/kuberuntime/execute.ts';
import type { PodWork } from '../../src/kuberuntime/podWork.ts';
import type { ExecuteResult } from '../../src/kuberuntime/startContainer.ts';
import { type HookIO, nodeHttpGet } from '../../src/kuberuntime/hooks.ts';
import type { RuntimeContainerStatus } from '../../src/api/runtimeView.ts';
import { readPodStatus } from '../../src/kuberuntime/podStatus.ts';
import { computePodActions } from '../../src/kuberuntime/computePodActions.ts';
import { TestRuntime } from '../support/testRuntime.ts';
import type { CallOptions } from '../../src/runtime/types.ts';
import { IMAGE, fakePodWork, testClock } from '../support/pods.ts';
import { RecordedEvents } from '../support/recordedEvents.ts';

/** The node's sleep on the SimulatedClock; `pending` counts sleeps not yet over. */
export function clockSleep(clock: SimulatedClock): { sleep: Sleep; readonly pending: number } {
  let pending = 0;
  const onClock = sleepOn(clock);
  const sleep: Sleep = (ms, signal) => {
    pending += 1;
    return onClock(ms, signal).finally(() => (pending -= 1));
  };
  return {
    sleep,
    get pending() {
      return pending;
    },
  };
}

export interface LifecycleRig {
  clock: SimulatedClock;
  runtime: TestRuntime;
  sleeps: ReturnType<typeof clockSleep>;
  hookIO: HookIO;
  deps: PodWork;
  logs: { level: string; message: string; fields: Record<string, unknown> }[];
  events: RecordedEvents;
}

/** A TestRuntime and runtime deps whose clock, sleeps included, is a SimulatedClock; HTTP is real. */
export function lifecycleRig(): LifecycleRig {
  const clock = testClock();
  const now = () => clock.now();
  const runtime = new TestRuntime({ clock });
  runtime.addImage(IMAGE);
  const sleeps = clockSleep(clock);
  const hookIO: HookIO = { sleep: sleeps.sleep, httpGet: nodeHttpGet };
  const logs: LifecycleRig['logs'] = [];
  const events = new RecordedEvents();
  const work = fakePodWork(runtime, now, (level, message, fields) => logs.push({ level, message, fields: fields ?? {} }), events);
  const deps: PodWork = { ...work, host: { ...work.host, hookIO } };
  return { clock, runtime, sleeps, hookIO, deps, logs, events };
}

export interface RecordedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

/** A loopback HTTP server answering `status(path)`; close it after the test. */
export async function loopbackServer(status: (path: string) => number = () => 200) {
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    res.statusCode = status(req.url ?? '');
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** One sync's worth of plan execution for the pod (what syncPod does between its two reads). */
export async function syncOnce(rig: LifecycleRig, pod: Pod, opts: CallOptions = {}): Promise<ExecuteResult> {
  const status = await readPodStatus(rig.runtime, pod.metadata.uid ?? '', opts);
  return executePlan(rig.deps, pod, status, computePodActions(pod, status), { backoff: {}, reasons: {} }, opts);
}

/** The pod's containers as the runtime has them, by name. */
export async function containersByName(rig: LifecycleRig, pod: Pod): Promise<Map<string, RuntimeContainerStatus>> {
  const status = await readPodStatus(rig.runtime, pod.metadata.uid ?? '');
  return new Map([...status.containers].reverse().map((c) => [c.name, c]));
}
