/**
 * The node's own docker config files: credentials every pod on the node may pull with, read as
 * the kubelet's default provider reads them (pkg/credentialprovider/config.go ReadDockerConfigFile,
 * provider.go defaultDockerConfigProvider.Provide behind a CachingDockerConfigProvider).
 *
 * Where: `config.json` in the kubelet's root directory (`--root-dir`, the preferred path
 * cmd/kubelet/app/server.go sets), the working directory, `~/.docker` and `/.docker`; when none of
 * them holds a valid one, the legacy `.dockercfg` in the root directory, the working directory,
 * `~` and `/` (config.go DefaultDockerConfigJSONPaths, DefaultDockercfgPaths). The first valid file
 * wins; a missing one is passed over in silence, one that cannot be read or decoded is logged by
 * its path (never its content) and the next place is tried.
 *
 * When: at the first pull that asks, then again once the answer is 5 minutes old
 * (CachingDockerConfigProvider's Lifetime): a file changed on the node counts within 5 minutes,
 * with no restart.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../log.ts';
import { type ConfigError, type CredentialSource, type DockerConfigEntry, parseDockerConfigJson, parseDockercfg } from './keyring.ts';

/** provider.go: the default provider's CachingDockerConfigProvider Lifetime. */
export const NODE_DOCKER_CONFIG_LIFETIME_MS = 5 * 60_000;

/** The directories searched, as the kubelet's variables name them (config.go). */
export interface DockerConfigDirs {
  /** `--root-dir` (SetPreferredDockercfgPath). */
  rootDir: string;
  /** The working directory (workingDirPath, "" made absolute). */
  workingDir: string;
  /** The user's home (os.UserHomeDir). */
  homeDir: string;
}

/** One place a file is looked for, and how it is decoded. */
export interface DockerConfigCandidate {
  file: string;
  format: 'config.json' | '.dockercfg';
}

/** The files looked for, in order (ReadDockerConfigFile: every config.json place, then every .dockercfg place). */
export function dockerConfigCandidates(dirs: DockerConfigDirs): DockerConfigCandidate[] {
  const json = [dirs.rootDir, dirs.workingDir, path.join(dirs.homeDir, '.docker'), '/.docker'];
  const legacy = [dirs.rootDir, dirs.workingDir, dirs.homeDir, '/'];
  return [
    ...json.map((dir): DockerConfigCandidate => ({ file: path.resolve(dir, 'config.json'), format: 'config.json' })),
    ...legacy.map((dir): DockerConfigCandidate => ({ file: path.resolve(dir, '.dockercfg'), format: '.dockercfg' })),
  ];
}

/** The node's directories as this process sees them. */
export function processDockerConfigDirs(rootDir: string): DockerConfigDirs {
  return { rootDir, workingDir: process.cwd(), homeDir: os.homedir() };
}

/** What one read found: the file it came from, and its entries by registry key; null file: none found. */
export interface NodeDockerConfig {
  file: string | null;
  entries: Map<string, DockerConfigEntry>;
}

/** Reads the first valid file of `candidates` (ReadDockerConfigFile). */
export async function readNodeDockerConfig(candidates: readonly DockerConfigCandidate[], log: Logger, read: (file: string) => Promise<Buffer> = readFile): Promise<NodeDockerConfig> {
  for (const { file, format } of candidates) {
    let bytes: Buffer;
    try {
      bytes = await read(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ENOTDIR') {
        log('warn', 'Unable to read the node docker config file', { file, err: (err as NodeJS.ErrnoException).code ?? String(err) });
      }
      continue;
    }
    const fail: ConfigError = (why) => new Error(`${file}: ${why}`);
    try {
      const entries = format === 'config.json' ? parseDockerConfigJson(bytes, fail) : parseDockercfg(bytes, fail);
      return { file, entries };
    } catch (err) {
      // The decoding error names the file and the field at fault, never a value (keyring.ts entriesOf).
      log('warn', "Unable to parse the node's docker config file, trying the next place", { file, err: err instanceof Error ? err.message : String(err) });
    }
  }
  return { file: null, entries: new Map() };
}

/**
 * The node's docker config as a keyring source: read at the first lookup, then kept for 5 minutes
 * (CachingDockerConfigProvider.Provide). Lookups while a read is under way share it.
 */
export function nodeDockerConfigSource(options: {
  candidates: readonly DockerConfigCandidate[];
  now: () => number;
  log: Logger;
  read?: (file: string) => Promise<Buffer>;
}): CredentialSource {
  let cached: { config: Promise<NodeDockerConfig>; expiresAt: number } | null = null;
  return async () => {
    const now = options.now();
    if (!cached || now >= cached.expiresAt) {
      cached = { config: readNodeDockerConfig(options.candidates, options.log, options.read), expiresAt: now + NODE_DOCKER_CONFIG_LIFETIME_MS };
    }
    const { entries } = await cached.config;
    return [...entries].map(([matchKey, entry]) => ({ matchKey, username: entry.username, password: entry.password, email: entry.email }));
  };
}
