#!/usr/bin/env node
// `npm run build`: the package users run. Type-checks src/, bundles it with its dependencies into a
// fresh dist/ (stale files must not linger), copies the files the code loads at run time beside the
// bundle (the CRI proto), and bundles the visualizer page into visualizer/dist/. Run by `npm pack`
// (prepack).
//
// Why a bundle rather than one compiled file per source: Node keeps a record, the source text and
// the compiled code of every module it loads; loaded file by file, @kubernetes/client-node's
// generated modules alone added ~75 MB to the agent's RSS (docs/benchmarks.md). Bundled, only
// what the code reaches is kept: the agent takes the library's kubeconfig handling and Watch, not
// its models. The bundle is split where the code imports lazily, so the API client's chunk is
// loaded only by an agent that has a kubeconfig, and the Stately inspector's only when asked for.
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const root = path.resolve(import.meta.dirname, '..');
const src = path.join(root, 'src');
const dist = path.join(root, 'dist');
const node = process.execPath;

rmSync(dist, { recursive: true, force: true });
execFileSync(node, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json'), '--noEmit'], { stdio: 'inherit' });

await build({
  entryPoints: { main: path.join(src, 'main.ts') },
  outdir: dist,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Whitespace and syntax only: names stay as written, so stack traces and `constructor.name`
  // read as in the sources (with `--enable-source-maps`, at their source lines).
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
  // CommonJS dependencies inside an ES module bundle still call require() for Node's modules.
  banner: { js: "import { createRequire as __stateletRequire } from 'node:module'; const require = __stateletRequire(import.meta.url);" },
});

/** Files under src/ that the code reads at run time (`new URL('./x', import.meta.url)`), put beside the bundle. */
const assetPattern = /\.proto$/;
function* assets(dir) {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* assets(full);
    else if (assetPattern.test(name)) yield full;
  }
}
for (const file of assets(src)) cpSync(file, path.join(dist, path.basename(file)));

execFileSync(node, ['--import', 'tsx', path.join(root, 'visualizer/build.ts')], { stdio: 'inherit', cwd: root });
console.log('statelet built into dist/ and visualizer/dist/');
