#!/usr/bin/env node
// `npm run build`: the package users run. Compiles src/ into a fresh dist/ (stale files of moved
// sources must not linger), copies the files the code loads at run time beside their modules (the
// CRI proto), and bundles the visualizer page into visualizer/dist/. Run by `npm pack` (prepack).
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const src = path.join(root, 'src');
const dist = path.join(root, 'dist');
const node = process.execPath;

rmSync(dist, { recursive: true, force: true });
execFileSync(node, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

/** Files under src/ that the code reads at run time (`new URL('./x', import.meta.url)`). */
const assetPattern = /\.proto$/;
function* assets(dir) {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* assets(full);
    else if (assetPattern.test(name)) yield full;
  }
}
for (const file of assets(src)) cpSync(file, path.join(dist, path.relative(src, file)));

execFileSync(node, ['--import', 'tsx', path.join(root, 'visualizer/build.ts')], { stdio: 'inherit', cwd: root });
console.log('statelet built into dist/ and visualizer/dist/');
