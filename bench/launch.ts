/**
 * How users run the agent: its binary, and the Node flags and environment its first line gives
 * it. The agent bench starts the binary so; the driver (run.ts) starts every worker so, so that a
 * worker running the agent in its own process measures it with the same Node.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The agent's binary, as users run it. */
export const STATELET_BIN = path.resolve(import.meta.dirname, '../bin/statelet.js');

/**
 * How the binary's first line (`#!/usr/bin/env -S [NAME=value …] node <flags>`) runs it: the
 * environment it sets and Node's flags, so the agent runs as when run by its name, and Node flags
 * that NODE_OPTIONS refuses (`--cpu-prof`) can still be added.
 */
export function binaryLaunch(bin: string): { env: Record<string, string>; nodeFlags: string[] } {
  const words = (readFileSync(bin, 'utf8').split('\n', 1)[0] ?? '').split(/\s+/).slice(1);
  const rest = words[0] === '-S' ? words.slice(1) : words;
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < rest.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[i]!); i++) {
    const [name, ...value] = rest[i]!.split('=');
    env[name!] = value.join('=');
  }
  return { env, nodeFlags: rest.slice(i + 1).filter(Boolean) };
}
