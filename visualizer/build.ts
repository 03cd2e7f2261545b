/**
 * Bundles the visualizer page (`visualizer/src/main.ts`, elkjs included) with esbuild into
 * `visualizer/dist/` (`index.html`, `main.js`), which the agent serves at `/`. No CDN: the page
 * works offline. Run by `npm run build:visualizer` (and before `npm start` / `npm test`).
 */
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

const here = import.meta.dirname;
export const distDir = path.join(here, 'dist');

export async function buildVisualizer(): Promise<void> {
  await mkdir(distDir, { recursive: true });
  await build({
    entryPoints: [path.join(here, 'src/main.ts')],
    outfile: path.join(distDir, 'main.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    logLevel: 'warning',
  });
  await copyFile(path.join(here, 'index.html'), path.join(distDir, 'index.html'));
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.join(here, 'build.ts')) {
  await buildVisualizer();
  console.log(`visualizer page built into ${path.relative(process.cwd(), distDir) || distDir}`);
}
