/** The client-side token bucket (client-go flowcontrol): burst, refill, reservations, no limit; TryAccept's refusal. */
import { describe, expect, it } from 'vitest';
import { type Bucket, takeToken, tryTakeToken } from '../../src/client/rateLimit.ts';

const limit = { qps: 50, burst: 100 };

function take(n: number, at: number, start: Bucket | null = null) {
  let bucket = start;
  const waits: number[] = [];
  for (let i = 0; i < n; i++) {
    const next = takeToken(bucket, limit, at);
    bucket = next.bucket;
    waits.push(next.waitMs);
  }
  return { bucket: bucket!, waits };
}

describe('takeToken', () => {
  it('lets a burst through at once, then spaces requests at the rate', () => {
    const { waits } = take(103, 0);
    expect(waits.slice(0, 100).every((w) => w === 0)).toBe(true);
    expect(waits.slice(100)).toEqual([20, 40, 60]);
  });

  it('refills with time, up to the burst', () => {
    const { bucket } = take(100, 0);
    expect(takeToken(bucket, limit, 1_000).waitMs).toBe(0);
    expect(takeToken(bucket, limit, 60_000).bucket.tokens).toBe(99);
  });

  it('does not limit at qps 0', () => {
    let bucket: Bucket | null = null;
    for (let i = 0; i < 1_000; i++) {
      const next = takeToken(bucket, { qps: 0, burst: 0 }, 0);
      expect(next.waitMs).toBe(0);
      bucket = next.bucket;
    }
  });
});

describe('tryTakeToken (TryAccept)', () => {
  it('takes the burst at once, then refuses until a token is refilled, never reserving one', () => {
    const pulls = { qps: 5, burst: 10 };
    let bucket: Bucket | null = null;
    for (let i = 0; i < 10; i++) bucket = tryTakeToken(bucket, pulls, 0) ?? bucket;
    expect(tryTakeToken(bucket, pulls, 0)).toBeNull();
    expect(tryTakeToken(bucket, pulls, 100)).toBeNull();
    // A refused try leaves the bucket as it was: 200 ms later one token is there.
    expect(tryTakeToken(bucket, pulls, 200)).toEqual({ tokens: 0, at: 200 });
  });

  it('never refuses at qps 0', () => {
    for (let i = 0; i < 100; i++) expect(tryTakeToken(null, { qps: 0, burst: 0 }, 0)).not.toBeNull();
  });
});
