/**
 * Bundles the visualizer page (`visualizer/src/main.ts`, elkjs included) with esbuild into
 * `visualizer/dist/` (`index.html`, `main.js`), which the agent serves at `/`. No CDN: the page
 * works offline. Run by `npm run build:visualizer` (and before `npm start` / `npm test`).
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

const here = import.meta.dirname;
export const distDir = path.join(here, 'dist');

/**
 * Writes a file whole under its name (a temporary file renamed over it): the agent, or a test's,
 * may serve the page while another build rewrites it, and must never read half a file.
 */
async function replaceFile(file: string, contents: string | Uint8Array): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, contents);
  await rename(temporary, file);
}

export async function buildVisualizer(): Promise<void> {
  await mkdir(distDir, { recursive: true });
  const bundle = await build({
    entryPoints: [path.join(here, 'src/main.ts')],
    outfile: path.join(distDir, 'main.js'),
    write: false,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    logLevel: 'warning',
  });
  for (const file of bundle.outputFiles) await replaceFile(file.path, file.contents);
  await replaceFile(path.join(distDir, 'index.html'), await readFile(path.join(here, 'index.html')));
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.join(here, 'build.ts')) {
  await buildVisualizer();
  console.log(`visualizer page built into ${path.relative(process.cwd(), distDir) || distDir}`);
}
