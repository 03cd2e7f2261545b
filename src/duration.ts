/**
 * Durations in the text form of Go's `time.ParseDuration` / `Duration.String`, because that is the
 * form kubelet flags (`--sync-frequency 1m`) and KubeletConfiguration fields (`syncFrequency: 20s`)
 * use; a user moving a setting from a kubelet unit file to statelet should not have to rewrite it.
 *
 * Parsing works in integer nanoseconds (BigInt) so that `1.1s` is exactly 1100 ms rather than the
 * 1100.0000000000002 that floating-point multiplication would give.
 */

const NANOS_PER_UNIT: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['µs', 1_000n], // U+00B5 MICRO SIGN, as Go prints it
  ['μs', 1_000n], // U+03BC GREEK SMALL LETTER MU, which Go also accepts
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
]);

const UNIT_LIST = 'ns, us, µs, ms, s, m, h';

/** Go durations are int64 nanoseconds; anything larger is rejected as Go rejects it. */
const MAX_NANOS = (1n << 63n) - 1n;

const NANOS_PER_MS = 1_000_000n;

export class DurationError extends Error {
  constructor(
    readonly input: string,
    /** Why the text is not a duration, without the input; callers embed it in their own message. */
    readonly reason: string,
  ) {
    super(`invalid duration ${JSON.stringify(input)}: ${reason}`);
    this.name = 'DurationError';
  }
}

interface ParseDurationOptions {
  /** Go accepts `-5s`, but no kubelet period or timeout means anything when negative. */
  allowNegative?: boolean;
}

/** One `<number><unit>` component: the unit runs until the next digit or dot, as in Go. */
const COMPONENT = /^(\d*)(?:\.(\d*))?([^\d.]+)/;
const NUMBER_ONLY = /^(\d+(\.\d*)?|\.\d+)$/;

/** Parses `20s`, `1m30s`, `500ms`, `1.5h`, `0` into milliseconds (possibly fractional for ns/µs). */
export function parseDuration(text: string, options: ParseDurationOptions = {}): number {
  return Number(parseDurationNanos(text, options)) / Number(NANOS_PER_MS);
}

function parseDurationNanos(text: string, options: ParseDurationOptions): bigint {
  let rest = text;
  let negative = false;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    negative = rest.startsWith('-');
    rest = rest.slice(1);
  }
  // Go special-cases a bare zero so that `0` needs no unit; every other number does.
  if (rest === '0') return 0n;
  if (rest === '') throw new DurationError(text, `expected a number followed by a unit (${UNIT_LIST})`);

  let total = 0n;
  while (rest !== '') {
    const match = COMPONENT.exec(rest);
    if (match === null) {
      const reason = NUMBER_ONLY.test(rest)
        ? `missing unit (expected one of ${UNIT_LIST})`
        : `expected a number followed by a unit (${UNIT_LIST})`;
      throw new DurationError(text, reason);
    }
    const [component, whole = '', fraction = '', unit = ''] = match;
    const unitNanos = NANOS_PER_UNIT.get(unit);
    if (whole === '' && fraction === '') {
      const reason =
        unitNanos === undefined
          ? `expected a number followed by a unit (${UNIT_LIST})`
          : `unit ${JSON.stringify(unit)} has no number before it`;
      throw new DurationError(text, reason);
    }
    if (unitNanos === undefined) {
      throw new DurationError(text, `unknown unit ${JSON.stringify(unit)} (expected one of ${UNIT_LIST})`);
    }
    total += BigInt(whole === '' ? '0' : whole) * unitNanos;
    if (fraction !== '') {
      // Truncates below one nanosecond, which is the resolution Go keeps.
      total += (BigInt(fraction) * unitNanos) / 10n ** BigInt(fraction.length);
    }
    if (total > MAX_NANOS) throw new DurationError(text, 'out of range (larger than about 292 years)');
    rest = rest.slice(component.length);
  }

  if (negative && total !== 0n) {
    if (options.allowNegative !== true) throw new DurationError(text, 'must not be negative');
    return -total;
  }
  return total;
}

/**
 * Formats milliseconds the way Go's `Duration.String` does (`20s`, `1m0s`, `1h0m0s`, `500ms`,
 * `1.5s`), so help text shows defaults in the same form the flags accept and the kubelet prints.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) throw new RangeError(`cannot format ${ms} as a duration`);
  let nanos = BigInt(Math.round(ms * Number(NANOS_PER_MS)));
  if (nanos === 0n) return '0s';
  const sign = nanos < 0n ? '-' : '';
  if (nanos < 0n) nanos = -nanos;

  if (nanos < 1_000n) return `${sign}${nanos}ns`;
  if (nanos < 1_000_000n) return `${sign}${withFraction(nanos, 1_000n)}µs`;
  if (nanos < 1_000_000_000n) return `${sign}${withFraction(nanos, NANOS_PER_MS)}ms`;

  const hourNanos = 3_600_000_000_000n;
  const minuteNanos = 60_000_000_000n;
  const hours = nanos / hourNanos;
  const minutes = (nanos % hourNanos) / minuteNanos;
  const seconds = withFraction(nanos % minuteNanos, 1_000_000_000n);
  // Go always prints minutes once the duration reaches a minute, hence `1h0m0s` and `1m0s`.
  const hourPart = hours > 0n ? `${hours}h` : '';
  const minutePart = hours > 0n || minutes > 0n ? `${minutes}m` : '';
  return `${sign}${hourPart}${minutePart}${seconds}s`;
}

/** `value / unit` as a decimal without trailing zeros: (1500, 1000) → `1.5`. */
function withFraction(value: bigint, unit: bigint): string {
  const whole = value / unit;
  const remainder = value % unit;
  if (remainder === 0n) return `${whole}`;
  const digits = String(unit).length - 1;
  const fraction = String(remainder).padStart(digits, '0').replace(/0+$/, '');
  return `${whole}.${fraction}`;
}
