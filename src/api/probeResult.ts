/**
 * What the prober tells the rest of the agent: the kind of a probe and the result of a container's
 * probe of that kind (pkg/kubelet/prober/results/results_manager.go Result), shared by the prober,
 * the pod actor, computePodActions and the status generator.
 */
export type ProbeKind = 'liveness' | 'readiness' | 'startup';

export type ProbeResult = 'Success' | 'Failure';
