/**
 * The agent started in this process on `sim://`, with a fresh manifest directory, parsed from a
 * real command line so that tests exercise the same flags a user gives. For tests that need the
 * agent's internals (its inspect hook, its view) rather than a child process.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Agent, startAgent } from '../../src/agent/agent.ts';
import { parseCommandLine } from '../../src/cli/flags.ts';
import { silentLogger } from '../../src/log.ts';
import { removeAgentDir } from './removeAgentDir.ts';

export interface SimAgent {
  agent: Agent;
  /** The static pod directory the agent watches. */
  manifests: string;
  stop(): Promise<void>;
}

/**
 * Starts the agent with node name `<node>`, the `files` already in its manifest directory, and
 * `extraArgs` after the defaults (read-only and healthz ports off, loopback address).
 */
export async function startSimAgent(node: string, extraArgs: string[] = [], files: Record<string, string> = {}): Promise<SimAgent> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `statelet-${node}-`));
  const manifests = path.join(dir, 'manifests');
  await mkdir(manifests);
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(manifests, name), text);
  const parsed = parseCommandLine([
    '--container-runtime-endpoint', 'sim://',
    '--root-dir', path.join(dir, 'root'),
    '--pod-logs-dir', path.join(dir, 'logs'),
    '--pod-manifest-path', manifests,
    '--file-check-frequency', '1s',
    '--hostname-override', node,
    '--address', '127.0.0.1',
    '--port', '0',
    '--read-only-port', '0',
    '--healthz-port', '0',
    ...extraArgs,
  ]);
  if (parsed.kind !== 'run') throw new Error(`expected a run result, got ${parsed.kind}`);
  let agent: Agent;
  try {
    agent = await startAgent(parsed.config, silentLogger);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    agent,
    manifests,
    stop: async () => {
      await agent.stop();
      await removeAgentDir(dir);
    },
  };
}
