/**
 * A container's CPU and memory settings for the runtime (pkg/kubelet/kuberuntime/
 * kuberuntime_container_linux.go calculateLinuxResources, cm/helpers_linux.go MilliCPUToShares and
 * MilliCPUToQuota, qos/policy.go GetContainerOOMScoreAdjust), pure: the CFS shares from the CPU
 * request, the quota from the CPU limit over a 100 ms period, the memory limit, and the OOM score
 * by QoS class, so the kernel kills the least important container first when the node runs out.
 */
import { podQos } from '../api/qos.ts';
import { quantityValue } from '../api/quantity.ts';
import type { Container, Pod } from '../api/types.ts';
import type { LinuxContainerResources } from '../runtime/types.ts';

/** cm/helpers_linux.go: the CFS bounds and period. */
const MIN_SHARES = 2;
const MAX_SHARES = 262_144;
const SHARES_PER_CPU = 1024;
export const QUOTA_PERIOD_US = 100_000;
const MIN_QUOTA_US = 1_000;

/** qos/policy.go: the scores of the classes at either end. */
const GUARANTEED_OOM_SCORE_ADJ = -997;
const BESTEFFORT_OOM_SCORE_ADJ = 1000;

export function milliCpuToShares(milli: number): number {
  if (milli === 0) return MIN_SHARES;
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor((milli * SHARES_PER_CPU) / 1000)));
}

/** 0 (no quota) without a limit; never below the kernel's 1 ms minimum. */
export function milliCpuToQuota(milli: number, periodUs = QUOTA_PERIOD_US): number {
  if (milli === 0) return 0;
  return Math.max(MIN_QUOTA_US, Math.floor((milli * periodUs) / 1000));
}

const milli = (cores: number) => Math.round(cores * 1000);

/**
 * The container's OOM score: Guaranteed and node-critical pods -997, BestEffort 1000, Burstable
 * 1000 less its share of the machine's memory in thousandths, kept within 3…999 so it stays above
 * the guaranteed ones and below the best-effort ones.
 */
export function oomScoreAdj(pod: Pod, container: Container, memoryCapacityBytes: number): number {
  if (pod.spec.priorityClassName === 'system-node-critical') return GUARANTEED_OOM_SCORE_ADJ;
  const qos = podQos(pod);
  if (qos === 'Guaranteed') return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === 'BestEffort') return BESTEFFORT_OOM_SCORE_ADJ;
  const request = quantityValue(container.resources?.requests?.memory ?? container.resources?.limits?.memory);
  const score = 1000 - Math.floor((1000 * request) / memoryCapacityBytes);
  return score < 3 ? 3 : score === 1000 ? 999 : score;
}

/** The LinuxContainerResources sent with the container's config. */
export function containerResources(pod: Pod, container: Container, memoryCapacityBytes: number): LinuxContainerResources {
  const { requests = {}, limits = {} } = container.resources ?? {};
  const cpuRequest = requests['cpu'] ?? limits['cpu'];
  return {
    cpuShares: milliCpuToShares(milli(quantityValue(cpuRequest))),
    cpuQuota: milliCpuToQuota(milli(quantityValue(limits['cpu']))),
    cpuPeriod: QUOTA_PERIOD_US,
    memoryLimitInBytes: Math.floor(quantityValue(limits['memory'])),
    oomScoreAdj: oomScoreAdj(pod, container, memoryCapacityBytes),
  };
}
