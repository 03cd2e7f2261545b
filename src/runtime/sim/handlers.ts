/**
 * sim://'s runtime handlers, as containerd's CRI plugin has its configured runtimes
 * (`[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.<name>]`): a RuntimeClass's handler
 * names one of them, '' the default. It reports them in its Status as containerd 2.x does
 * (internal/cri/server/service.go introspectRuntimeHandlers: each configured runtime by name, and
 * the default once more as ''), each supporting user namespaces and none recursive read-only
 * mounts (sim:// models the one, not the other). A handler it does not have is refused with
 * containerd 1.6's words (pkg/cri/server/sandbox_run.go RunPodSandbox, getSandboxRuntime).
 */
import type { IdMapping, RuntimeHandler, UserNamespace } from '../types.ts';
import { NamespaceMode } from '../types.ts';
import { SimError } from './errors.ts';

/** The runtimes sim:// has by default: runc (its default) and the handler upstream's e2e RuntimeClass specs run on. */
export const DEFAULT_RUNTIME_HANDLERS: readonly string[] = ['runc', 'test-handler'];

/** What its Status reports: the default as '' and every configured runtime by name. */
export function reportedHandlers(configured: readonly string[]): RuntimeHandler[] {
  const features = { recursiveReadOnlyMounts: false, userNamespaces: true };
  return ['', ...configured].map((name) => ({ name, features }));
}

/** The runtime a sandbox runs on: the one named, or the default for ''; refused when not configured. */
export function sandboxRuntime(configured: readonly string[], requested: string): string {
  const name = requested === '' ? (configured[0] ?? '') : requested;
  if (!configured.includes(name)) throw new SimError('UNKNOWN', `failed to get sandbox runtime: no runtime for "${name}" is configured`);
  return name;
}

/** One line of /proc/<pid>/uid_map as Linux prints it (kernel/user_namespace.c uid_m_show: `%10u %10u %10u`). */
const mapLine = ({ containerId, hostId, length }: IdMapping) => `${[containerId, hostId, length].map((n) => String(n).padStart(10)).join(' ')}\n`;

/** The whole ID space, as a process in the node's user namespace sees it. */
const HOST_MAPPING: IdMapping = { containerId: 0, hostId: 0, length: 4294967295 };

/**
 * `/proc/self/uid_map` and `gid_map` inside a container of a sandbox with these namespace options:
 * the pod's mappings in a user namespace of its own (mode POD), the identity map of the node's
 * otherwise.
 */
export function idMapFiles(userns: UserNamespace | undefined): Record<string, string> {
  const own = userns?.mode === NamespaceMode.POD;
  const lines = (mappings: readonly IdMapping[]) => (own ? mappings : [HOST_MAPPING]).map(mapLine).join('');
  return { '/proc/self/uid_map': lines(userns?.uids ?? []), '/proc/self/gid_map': lines(userns?.gids ?? []) };
}
