/**
 * The simulated runtime without gRPC: `RuntimeService` and `ImageService` answered directly by a
 * `SimEngine` (its CRI calls, behind `decorate`), with the errors the gRPC path gives (a `CriError`
 * naming the CRI call, with the engine's status code), for tests that need the runtime's behaviour
 * but not the wire. It is the same engine `sim://` serves, so both paths share one emulation of
 * CRI semantics.
 *
 * A call is answered asynchronously, as over a socket. A call whose AbortSignal has fired fails
 * with CANCELLED, as a cancelled gRPC call does; a stop or an exec under way goes on in the engine
 * (as in a real runtime) while its caller stops waiting. The event stream is the engine's own.
 */
import { optionsOf } from '../../src/runtime/criCalls.ts';
import { type Around, decorate } from '../../src/runtime/decorate.ts';
import { CriError, type ImageService, type RuntimeService } from '../../src/runtime/types.ts';
import type { SimEngine } from '../../src/runtime/sim/engine.ts';
import { SimError } from '../../src/runtime/sim/errors.ts';
import { StreamingRequestError } from '../../src/runtime/streaming/server.ts';

export function inProcessRuntime(engine: SimEngine): RuntimeService & ImageService {
  return decorate(engine, answeredAsCri);
}

/** Runs an engine call as a CRI call: asynchronously, its errors named, its signal obeyed. */
const answeredAsCri: Around = (call, args, proceed) => {
  const signal = optionsOf(call, args)?.signal;
  return new Promise((resolve, reject) => {
    const cancelled = () => reject(new CriError(call.rpc, 'CANCELLED', 'call cancelled'));
    if (signal?.aborted) return cancelled();
    signal?.addEventListener('abort', cancelled, { once: true });
    Promise.resolve()
      .then(proceed)
      .then(resolve, (error: unknown) => reject(criError(call.rpc, error)))
      .finally(() => signal?.removeEventListener('abort', cancelled));
  });
};

function criError(rpc: string, error: unknown): CriError {
  if (error instanceof SimError || error instanceof StreamingRequestError) return new CriError(rpc, error.code, error.message);
  return new CriError(rpc, 'INTERNAL', error instanceof Error ? error.message : String(error));
}
