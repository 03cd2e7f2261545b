/** The command line as the CLI tests read it: argv in, a run's config (or the usage error) out, on a host of the given name. */
import { UsageError, parseCommandLine } from '../../src/cli/flags.ts';
import type { AgentConfig } from '../../src/cli/config.ts';

export function commandLine(hostname: string) {
  const env = { hostname: () => hostname };
  return {
    /** Parses argv and insists on a run result, so each test reads as "flags in, config out". */
    run(argv: string[]): { config: AgentConfig; warnings: string[] } {
      const result = parseCommandLine(argv, env);
      if (result.kind !== 'run') throw new Error(`expected a run result, got ${result.kind}`);
      return result;
    },
    /** The UsageError argv gives; fails the test when there is none. */
    usageError(argv: string[]): string {
      try {
        parseCommandLine(argv, env);
      } catch (error) {
        if (error instanceof UsageError) return error.message;
        throw error;
      }
      throw new Error(`expected UsageError for ${argv.join(' ')}`);
    },
  };
}
