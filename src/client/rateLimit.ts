/**
 * The client-side rate limit on API requests, pure (client-go util/flowcontrol's token bucket, as
 * the kubelet sets it with --kube-api-qps/--kube-api-burst and --event-qps/--event-burst): a
 * bucket of `burst` tokens refilled at `qps` per second; a request takes one, or waits for the
 * next. A qps of 0 means no limit.
 */
export interface Bucket {
  tokens: number;
  at: number;
}

export interface RateLimit {
  qps: number;
  burst: number;
}

/** Takes a token at `now` (possibly one not yet refilled): the new bucket, and how long to wait for it. */
export function takeToken(bucket: Bucket | null, limit: RateLimit, now: number): { bucket: Bucket; waitMs: number } {
  if (limit.qps <= 0) return { bucket: bucket ?? { tokens: limit.burst, at: now }, waitMs: 0 };
  const start = bucket ?? { tokens: Math.max(1, limit.burst), at: now };
  const refilled = Math.min(Math.max(1, limit.burst), start.tokens + ((now - start.at) / 1000) * limit.qps);
  const tokens = refilled - 1;
  // A negative balance is a reservation: this request goes once the bucket is back at zero.
  const waitMs = tokens >= 0 ? 0 : Math.ceil((-tokens / limit.qps) * 1000);
  return { bucket: { tokens, at: now }, waitMs };
}

/**
 * Takes a token at `now` only if one is there (flowcontrol's TryAccept): the new bucket, or null
 * when the bucket is empty (the caller refuses at once instead of waiting). A qps of 0 means no limit.
 */
export function tryTakeToken(bucket: Bucket | null, limit: RateLimit, now: number): Bucket | null {
  if (limit.qps <= 0) return bucket ?? { tokens: limit.burst, at: now };
  const start = bucket ?? { tokens: Math.max(1, limit.burst), at: now };
  const refilled = Math.min(Math.max(1, limit.burst), start.tokens + ((now - start.at) / 1000) * limit.qps);
  return refilled >= 1 ? { tokens: refilled - 1, at: now } : null;
}
