/**
 * The cluster scenarios (clusterScenarios.ts) on sim://: statelet as the node of a real
 * kube-apiserver + etcd, with the node's own identity.
 */
import { defineClusterScenarios } from './clusterScenarios.ts';

defineClusterScenarios({ name: 'sim', image: 'busybox', endpoint: () => 'sim://', runtimeVersion: /^statelet-sim:\/\/\d+\.\d+\.\d+/, features: { supplementalGroupsPolicy: true } });
