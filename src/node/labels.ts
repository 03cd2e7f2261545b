/**
 * The labels this node carries (pkg/kubelet/kubelet_node_status.go initialNode: hostname, OS and
 * architecture, with their legacy beta names), over the ones --node-labels adds. Admission
 * matches node selectors against them; registration writes them on the Node.
 */

/** Go's GOARCH for Node's `os.arch()`: the names `kubernetes.io/arch` carries. */
export function goArch(arch: string): string {
  return ({ x64: 'amd64', ia32: '386', ppc64: 'ppc64le' } as Record<string, string>)[arch] ?? arch;
}

export function nodeLabels(nodeName: string, extraLabels: Record<string, string>, system: { os: string; arch: string }): Record<string, string> {
  return {
    ...extraLabels,
    'kubernetes.io/hostname': nodeName,
    'kubernetes.io/os': system.os,
    'kubernetes.io/arch': system.arch,
    'beta.kubernetes.io/os': system.os,
    'beta.kubernetes.io/arch': system.arch,
  };
}
