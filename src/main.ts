/**
 * `statelet`: parse the kubelet-style command line, start the agent, stop it cleanly on SIGTERM
 * or SIGINT (pods keep running, as with the kubelet).
 */
import { startAgent } from './agent/agent.ts';
import { startNodes } from './agent/nodes.ts';
import { ConfigFileError } from './cli/kubeletConfig.ts';
import { UsageError, parseCommandLine } from './cli/flags.ts';
import type { AgentConfig } from './cli/config.ts';
import { type Logger, createLogger } from './log.ts';
import { applyProcessLimits } from './node/processLimits.ts';

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseCommandLine(argv);
  } catch (err) {
    if (err instanceof UsageError || err instanceof ConfigFileError) {
      process.stderr.write(`statelet: ${err.message}\nRun 'statelet --help' for usage.\n`);
      // The kubelet exits 1 for any error before it runs (cmd/kubelet/kubelet.go main, cli.Run).
      return 1;
    }
    throw err;
  }
  if (parsed.kind !== 'run') {
    process.stdout.write(parsed.text.endsWith('\n') ? parsed.text : `${parsed.text}\n`);
    return 0;
  }
  const { config } = parsed;
  const log = createLogger({ format: config.logFormat, verbosity: config.verbosity });
  for (const warning of parsed.warnings) log('warn', warning);
  // The process's own limits, once, whatever runs in it (one node or --nodes).
  await applyProcessLimits(config, log);

  // Listen for the stop signal before starting anything, so that a signal during startup still
  // ends in a clean stop rather than the default abrupt exit.
  const stopRequested = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  // A start still waiting (a TLS bootstrap waiting for its certificate) stops waiting on the signal.
  const starting = new AbortController();
  void stopRequested.then((signal) => starting.abort(new Error(`${signal} during the start`)));
  let stop: () => Promise<void>;
  try {
    stop = config.nodes > 1 ? await runNodes(config, log, starting.signal) : await runAgent(config, log, starting.signal);
  } catch (err) {
    if (!starting.signal.aborted) throw err;
    log('info', 'Stopped before the start finished', { reason: (starting.signal.reason as Error).message });
    return 0;
  }
  const signal = await stopRequested;
  log('info', 'Stopping; pods keep running', { signal });
  await stop();
  return 0;
}

/** One node: says where it serves, and returns its stop. */
async function runAgent(config: AgentConfig, log: Logger, signal: AbortSignal): Promise<() => Promise<void>> {
  const agent = await startAgent(config, log, { signal });
  log('info', 'statelet is running', {
    node: config.nodeName,
    runtime: agent.runtimeEndpoint,
    manifests: config.podManifestPath ?? null,
    pods: agent.readOnlyUrl ? `${agent.readOnlyUrl}/pods` : null,
    healthz: agent.healthzUrl ? `${agent.healthzUrl}/healthz` : null,
    visualizer: agent.visualizerUrl ?? null,
  });
  if (agent.readOnlyUrl) process.stdout.write(`statelet: pods at ${agent.readOnlyUrl}/pods\n`);
  if (agent.visualizerUrl) process.stdout.write(`statelet: live statecharts at ${agent.visualizerUrl}/\n`);
  return () => agent.stop();
}

/** --nodes=N simulated nodes in this process (src/agent/nodes.ts). */
async function runNodes(config: AgentConfig, log: Logger, signal: AbortSignal): Promise<() => Promise<void>> {
  const nodes = await startNodes(config, log, signal);
  const first = nodes.agents[0]!;
  log('info', 'statelet is running', { nodes: nodes.agents.length, first: `${config.nodeName}-0`, last: `${config.nodeName}-${config.nodes - 1}`, visualizer: nodes.visualizerUrl ?? null });
  if (first.readOnlyUrl) process.stdout.write(`statelet: pods of ${config.nodeName}-0 at ${first.readOnlyUrl}/pods (each node at the next address)\n`);
  if (nodes.visualizerUrl) process.stdout.write(`statelet: live statecharts of all ${config.nodes} nodes at ${nodes.visualizerUrl}/\n`);
  return () => nodes.stop();
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`statelet: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
