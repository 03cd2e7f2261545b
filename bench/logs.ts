/**
 * Worker: container log reading through the agent's authenticated API (the path `kubectl logs`
 * takes from the API server to the node), against reading the same file directly.
 *   node --expose-gc --import tsx bench/logs.ts --mb=64 [--out=FILE]
 *
 * A CRI-format log file of `--mb` MB (100-byte lines) is served by the agent's HTTPS server
 * in-process, with a client certificate as the API server presents: the whole log (MB/s and CPU
 * per MB), the last 100 lines (latency), and a follow while a writer appends the same amount as
 * fast as it can (MB/s delivered to the client). The baseline is a plain read of the file.
 */
import { appendFile, writeFile } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { argValue, emit, removeDir, round, runWorker, tempDir } from './lib.ts';
import type { LogsResult } from './results.ts';
import { listedPod, startTestKubeletServer } from '../test/support/kubeletServerFixture.ts';
import { noStreaming } from '../test/support/noStreaming.ts';


const mb = Number(argValue('mb') ?? 64);
const LINE = `2026-11-25T10:00:00.000000001Z stdout F ${'x'.repeat(59)}\n`; // 100 bytes

runWorker(async () => {
  const dir = await tempDir('statelet-bench-logs-');
  try {
    const file = path.join(dir, '0.log');
    const chunk = LINE.repeat(10_000); // 1 MB
    await writeFile(file, '');
    for (let i = 0; i < mb; i++) await appendFile(file, chunk);
    const bytes = mb * chunk.length;
    let running = false;
    const pod = listedPod('bench', 'web', 'u1', { containerStatuses: [{ name: 'app', containerID: 'sim://c1', state: { running: {} }, lastState: {}, ready: true, restartCount: 0, image: '', imageID: '' }] });
    const kubelet = await startTestKubeletServer(dir, {
      pods: () => [pod],
      runtime: { containerStatus: async () => ({ logPath: file, state: running ? 'CONTAINER_RUNNING' : 'CONTAINER_EXITED' }) as never, listContainers: async () => [], ...noStreaming },
    });
    const agent = new https.Agent({ ...kubelet.credentials, keepAlive: true });
    /** GETs a path, counting the bytes of the body; resolves with them and the time taken. */
    const get = (query: string, onData?: (received: number) => void) =>
      new Promise<{ received: number; ms: number }>((resolve, reject) => {
        const t0 = performance.now();
        let received = 0;
        https
          .get(`${kubelet.url}/containerLogs/bench/web/app${query}`, { agent }, (res) => {
            res.on('data', (data: Buffer) => {
              received += data.length;
              onData?.(received);
            });
            res.on('end', () => resolve({ received, ms: performance.now() - t0 }));
          })
          .on('error', reject);
      });

    // Baseline: the file read as it is.
    let t0 = performance.now();
    let raw = 0;
    for await (const data of createReadStream(file)) raw += (data as Buffer).length;
    const rawMs = performance.now() - t0;

    await get('?tailLines=1'); // warm the connection and the code
    let cpu = process.cpuUsage();
    const whole = await get('');
    const wholeCpu = process.cpuUsage(cpu);
    if (whole.received !== mb * 10_000 * (LINE.length - 40)) throw new Error(`read ${whole.received} bytes of content, expected ${mb * 10_000 * (LINE.length - 40)}`);

    t0 = performance.now();
    const tail = await get('?tailLines=100');
    const tailMs = performance.now() - t0;

    // Follow while a writer appends `mb` MB more.
    running = true;
    const target = whole.received * 2;
    let done: () => void = () => {};
    const all = new Promise<void>((resolve) => (done = resolve));
    const follow = get('?follow=true', (received) => received >= target && done());
    t0 = performance.now();
    for (let i = 0; i < mb; i++) await appendFile(file, chunk);
    await all;
    const followMs = performance.now() - t0;
    running = false;
    await appendFile(file, LINE);
    await follow;

    await kubelet.close();
    agent.destroy();
    const result: LogsResult = {
      mb,
      rawReadMBps: round(raw / 1e6 / (rawMs / 1000)),
      wholeLogMBps: round(bytes / 1e6 / (whole.ms / 1000)),
      cpuMsPerMB: round((wholeCpu.user + wholeCpu.system) / 1000 / mb, 2),
      tail100Ms: round(tailMs),
      tail100Bytes: tail.received,
      followMBps: round(bytes / 1e6 / (followMs / 1000)),
    };
    await emit(result);
  } finally {
    await removeDir(dir);
  }
});
