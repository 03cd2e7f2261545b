/**
 * Files of the statelet package that the code reads at run time (its package.json, the
 * visualizer's page), found from the package's directory: the nearest one above this module that
 * holds a package.json. The same from the sources (src/, run by tsx) and from the build, whose
 * bundle sits in dist/ at another depth than the source file it came from (scripts/build.mjs).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/** The package's directory. */
export function packageDir(): string {
  if (root !== undefined) return root;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}: statelet's package is incomplete`);
    dir = parent;
  }
  root = dir;
  return dir;
}

/** A path inside the package, e.g. `packageFile('visualizer/dist')`. */
export function packageFile(relative: string): string {
  return path.join(packageDir(), relative);
}
