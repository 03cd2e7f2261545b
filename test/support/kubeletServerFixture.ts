/**
 * The authenticated API (src/server/kubeletServer.ts) in-process, for tests and benchmarks: a
 * kubelet client PKI written in `dir` (the certificate the API server presents), a self-signed
 * serving certificate, no anonymous access, these pods and this runtime; what a caller does not
 * give is empty (no metrics, `{}` as configz, stats of an empty sim:// engine).
 */
import { readFile } from 'node:fs/promises';
import type { Pod } from '../../src/api/types.ts';
import { silentLogger } from '../../src/log.ts';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { inProcessRuntime } from './inProcessRuntime.ts';
import { RequestAuth } from '../../src/server/auth.ts';
import { selfSignedPair } from '../../src/server/certificates.ts';
import type { ListeningServer } from '../../src/server/http.ts';
import { type KubeletServerDeps, startKubeletServer } from '../../src/server/kubeletServer.ts';
import { StatsProvider } from '../../src/stats/provider.ts';
import { writeKubeletClientPki } from './kubeletClientPki.ts';
import { SettableCertificateSource } from './certificateSources.ts';

export interface TestKubeletServer {
  server: ListeningServer;
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** TLS options of a client holding the kubelet client certificate. */
  credentials: { rejectUnauthorized: false; cert: Buffer; key: Buffer };
  close(): Promise<void>;
}

export async function startTestKubeletServer(
  dir: string,
  deps: Pick<KubeletServerDeps, 'pods' | 'runtime'> & Partial<Omit<KubeletServerDeps, 'pods' | 'runtime'>>,
): Promise<TestKubeletServer> {
  const pki = await writeKubeletClientPki(dir);
  const statsEngine = deps.stats ? null : new SimEngine();
  const stats = deps.stats ?? new StatsProvider({ nodeName: 'node-a', runtime: inProcessRuntime(statsEngine!), podLogsDir: dir, now: Date.now, log: silentLogger });
  const server = await startKubeletServer('127.0.0.1', 0, {
    view: { pods: deps.pods, unhealthyReason: () => null, hangingCalls: () => [], metrics: async () => '', probeMetrics: async () => '' },
    configz: () => ({}),
    auth: new RequestAuth({ anonymous: false, nodeName: 'node-a', now: Date.now }),
    tls: await fixedTls(pki.caFile),
    now: Date.now,
    log: silentLogger,
    ...deps,
    stats,
  });
  const [cert, key] = await Promise.all([readFile(pki.certFile), readFile(pki.keyFile)]);
  return {
    server,
    url: `https://127.0.0.1:${server.port}`,
    credentials: { rejectUnauthorized: false, cert, key },
    close: async () => {
      await server.close();
      await statsEngine?.close();
    },
  };
}

/** A self-signed pair for node-a that never changes, the client CA in `caFile`, Node's default suites and TLS 1.2 at least. */
async function fixedTls(caFile: string): Promise<KubeletServerDeps['tls']> {
  const ca = await readFile(caFile, 'utf8');
  return { certificate: new SettableCertificateSource(await selfSignedPair('node-a', ['127.0.0.1'], new Date())), clientCA: { current: () => ca, onChange: () => () => {} }, settings: { minVersion: 'TLSv1.2' } };
}

/** A pod as the agent lists it: identity, one container `app`, Running. */
export function listedPod(namespace: string, name: string, uid: string, status: Partial<Pod['status']> = {}): Pod {
  return { metadata: { name, namespace, uid }, spec: { containers: [{ name: 'app', image: 'busybox' }] }, status: { phase: 'Running', ...status } } as unknown as Pod;
}
