import { describe, expect, it } from 'vitest';
import { NETWORK_NOT_READY, TRANSIENT_ERROR_BACKOFF_MS, requeueDelayMs } from '../../src/podworkers/requeue.ts';

/** The kubelet's error when the pod network is not ready (kubelet.go SyncPod). */
const networkNotReady = `${NETWORK_NOT_READY}: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized`;
const periods = { syncFrequencyMs: 60_000, errorBackoffMs: 10_000 };

describe('when a pod is due again after a sync (pod_workers.go completeWork)', () => {
  it.each([
    ['a sync that succeeded, no jitter drawn', { ok: true }, 0, 60_000],
    ['a sync that succeeded, the most jitter', { ok: true }, 0.999, 89_970],
    ['network not ready', { ok: false, error: networkNotReady }, 0, 1_000],
    ['network not ready, half the jitter', { ok: false, error: networkNotReady }, 0.5, 1_250],
    ['network not ready, the most jitter (under 1.5 s)', { ok: false, error: networkNotReady }, 0.999, 1_499.5],
    ['network not ready, found anywhere in the joined errors', { ok: false, error: `CreatePodSandboxError: rpc error: ${NETWORK_NOT_READY} yet` }, 0, 1_000],
    ['any other error: the error back-off', { ok: false, error: 'CreatePodSandboxError: connection refused' }, 0, 10_000],
    ['any other error, the most jitter (under 15 s)', { ok: false, error: 'disk full' }, 0.999, 14_995],
    ['a failure without its error: the error back-off', { ok: false }, 0, 10_000],
    ['a back-off ending sooner brings the pod forward, unjittered', { ok: true, retryAfterMs: 3_000 }, 0.9, 3_000],
    ['a back-off ending later than the error back-off changes nothing', { ok: false, error: 'x', retryAfterMs: 30_000 }, 0, 10_000],
    ['a back-off ending before the network retry wins', { ok: false, error: networkNotReady, retryAfterMs: 200 }, 0.5, 200],
  ])('%s', (_name, report, random, delayMs) => {
    expect(requeueDelayMs(report, periods, random)).toBeCloseTo(delayMs, 6);
  });

  it('retries a network not ready after the kubelet\'s 1 s, whatever the error back-off is set to', () => {
    expect(TRANSIENT_ERROR_BACKOFF_MS).toBe(1_000);
    expect(requeueDelayMs({ ok: false, error: networkNotReady }, { syncFrequencyMs: 60_000, errorBackoffMs: 30_000 }, 0)).toBe(1_000);
  });
});
