/**
 * For tests that give files to another group (chown, the fsGroup of a pod's volumes): only root
 * may. CI runs as root; elsewhere such a test is skipped with a loud message, and under CI=true it
 * fails instead of being skipped (as `rootOrSkip` in smallFilesystem.ts does for mounts).
 */
export function asRootOrSkip(what: string): boolean {
  if (process.getuid?.() === 0) return true;
  const message = `${what} needs root to give files to another group (chown); it is SKIPPED here — run it as root, as CI does`;
  if (process.env.CI === 'true') throw new Error(message.replace('it is SKIPPED here', 'CI must not skip it'));
  console.warn(`\n*** ${message} ***\n`);
  return false;
}
