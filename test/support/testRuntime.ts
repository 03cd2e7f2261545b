/**
 * The runtime of the machine and effect tests: the simulated runtime's engine (the one CRI
 * emulation, the same `sim://` serves) answered in process (`inProcessRuntime`), behind the test
 * kit's fault injector (faults.ts: scripted failures, held calls, the call log), plus the engine's
 * own handles a test reaches for:
 * crash a container, load or take away an image, take the pod network away (NetworkReady false),
 * look at a container or sandbox without a call.
 * Images load with no pull delay, so a test on a simulated clock need not advance it for pulls.
 */
import { type Clock, realClock } from '../../src/clock.ts';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { inProcessRuntime } from './inProcessRuntime.ts';
import type { CallOptions, ContainerEvent, ContainerStatus, ImageInfo, ImageService, PodSandboxStatus, RuntimeService } from '../../src/runtime/types.ts';
import { FaultInjector } from './faults.ts';

export interface TestRuntimeOptions {
  /** The engine's clock (its sleeps, stop timeouts and timestamps); the wall clock by default. */
  clock?: Clock;
}

/** Its CRI calls are the injector's over the in-process engine (the constructor gives them). */
export interface TestRuntime extends RuntimeService, ImageService {}

export class TestRuntime extends FaultInjector {
  readonly engine: SimEngine;
  private readonly faulty: RuntimeService & ImageService;

  constructor(options: TestRuntimeOptions = {}) {
    super();
    this.engine = new SimEngine({ clock: options.clock ?? realClock, pullDelayMs: 0 });
    this.faulty = this.runtime(inProcessRuntime(this.engine));
    const { containerEvents: _stream, ...calls } = this.faulty;
    Object.assign(this, calls);
  }

  /** The event stream, a method of the class so that a test's subclass can script it. */
  containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent> {
    return this.faulty.containerEvents(opts);
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
    return this.engine.listContainers({ id }).length ? this.engine.containerStatusNow(id) : undefined;
  }

  getSandbox(id: string): PodSandboxStatus | undefined {
    return this.engine.listPodSandbox({ id }).length ? this.engine.podSandboxStatus(id) : undefined;
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}
