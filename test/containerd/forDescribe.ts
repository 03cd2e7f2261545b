/** The containerd harness as a vitest `describe` uses it (kept apart: the harness serves benchmarks too). */
import { afterAll, beforeAll } from 'vitest';
import { type ContainerdInstance, startContainerd } from './harness.ts';

/**
 * A private containerd for the tests of the `describe` that calls this: started before them,
 * stopped after. Started there rather than at a file's top, so that a describe filtered out
 * (`-t sim`) leaves no daemon behind. The getter gives it, or null where it cannot run here (on CI
 * the start throws instead).
 */
export function containerdForDescribe(): () => ContainerdInstance | null {
  let containerd: ContainerdInstance | null = null;
  beforeAll(async () => {
    containerd = await startContainerd();
  }, 180_000);
  afterAll(() => containerd?.stop(), 180_000);
  return () => containerd;
}
