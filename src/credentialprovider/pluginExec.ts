/**
 * Runs one credential provider plugin once (plugin.go execPlugin.ExecPlugin, runPlugin): the
 * request on stdin, the config's args, the agent's environment with the config's env on top, and
 * a deadline (the kubelet's is one minute). Resolves with the decoded response; rejects with the
 * kubelet's message, which names the plugin and the image and adds the plugin's stderr.
 */

import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Clock } from '../clock.ts';
import type { ExecEnvVar } from './pluginConfig.ts';
import { type CredentialProviderResponse, type ServiceAccountRequestFields, decodeResponse, encodeRequest } from './pluginProtocol.ts';

/** plugin.go ExecPlugin's catch-all timeout for every exec plugin. */
export const PLUGIN_TIMEOUT_MS = 60_000;

export interface PluginCommand {
  name: string;
  binDir: string;
  apiVersion: string;
  args: readonly string[];
  env: readonly ExecEnvVar[];
}

export interface ExecOptions {
  clock: Clock;
  timeoutMs: number;
  /** The agent's environment, which the config's env extends and overrides (plugin.go mergeEnvVars). */
  environ: NodeJS.ProcessEnv;
}

/** Starts the plugin now (synchronously, so its deadline is on the clock when this returns). */
export function execPlugin(command: PluginCommand, image: string, options: ExecOptions, serviceAccount?: ServiceAccountRequestFields): Promise<CredentialProviderResponse> {
  const failure = (reason: string, stderr: string) =>
    new Error(`error execing credential provider plugin ${command.name} for image ${image}: ${reason}: ${stderr}`);
  const env: NodeJS.ProcessEnv = { ...options.environ };
  for (const variable of command.env) env[variable.name] = variable.value;
  const binary = path.join(command.binDir, command.name);

  return new Promise((resolve, reject) => {
    const child = spawn(binary, [...command.args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let deadlinePassed = false;
    let startError: NodeJS.ErrnoException | undefined;
    const deadline = options.clock.setTimeout(() => {
      deadlinePassed = true;
      child.kill('SIGKILL');
    }, options.timeoutMs);

    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    // A plugin may exit without reading its request; the broken pipe is not the error to report.
    child.stdin.on('error', () => {});
    child.stdin.end(encodeRequest(command.apiVersion, image, serviceAccount));
    child.on('error', (error: NodeJS.ErrnoException) => {
      startError = error;
    });
    child.on('close', (code, signal) => {
      options.clock.clearTimeout(deadline);
      const errText = Buffer.concat(stderr).toString('utf8');
      // As runPlugin: the context's error wins over the process's.
      if (deadlinePassed) return reject(failure('context deadline exceeded', errText));
      if (startError !== undefined) return reject(failure(`fork/exec ${binary}: ${errnoText(startError)}`, errText));
      if (signal !== null) return reject(failure(`signal: ${signalText(signal)}`, errText));
      if (code !== 0) return reject(failure(`exit status ${code}`, errText));
      try {
        resolve(decodeResponse(command.apiVersion, Buffer.concat(stdout).toString('utf8')));
      } catch (error) {
        reject(error);
      }
    });
  });
}

/** Go's text for the errno a failed start gives. */
function errnoText(error: NodeJS.ErrnoException): string {
  if (error.code === 'ENOENT') return 'no such file or directory';
  if (error.code === 'EACCES') return 'permission denied';
  if (error.code === 'ENOEXEC') return 'exec format error';
  return error.message;
}

/** Go's os.ProcessState text for the signals a plugin is usually ended by. */
function signalText(signal: NodeJS.Signals): string {
  if (signal === 'SIGKILL') return 'killed';
  if (signal === 'SIGTERM') return 'terminated';
  if (signal === 'SIGSEGV') return 'segmentation fault';
  return signal;
}
