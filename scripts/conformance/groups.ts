/**
 * The runner's focus groups, pure: which upstream specs each selects (a focus and a skip, Go RE2
 * regexes as ginkgo takes them, written so that JavaScript reads them the same), how a run of
 * several groups becomes one ginkgo focus and skip, and which group a spec of a report belongs to.
 *
 * One ginkgo run takes one focus and one skip for every spec, so the groups' skips are joined: a
 * group's own skips name its suites (`\[sig-storage\] …`), so that they never leave out a spec of
 * another group.
 */

export type GroupName = 'node' | 'storage';

export interface FocusGroup {
  focus: string;
  /** The alternatives of its skip, each a regex on its own. */
  skip: readonly string[];
}

/** What no group runs here: one node, one run, nothing that stops the node or needs the whole cluster to itself, no long specs. */
const NOT_HERE = [String.raw`\[Serial\]`, String.raw`\[Disruptive\]`, String.raw`\[Slow\]`];

/**
 * The storage suites of issue 40 (the node's part of persistent storage): the in-tree drivers
 * that need no cloud, no server and no external program — local PVs of every LocalVolumeType,
 * inline hostPath (plain and through a symlink) and emptyDir —, the local-PV suite and the subPath
 * specs. The local driver prepares its paths on the node through privileged host-exec pods
 * (nsenter into the host's mount namespace): directories, bind mounts, tmpfs and loop devices
 * under /tmp, so the block types need loop devices on the machine.
 */
const STORAGE_FOCUS = String.raw`\[sig-storage\] In-tree Volumes \[Driver: (local|hostPath|hostPathSymlink|emptydir)\]|\[sig-storage\] PersistentVolumes-local|\[sig-storage\] Subpath`;

/**
 * Left out of the storage group besides NOT_HERE, each because it cannot run here:
 * - `[Feature:…]` (SELinux, VolumeSnapshotDataSource, VolumeSourceXFS): an SELinux host, the
 *   snapshot controller and CRDs, XFS tooling — none on these machines (all of them are [Slow] too);
 * - PersistentVolumes-local "Pod with node different from PV's NodeAffinity": needs a second node
 *   (it skips itself on one, after creating its storage class and volume).
 */
const STORAGE_SKIP = [String.raw`\[sig-storage\] .*\[Feature:`, String.raw`\[sig-storage\] PersistentVolumes-local Pod with node different from PV's NodeAffinity`];

export const GROUPS: Record<GroupName, FocusGroup> = {
  node: {
    focus: String.raw`\[sig-node\].*\[Conformance\]|\[sig-storage\].*(ConfigMap|Secrets|Projected|Downward API|EmptyDir|HostPath).*\[Conformance\]|\[sig-node\] RuntimeClass .*\[Feature:RuntimeHandler\]|\[sig-node\] Security Context When creating a pod with HostUsers`,
    skip: NOT_HERE,
  },
  storage: {
    focus: STORAGE_FOCUS,
    skip: [...NOT_HERE, ...STORAGE_SKIP],
  },
};

/**
 * The groups `npm run conformance` runs without --groups (what CI runs): both. The storage group
 * takes about 10 minutes here with either node (statelet passes 140 of its 149 specs, the kubelet
 * 145; the difference is raw block volumes), so CI needs no subset of it.
 */
export const DEFAULT_GROUPS: readonly GroupName[] = ['node', 'storage'];

/** `--groups=a,b`: known names, at least one. */
export function parseGroups(text: string): GroupName[] {
  const names = text.split(',').map((name) => name.trim()).filter(Boolean);
  if (names.length === 0) throw new Error(`--groups=${text}: name at least one of ${Object.keys(GROUPS).join(', ')}`);
  for (const name of names) if (!(name in GROUPS)) throw new Error(`--groups=${text}: unknown group ${name} (known: ${Object.keys(GROUPS).join(', ')})`);
  return [...new Set(names)] as GroupName[];
}

/** One ginkgo focus and skip for the groups of a run. */
export function selection(groups: readonly GroupName[]): { focus: string; skip: string } {
  return { focus: groups.map((g) => GROUPS[g].focus).join('|'), skip: [...new Set(groups.flatMap((g) => GROUPS[g].skip))].join('|') };
}

export const GROUP_NAMES: readonly GroupName[] = ['node', 'storage'];

/** The group whose focus selects a spec (its full name); the focuses are disjoint. Undefined for a spec of a run's own --focus. */
export function groupOf(name: string): GroupName | undefined {
  return GROUP_NAMES.find((group) => new RegExp(GROUPS[group].focus).test(name));
}
