/**
 * A client that goes away in the middle of `GET /containerLogs/…?follow=true` frees what its
 * follow held (src/server/containerLogs.ts, src/kuberuntime/logs/reader.ts): after 1,000 of them on
 * the authenticated API, the process has the file descriptors, fs watchers, timers and sockets it
 * had before, and the server no connection.
 */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { makePod } from '../support/pods.ts';
import { startTestKubeletServer, type TestKubeletServer } from '../support/kubeletServerFixture.ts';
import { noStreaming } from '../support/noStreaming.ts';

const CLIENTS = 1_000;
/** Clients under way at once (each one's TLS handshake costs a few ms of CPU). */
const AT_ONCE = 50;

let dir: string;
let kubelet: TestKubeletServer;
let agent: https.Agent;
let cert: Buffer;
let key: Buffer;

/** A pod whose one container runs for good: every follow lasts until its client goes. */
const pod: Pod = {
  ...makePod('web'),
  status: { phase: 'Running', containerStatuses: [{ name: 'main', containerID: 'sim://c1', state: { running: {} }, lastState: {}, ready: true, restartCount: 0, image: '', imageID: '' }] },
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-logs-leak-'));
  const logFile = path.join(dir, 'app', '0.log');
  await mkdir(path.dirname(logFile));
  await writeFile(logFile, '2026-11-25T10:00:00.000000001Z stdout F hello\n');
  kubelet = await startTestKubeletServer(dir, {
    pods: () => [pod],
    runtime: { containerStatus: async () => ({ logPath: logFile, state: 'CONTAINER_RUNNING' }) as never, listContainers: async () => [], ...noStreaming },
  });
  ({ cert, key } = kubelet.credentials);
  // Sessions resumed rather than a full handshake per client; no connection kept.
  agent = new https.Agent({ keepAlive: false, maxCachedSessions: 10 });
});

afterAll(async () => {
  agent?.destroy();
  await kubelet?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Starts a follow, waits for the log's first line (the reader is following now), and hangs up; `following` runs just before. */
function followThenHangUp(following?: () => Promise<void>): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${kubelet.url}/containerLogs/default/web/main?follow=true`, { agent, rejectUnauthorized: false, cert, key }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
      res.once('data', (chunk: Buffer) => {
        expect(chunk.toString()).toBe('hello\n');
        void (following?.() ?? Promise.resolve()).then(() => req.destroy(), reject);
      });
    });
    req.on('close', () => resolve());
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? resolve() : reject(err)));
    req.end();
  });
}

async function clients(count: number): Promise<void> {
  for (let started = 0; started < count; started += AT_ONCE) {
    await Promise.all(Array.from({ length: Math.min(AT_ONCE, count - started) }, () => followThenHangUp()));
  }
}

/**
 * The inotify watches the process holds (fs.watch; an unreferenced watcher is not among the active
 * resources, and libuv shares one inotify descriptor): the `inotify wd:` lines of its fdinfo.
 */
function inotifyWatches(): number {
  let watches = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // The descriptor readdir itself used, closed since.
    }
    if (target !== 'anon_inode:inotify') continue;
    watches += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').filter((line) => line.startsWith('inotify wd:')).length;
  }
  return watches;
}

/** What the process holds: open file descriptors, inotify watches and its libuv resources by type (timers, sockets, file requests). */
function held(): { fds: number; watches: number; resources: Record<string, number> } {
  const resources: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) resources[type] = (resources[type] ?? 0) + 1;
  return { fds: readdirSync('/proc/self/fd').length, watches: inotifyWatches(), resources };
}

const connections = () => new Promise<number>((resolve, reject) => kubelet.server.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

describe('following a container log', () => {
  it(`leaves nothing behind after ${CLIENTS} clients hang up mid-follow`, async () => {
    // One round first: TLS contexts, the thread pool and the session cache exist from then on.
    await clients(AT_ONCE);
    // Measured inside waitFor both times: its own two timers count alike.
    const settled = { timeout: 10_000, interval: 50 };
    const before = await vi.waitFor(async () => {
      expect(await connections()).toBe(0);
      return held();
    }, settled);
    expect(before.watches).toBe(0);
    // While a follow is under way, what it holds shows: its log file open, its directory watched.
    let during: ReturnType<typeof held> | undefined;
    await followThenHangUp(async () => {
      during = await vi.waitFor(() => {
        expect(inotifyWatches()).toBeGreaterThan(0);
        return held();
      });
    });
    expect(during!.watches).toBeGreaterThan(0);
    expect(during!.fds).toBeGreaterThan(before.fds);
    await clients(CLIENTS);
    await vi.waitFor(async () => {
      expect(await connections()).toBe(0);
      expect(held()).toEqual(before);
    }, settled);
  }, 120_000);
});
