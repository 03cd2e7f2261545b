/**
 * `statelet`: parse the kubelet-style command line, start the agent, stop it cleanly on SIGTERM
 * or SIGINT (pods keep running, as with the kubelet).
 */
import { startAgent } from './agent/agent.ts';
import { ConfigFileError } from './cli/kubeletConfig.ts';
import { UsageError, parseCommandLine } from './cli/flags.ts';
import { createLogger } from './log.ts';

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseCommandLine(argv);
  } catch (err) {
    if (err instanceof UsageError || err instanceof ConfigFileError) {
      process.stderr.write(`statelet: ${err.message}\nRun 'statelet --help' for usage.\n`);
      return 2;
    }
    throw err;
  }
  if (parsed.kind !== 'run') {
    process.stdout.write(parsed.text.endsWith('\n') ? parsed.text : `${parsed.text}\n`);
    return 0;
  }
  const { config } = parsed;
  const log = createLogger({ format: config.logFormat, verbosity: config.verbosity });
  for (const warning of parsed.warnings) log('warn', 'Ignoring config file field', { warning });

  // Listen for the stop signal before starting anything, so that a signal during startup still
  // ends in a clean stop rather than the default abrupt exit.
  const stopRequested = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  const agent = await startAgent(config, log);
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

  const signal = await stopRequested;
  log('info', 'Stopping; pods keep running', { signal });
  await agent.stop();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`statelet: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
