#!/usr/bin/env node
// Runs the compiled agent when it has been built (`npm run build`), else the TypeScript sources.
import { existsSync } from 'node:fs';
import { register } from 'node:module';

const compiled = new URL('../dist/main.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  register('tsx/esm', import.meta.url);
  await import(new URL('../src/main.ts', import.meta.url).href);
}
