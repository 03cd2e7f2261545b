#!/usr/bin/env node
// Runs the compiled agent (dist/, as installed from the package or after `npm run build`); in a
// checkout without a build, the TypeScript sources through tsx (a devDependency), registered with
// its API so it works on every supported Node.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/main.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/main.ts', import.meta.url).href);
}
