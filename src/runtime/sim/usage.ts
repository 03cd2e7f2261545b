/**
 * What a simulated container uses, for the CRI stats calls (see README.md, "Stats"):
 * - CPU: the real time the agent's thread spends running the container's processes (interpreter
 *   steps of its main process and its execs, and its servers answering requests), measured with
 *   the monotonic high-resolution clock around each synchronous run. A sandbox's meter is charged
 *   with everything its containers are, so it keeps what exited containers used, as a pod's cgroup
 *   does;
 * - memory: the bytes its in-memory filesystem holds plus PROCESS_BASE_BYTES per live process;
 * - the image filesystem (ImageFsInfo): the images' sizes and the writable layers, with
 *   IMAGE_BYTES_PER_INODE for an image's files.
 */

/**
 * What one live simulated process counts for in its container's working set: the order of a static
 * busybox process's own (anonymous and page-table) memory in a container's cgroup.
 */
export const PROCESS_BASE_BYTES = 512 * 1024;

/**
 * How many bytes of an image count for one inode of the image filesystem: an unpacked distribution
 * image holds roughly a file per 16 KiB (the simulated images have a size and no files).
 */
export const IMAGE_BYTES_PER_INODE = 16 * 1024;

export class CpuMeter {
  private nanoseconds = 0;
  private depth = 0;

  /** @param parent also charged with every nanosecond this meter is (the sandbox of a container) */
  constructor(private readonly parent?: CpuMeter) {}

  /** Cumulative CPU time charged so far, in nanoseconds. */
  get usageNanoseconds(): number {
    return this.nanoseconds;
  }

  /** Runs `work` and charges the time it took; a nested run on the same meter is charged once. */
  measure<T>(work: () => T): T {
    if (this.depth > 0) return work();
    this.depth++;
    const started = process.hrtime.bigint();
    try {
      return work();
    } finally {
      this.depth--;
      this.charge(Number(process.hrtime.bigint() - started));
    }
  }

  private charge(nanoseconds: number): void {
    this.nanoseconds += nanoseconds;
    this.parent?.charge(nanoseconds);
  }
}
