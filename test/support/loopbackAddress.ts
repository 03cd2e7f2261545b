/**
 * The node address the conformance runner and the benchmark give their agent: an address of its
 * own on `lo`, so that the agent's server and the pods' host network are the node's, not 127.0.0.1.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Adds `ip`/32 to `lo` and returns what removes it. A run killed before its cleanup leaves the
 * address behind; the next run takes it over (and removes it at its end) rather than failing.
 */
export async function addLoopbackAddress(ip: string): Promise<() => Promise<void>> {
  await run('ip', ['addr', 'add', `${ip}/32`, 'dev', 'lo']).catch((err: unknown) => {
    if (!String((err as { stderr?: unknown }).stderr).includes('Address already assigned')) throw err;
    console.error(`${ip} was already on lo (left by a run that did not end): taken over`);
  });
  return async () => {
    await run('ip', ['addr', 'del', `${ip}/32`, 'dev', 'lo']).catch(() => undefined);
  };
}
