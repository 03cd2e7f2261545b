/**
 * The soak's window into the agent's process: the V8 inspector (the agent started with
 * `--inspect=127.0.0.1:0`), through which a full garbage collection is asked for before the heap
 * is read, so that a sample is the memory the agent still holds, not garbage not yet collected.
 */
import WebSocket from 'ws';

export class Inspector {
  private lastId = 0;
  private readonly pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();

  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
      const waiter = message.id === undefined ? undefined : this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id!);
      if (message.error) waiter.reject(new Error(message.error.message));
      else waiter.resolve(message.result);
    });
  }

  /** Connects to the inspector whose URL the process printed ("Debugger listening on ws://…"). */
  static async fromOutput(output: string): Promise<Inspector> {
    const url = /Debugger listening on (ws:\/\/\S+)/.exec(output)?.[1];
    if (!url) throw new Error('the agent printed no inspector URL: was it started with --inspect?');
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return new Inspector(socket);
  }

  call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = ++this.lastId;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: (result) => resolve(result as T), reject });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Collects garbage, then reads `process.memoryUsage()` in the agent, and its active handles and requests. */
  async memoryAfterGc(): Promise<{ rss: number; heapUsed: number; external: number; activeResources: number }> {
    await this.call('HeapProfiler.collectGarbage');
    const expression = 'JSON.stringify({ ...process.memoryUsage(), activeResources: process.getActiveResourcesInfo().length })';
    const { result } = await this.call<{ result: { value: string } }>('Runtime.evaluate', { expression, returnByValue: true });
    return JSON.parse(result.value) as { rss: number; heapUsed: number; external: number; activeResources: number };
  }

  close(): void {
    this.socket.close();
  }
}
