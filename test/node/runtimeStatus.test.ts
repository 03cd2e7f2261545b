/**
 * The runtime's Status as the syncLoop polls it (kubelet.go updateRuntimeUp): each answer's
 * runtime handlers are handed on, an empty list where the runtime reports none
 * (kuberuntime_manager.go toKubeRuntimeStatus), and nothing when the call fails.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { runtimeStatusReader } from '../../src/node/runtimeStatus.ts';
import { TestRuntime } from '../support/testRuntime.ts';

describe('the runtime status reader', () => {
  it("answers with the Status's runtime handlers beside its conditions, and rejects when the Status fails", async () => {
    const runtime = new TestRuntime();
    const read = runtimeStatusReader(runtime, 1_000, silentLogger);
    const answer = await read(new AbortController().signal);
    expect(answer.handlers.map((h) => h.name)).toEqual(['', 'runc', 'test-handler']);
    expect(answer.conditions.map((c) => c.type)).toContain('NetworkReady');

    runtime.failNext('status', 'UNAVAILABLE', 'connection refused');
    await expect(read(new AbortController().signal)).rejects.toThrow();
    await runtime.close();
  });

  it('answers with an empty list of handlers from a runtime that reports none (containerd 1.6)', async () => {
    const runtime = new TestRuntime();
    const status = runtime.status.bind(runtime);
    runtime.status = async (opts) => {
      const { runtimeHandlers: _none, ...rest } = await status(opts);
      return rest;
    };
    const answer = await runtimeStatusReader(runtime, 1_000, silentLogger)(new AbortController().signal);
    expect(answer.handlers).toEqual([]);
    await runtime.close();
  });
});
