#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=2 --single-threaded-gc --heap-growing-percent=30
// The young generation's semi-spaces are held to 2 MB each (V8 grows them to 16 MB under a burst of
// allocation and keeps them): a long-running agent whose pod starts allocate in bursts holds
// ~13 MB less with 100 pods at the same CPU. glibc's malloc keeps up to two arenas rather than one
// per thread that allocates (Node's worker threads, libuv's pool): ~6 MB less with 100 pods, at
// the same CPU (docs/benchmarks.md, the agent bench). The collector runs on the agent's own
// thread (--single-threaded-gc): at rest with 1,000 sim:// pods V8's helper threads, one per
// core, spent nearly as much CPU as the agent's thread (4.4 and 4.6 % of a core; 6.5 % in all
// without them, RSS 336 → 252 MB), CPU a node's workloads need, for pauses an agent does not need
// shorter; a containerd burst of 100 pods costs the same CPU either way. After each full
// collection the old generation may grow to 1.3 times what it kept (--heap-growing-percent=30)
// before the next: V8's own factor climbs towards 4 for a large heap that allocates steadily, and
// `--nodes=100` with 3,000 sim:// pods held ~670 MB at rest (ranging 610–730) where it holds ~380
// MB with the flag, for ~2 % of a core more at rest (full collections come more often; CPU per pod
// start the same; docs/benchmarks.md, the scale bench). A small heap is left to V8: its next
// collection is at least 8 MB away (one containerd node, 100 pods: RSS 97 against 107 MB, CPU the
// same).
// Runs the built agent (dist/: one bundle in chunks, as installed from the package or after
// `npm run build`; scripts/build.mjs says why a bundle); in a checkout without a build, the
// TypeScript sources through tsx (a devDependency), registered with its API so it works on every
// supported Node.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/main.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/main.ts', import.meta.url).href);
}
