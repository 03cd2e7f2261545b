import { defineConfig } from 'vitest/config';

// The short reliability suite (test/chaos/short.ts), outside `npm test` while the non-convergence
// it saw once under CI load is diagnosed (docs/reliability.md): `npm run chaos:short`.
export default defineConfig({
  test: {
    include: ['test/chaos/short.ts'],
    testTimeout: 15 * 60_000,
    hookTimeout: 180_000,
    maxWorkers: 1,
  },
});
