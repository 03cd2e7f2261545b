import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // End-to-end files start agents and runtimes; two cores run two files at a time well.
    maxWorkers: 2,
  },
});
