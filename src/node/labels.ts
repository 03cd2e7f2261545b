/**
 * The labels this node carries (pkg/kubelet/kubelet_node_status.go initialNode: hostname, OS,
 * architecture), which admission matches node selectors against.
 */
import os from 'node:os';

export function nodeLabels(nodeName: string, arch: string = os.arch()): Record<string, string> {
  // Go's name for x64, as the `kubernetes.io/arch` label carries it.
  return { 'kubernetes.io/hostname': nodeName, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': arch === 'x64' ? 'amd64' : arch };
}
