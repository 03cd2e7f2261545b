import type { CriErrorCode } from '../types.ts';

/**
 * A failed sim runtime call. The gRPC server turns `code` into the status code a real runtime
 * would return, so the agent's error handling (NOT_FOUND on a vanished container, …) is exercised.
 */
export class SimError extends Error {
  override readonly name = 'SimError';
  constructor(
    readonly code: CriErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** An error's message, for one SimError that wraps it. */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
