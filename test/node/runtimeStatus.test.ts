/**
 * The runtime's Status as the syncLoop polls it (kubelet.go updateRuntimeUp): each answer's
 * runtime handlers are handed on, an empty list where the runtime reports none
 * (kuberuntime_manager.go toKubeRuntimeStatus), and nothing when the call fails.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { runtimeStatusReader } from '../../src/node/runtimeStatus.ts';
import type { RuntimeHandler } from '../../src/runtime/types.ts';
import { TestRuntime } from '../support/testRuntime.ts';

describe('the runtime status reader', () => {
  it("hands on each answer's runtime handlers, and nothing when the Status fails", async () => {
    const runtime = new TestRuntime();
    const seen: (readonly RuntimeHandler[])[] = [];
    const read = runtimeStatusReader(runtime, 1_000, silentLogger, (handlers) => void seen.push(handlers));
    await read(new AbortController().signal);
    expect(seen.map((handlers) => handlers.map((h) => h.name))).toEqual([['', 'runc', 'test-handler']]);

    runtime.failNext('status', 'UNAVAILABLE', 'connection refused');
    await expect(read(new AbortController().signal)).rejects.toThrow();
    expect(seen).toHaveLength(1);
    await runtime.close();
  });

  it('hands on an empty list from a runtime that reports no handlers (containerd 1.6)', async () => {
    const runtime = new TestRuntime();
    const status = runtime.status.bind(runtime);
    runtime.status = async (opts) => {
      const { runtimeHandlers: _none, ...rest } = await status(opts);
      return rest;
    };
    const seen: (readonly RuntimeHandler[])[] = [];
    await runtimeStatusReader(runtime, 1_000, silentLogger, (handlers) => void seen.push(handlers))(new AbortController().signal);
    expect(seen).toEqual([[]]);
    await runtime.close();
  });
});
