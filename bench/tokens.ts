/**
 * Worker: the cost of the service-account tokens of 1,000 pods (the kube-api-access volume every
 * API pod carries), with the agent's own token manager and client, the node's identity and the
 * kubelet's default rate limit (--kube-api-qps 50, --kube-api-burst 100), against a real
 * kube-apiserver.
 *   node --expose-gc --import tsx bench/tokens.ts --n=1000 [--out=FILE]
 *
 * N pods are bound to the node (no agent runs: only their tokens are asked for). Their tokens are
 * fetched once, then the token manager's clock is moved past 80 % of the tokens' 3607 s and all
 * are refreshed: the wall time (bounded by the rate limit), CPU per token and requests are those
 * of a refresh round as a node of N pods started together would do it every ~48 min. Each
 * refreshed token is then written to its volume directory with the atomic writer, as a pod sync
 * does; its CPU is measured apart.
 */
import * as k8s from '@kubernetes/client-node';
import path from 'node:path';
import { RequestCounts } from '../src/client/api.ts';
import { createKubeClient } from '../src/client/kubeClient.ts';
import { realClock } from '../src/clock.ts';
import { writeAtomically } from '../src/volumes/atomicWriter.ts';
import { TokenManager } from '../src/volumes/tokens.ts';
import { startControlPlane } from '../test/support/controlPlane.ts';
import { argValue, emit, gc, NODE_NAME, progress, removeDir, round, runWorker, tempDir } from './lib.ts';
import type { TokensResult } from './results.ts';

const n = Number(argValue('n') ?? 1000);
/** What the API server's ServiceAccount admission gives kube-api-access tokens. */
const EXPIRATION_SECONDS = 3607;

runWorker(async () => {
  const cp = await startControlPlane({ nodeNames: [NODE_NAME], required: true });
  if (!cp) {
    await emit({ skipped: 'the control plane cannot be built here (no Go)' });
    return;
  }
  const volumesDir = await tempDir('statelet-bench-tokens-');
  try {
    const namespace = await cp.namespace('tokens');
    progress(`tokens: binding ${n} pods to ${NODE_NAME}`);
    const pods: { name: string; uid: string }[] = [];
    for (let i = 0; i < n; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, n - i) }, (_, j) =>
          cp.core.createNamespacedPod({
            namespace,
            body: {
              metadata: { name: `tok-${String(i + j).padStart(4, '0')}` },
              // The node may ask only for the tokens its pods' volumes project (NodeRestriction).
              spec: {
                nodeName: NODE_NAME,
                automountServiceAccountToken: false,
                volumes: [{ name: 'token', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: EXPIRATION_SECONDS } }] } }],
                containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'token', mountPath: '/var/run/secrets/tokens' }] }],
              },
            },
          }),
        ),
      );
      pods.push(...batch.map((p) => ({ name: p.metadata!.name!, uid: p.metadata!.uid! })));
    }

    const node = new k8s.KubeConfig();
    node.loadFromFile(cp.nodeKubeconfig(NODE_NAME));
    const counts = new RequestCounts();
    const api = createKubeClient(node, { requestTimeoutMs: 10_000, userAgent: 'statelet-bench', counts, limits: { api: { qps: 50, burst: 100 }, events: { qps: 50, burst: 100 }, clock: realClock } });
    let offsetMs = 0;
    const tokens = new TokenManager(api, () => Date.now() + offsetMs, () => {}, () => 0);
    const ask = () => Promise.all(pods.map((pod) => tokens.token({ namespace, serviceAccount: 'default', expirationSeconds: EXPIRATION_SECONDS, pod })));

    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    progress(`tokens: fetching ${n} tokens`);
    let t0 = performance.now();
    const first = await ask();
    const fetchWallMs = performance.now() - t0;
    gc();
    const heapBytesPerToken = (process.memoryUsage().heapUsed - heapBefore) / n;
    for (const [i, token] of first.entries()) await writeAtomically(path.join(volumesDir, String(i)), [{ path: 'token', content: Buffer.from(token), mode: 0o644 }], new Date());

    // Past 80 % of the lifetime: every token is due.
    offsetMs = Math.ceil(EXPIRATION_SECONDS * 0.8 + 1) * 1000;
    const requestsBefore = counts.total();
    progress(`tokens: refreshing ${n} tokens`);
    let cpu = process.cpuUsage();
    t0 = performance.now();
    const refreshed = await ask();
    const refreshWallMs = performance.now() - t0;
    const refreshCpu = process.cpuUsage(cpu);
    const changed = refreshed.filter((token, i) => token !== first[i]).length;
    if (changed !== n) throw new Error(`only ${changed} of ${n} tokens changed on refresh`);

    cpu = process.cpuUsage();
    for (const [i, token] of refreshed.entries()) await writeAtomically(path.join(volumesDir, String(i)), [{ path: 'token', content: Buffer.from(token), mode: 0o644 }], new Date());
    const writeCpu = process.cpuUsage(cpu);

    const result: TokensResult = {
      n,
      fetch: { wallMs: round(fetchWallMs) },
      refresh: {
        wallMs: round(refreshWallMs),
        cpuMsPerToken: round((refreshCpu.user + refreshCpu.system) / 1000 / n, 2),
        requests: counts.total() - requestsBefore,
      },
      write: { cpuMsPerVolume: round((writeCpu.user + writeCpu.system) / 1000 / n, 2) },
      heapBytesPerToken: Math.round(heapBytesPerToken),
    };
    await emit(result);
  } finally {
    await removeDir(volumesDir);
    await cp.close();
  }
});
