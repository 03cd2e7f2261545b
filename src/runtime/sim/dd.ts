/**
 * What `dd` is asked and what it reports, as busybox's (coreutils/dd.c dd_main): the operands read
 * with busybox's keywords, number suffixes and messages, and its status lines. The shell's `dd`
 * copies with them (`shell.ts`). Not modelled, and refused as such: where to start reading or
 * writing (`skip=`, `seek=`), separate block sizes (`ibs=`, `obs=`), conversions and flags
 * (`conv=`, `iflag=`, `oflag=`), output to stdout (no `of=`), and an endless `if=/dev/zero`.
 */

export interface DdOperands {
  /** `if=`; null: dd reads its stdin, which a container does not have (it ends at once). */
  source: string | null;
  /** `of=`: a file (created or truncated) or /dev/null. */
  dest: string;
  blockSize: number;
  /** `count=`: how many blocks to read; null: to the end of the input. */
  count: number | null;
  /** `status=`: `none` reports nothing, `noxfer` the records only. */
  status: 'all' | 'noxfer' | 'none';
}

/** busybox prints its usage on an operand it does not know; its first line says which it knows. */
const USAGE = 'Usage: dd [if=FILE] [of=FILE] [ibs=N obs=N/bs=N] [count=N] [skip=N] [seek=N]\n';
/** busybox's keywords the sim does not model. */
const UNMODELLED = new Set(['seek', 'skip', 'ibs', 'obs', 'conv', 'iflag', 'oflag']);
/** libbb/xatonum.c cwbkMG_suffixes: decimal kB/kD, KB/KD, MB/MD, GB/GD; binary k, K, M, G. */
const SUFFIXES: Readonly<Record<string, number>> = {
  '': 1, c: 1, w: 2, b: 512,
  kB: 1000, kD: 1000, KB: 1000, KD: 1000, k: 1024, K: 1024,
  MB: 1e6, MD: 1e6, M: 2 ** 20,
  GB: 1e9, GD: 1e9, G: 2 ** 30,
};
/** The largest block busybox takes: what fits in a positive ssize_t. */
const MAX_BLOCK_SIZE = '9223372036854775807';

/** A dd number (`bs=1M`, `count=600`) with busybox's suffixes, or what busybox says of it. */
function ddNumber(text: string): number | string {
  const match = /^(\d+)([A-Za-z]*)$/.exec(text);
  const unit = match ? SUFFIXES[match[2] ?? ''] : undefined;
  return match && unit !== undefined ? Number(match[1]) * unit : `dd: invalid number '${text}'\n`;
}

/** The operands of `dd ARGS`, or what busybox (or the sim, for what it does not model) says of them. */
export function ddOperands(args: readonly string[]): DdOperands | { error: string } {
  let source: string | null = null;
  let dest: string | null = null;
  let blockSize = 512;
  let count: number | null = null;
  let status: DdOperands['status'] = 'all';
  for (const arg of args) {
    if (arg === '--') continue;
    const eq = arg.indexOf('=');
    if (eq < 0) return { error: USAGE };
    const key = arg.slice(0, eq);
    const value = arg.slice(eq + 1);
    if (UNMODELLED.has(key)) return { error: `dd: ${key}= is not supported by the sim\n` };
    switch (key) {
      case 'bs': {
        const size = ddNumber(value);
        if (typeof size === 'string') return { error: size };
        if (size < 1) return { error: `dd: number ${value} is not in 1..${MAX_BLOCK_SIZE} range\n` };
        blockSize = size;
        break;
      }
      case 'count': {
        const blocks = ddNumber(value);
        if (typeof blocks === 'string') return { error: blocks };
        count = blocks;
        break;
      }
      case 'if':
        source = value;
        break;
      case 'of':
        dest = value;
        break;
      case 'status':
        if (value !== 'none' && value !== 'noxfer') return { error: `dd: invalid argument '${value}' to 'status'\n` };
        status = value;
        break;
      default:
        return { error: USAGE };
    }
  }
  if (dest === null) return { error: 'dd: writing to stdout is not supported by the sim: give of=FILE or of=/dev/null\n' };
  if (source === '/dev/zero' && count === null) return { error: 'dd: if=/dev/zero without count= is not supported by the sim\n' };
  return { source, dest, blockSize, count, status };
}

/**
 * What dd says on stderr once it has copied `bytes` in blocks of `blockSize` (busybox
 * dd_output_status): whole and partial records in and out, then the bytes; busybox's time and
 * rate on that last line are left out, the sim's copy taking no time.
 */
export function ddReport(bytes: number, { blockSize, status }: DdOperands): string {
  if (status === 'none') return '';
  const whole = Math.floor(bytes / blockSize);
  const records = `${whole}+${Math.ceil(bytes / blockSize) - whole}`;
  const counts = `${records} records in\n${records} records out\n`;
  return status === 'noxfer' ? counts : `${counts}${bytes} bytes copied\n`;
}
