/**
 * The container log manager's decision, pure (pkg/kubelet/logs/container_log_manager.go rotateLog,
 * cleanupUnusedLogs, removeExcessLogs, compressLog, rotateLatestLog): which files next to a live
 * log `<n>.log` go, which get compressed, and the name the live file moves to. Leftovers of an
 * interrupted rotation go first (`.tmp` files, uncompressed files whose `.gz` exists); then the
 * oldest rotated files beyond `maxFiles − 2`; the rest are compressed; the live file becomes
 * `<n>.log.<YYYYMMDD-hhmmss>` (left uncompressed until the next rotation, for log shippers) and
 * the runtime reopens a new one. So a container keeps at most `maxFiles` files.
 */

interface RotationPlan {
  remove: string[];
  compress: string[];
  rotatedName: string;
}

/** `20060102-150405` in UTC. */
const rotationStamp = (now: Date) => now.toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');

/** `siblings`: the names in the log's directory. */
export function rotationPlan(liveName: string, siblings: readonly string[], maxFiles: number, now: Date): RotationPlan {
  const rotated = siblings.filter((name) => name.startsWith(`${liveName}.`)).sort();
  const remove = new Set<string>();
  for (const name of rotated) {
    if (name.endsWith('.tmp')) remove.add(name);
    else if (!name.endsWith('.gz') && rotated.includes(`${name}.gz`)) remove.add(name);
  }
  const kept = rotated.filter((name) => !remove.has(name));
  const excess = kept.length - Math.max(maxFiles - 2, 0);
  for (const name of kept.slice(0, Math.max(excess, 0))) remove.add(name);
  const compress = kept.filter((name) => !remove.has(name) && !name.endsWith('.gz'));
  return { remove: [...remove], compress, rotatedName: `${liveName}.${rotationStamp(now)}` };
}
