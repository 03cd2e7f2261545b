/**
 * The images the upstream node conformance suite (e2e.test) runs, under its names, built locally
 * (nothing can be pulled) by `scripts/containerd/build-conformance-images.sh` and cached per
 * machine; `importConformanceImages(endpoint)` imports them into a containerd such as the one
 * `startContainerd()` gives, namespace k8s.io, and returns once CRI `ImageStatus` sees them all.
 * The first build takes a few minutes (busybox from Debian's source, agnhost with Go); later ones
 * find the cache.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CONFORMANCE_IMAGES = {
  agnhost: 'registry.k8s.io/e2e-test-images/agnhost:2.66.1',
  agnhostPrev: 'registry.k8s.io/e2e-test-images/agnhost:2.55',
  busybox: 'registry.k8s.io/e2e-test-images/busybox:1.37.0-2',
  pause: 'registry.k8s.io/pause:3.10.2',
  nginx: 'registry.k8s.io/e2e-test-images/nginx:1.27.0-2',
  nginxNew: 'registry.k8s.io/e2e-test-images/nginx:1.28.0-2',
} as const;

const SCRIPT = join(fileURLToPath(new URL('../../scripts/containerd/', import.meta.url)), 'build-conformance-images.sh');
/** A first build on 2 cores: ~2 min busybox, up to ~5 min agnhost with a cold Go build cache. */
const TIMEOUT_MS = 20 * 60_000;

function runScript(argv: string[]): Promise<string> {
  const env = { ...process.env, PATH: `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${process.env.PATH ?? ''}` };
  return new Promise((resolve, reject) => {
    execFile(SCRIPT, argv, { env, timeout: TIMEOUT_MS, killSignal: 'SIGTERM', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${SCRIPT} ${argv.join(' ')} failed: ${err.message}\n--- stderr ---\n${stderr.slice(-8000)}`));
      else resolve(stdout.trim().split('\n').at(-1) ?? '');
    });
  });
}

/** Builds the archives if the cache lacks them; returns the directory holding them (and images.txt). */
export function buildConformanceImages(): Promise<string> {
  return runScript([]);
}

/** Builds if need be, then imports every conformance image into the containerd at `endpoint` (`unix:///…/containerd.sock`). */
export async function importConformanceImages(endpoint: string): Promise<void> {
  await runScript(['--import', endpoint]);
}
