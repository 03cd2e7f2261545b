/**
 * The runtime's container event stream (CRI GetContainerEvents), read for the evented PLEG: holds
 * the stream open, hands each event on, and says why it ended. containerd 1.6 answers
 * UNIMPLEMENTED, which is reported as such so that the PLEG stops asking; any other end (the
 * runtime restarted, the stream closed) is an ordinary failure the PLEG retries.
 */
import type { StreamEnd } from '../events.ts';
import { CriError, type ContainerEvent, type RuntimeService } from '../runtime/types.ts';

export async function watchContainerEvents(
  runtime: RuntimeService,
  signal: AbortSignal,
  onEvent: (event: ContainerEvent) => void,
): Promise<StreamEnd> {
  try {
    for await (const event of runtime.containerEvents({ signal })) onEvent(event);
    return { unimplemented: false, error: 'the runtime ended the container event stream' };
  } catch (err) {
    return {
      unimplemented: err instanceof CriError && err.code === 'UNIMPLEMENTED',
      error: err instanceof Error ? err.message : String(err),
    };
  }
}
