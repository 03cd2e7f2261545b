/**
 * The runtime of the machine and effect tests: the simulated runtime's engine (the one CRI
 * emulation, the same `sim://` serves) answered in process (`InProcessRuntime`), behind the fault
 * and call-recording decorator (`FaultyRuntime`), plus the engine's own handles a test reaches for:
 * crash a container, load or take away an image, take the pod network away (NetworkReady false),
 * look at a container or sandbox without a call.
 * Images load with no pull delay, so a test on a simulated clock need not advance it for pulls.
 */
import { type Clock, realClock } from '../../src/clock.ts';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { InProcessRuntime } from './inProcessRuntime.ts';
import type { ContainerStatus, ImageInfo, PodSandboxStatus } from '../../src/runtime/types.ts';
import { FaultyRuntime } from './faultyRuntime.ts';

export interface TestRuntimeOptions {
  /** The engine's clock (its sleeps, stop timeouts and timestamps); the wall clock by default. */
  clock?: Clock;
}

export class TestRuntime extends FaultyRuntime {
  readonly engine: SimEngine;

  constructor(options: TestRuntimeOptions = {}) {
    const engine = new SimEngine({ clock: options.clock ?? realClock, pullDelayMs: 0 });
    const runtime = new InProcessRuntime(engine);
    super(runtime, runtime);
    this.engine = engine;
  }

  /** The container's process ends with `exitCode` now, as a crash would. */
  exitContainer(containerId: string, exitCode: number): void {
    this.engine.crashContainer(containerId, exitCode);
  }

  /** Puts the image in the runtime's store, as an import would. */
  addImage(image: string): ImageInfo {
    return this.engine.images.load(image);
  }

  /** Takes the image out of the simulated registry: its pulls fail with NOT_FOUND. */
  failPull(image: string): void {
    this.engine.images.setMissing(image);
  }

  /** Status reports NetworkReady false (containerd's reason and message by default), or true again. */
  setNetworkReady(ready: boolean, reason?: string, message?: string): void {
    this.engine.setNetworkReady(ready, reason, message);
  }

  getContainer(id: string): ContainerStatus | undefined {
    return this.engine.listContainers({ id }).length ? this.engine.containerStatus(id) : undefined;
  }

  getSandbox(id: string): PodSandboxStatus | undefined {
    return this.engine.listPodSandbox({ id }).length ? this.engine.podSandboxStatus(id) : undefined;
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}
