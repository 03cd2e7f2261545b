/**
 * A CSI volume's node-level device (its stage, for mounts and for raw block maps alike), shared by
 * the pods that use it: what its stage came to, who holds it, and its device operations run one
 * after another (nestedpendingoperations: one operation per volume at a time).
 */
export interface SharedDevice<State> {
  /** The stage's outcome: none until it succeeds or ends uncertain. */
  state: State | null;
  /** The pod volumes that want it; it is unstaged once none does. */
  holders: Set<string>;
  /** Its device operations, one after another. */
  queue: Promise<unknown>;
}

/** Who holds a device found staged at start for a pod, until the pod's operation takes it over or lets it go. */
export const foundHolder = (uid: string) => `found:${uid}`;

/**
 * A volume found set up at start for a pod (reconstruct.go updateStates): its device uncertain
 * (MarkDeviceAsUncertain) unless known already, and held for the pod.
 */
export function adoptFoundDevice<State>(devices: Map<string, SharedDevice<State | 'uncertain'>>, uniqueName: string, uid: string): void {
  const device = sharedDevice(devices, uniqueName);
  device.state ??= 'uncertain';
  device.holders.add(foundHolder(uid));
}

/** The volume's device, made on first use. */
export function sharedDevice<State>(devices: Map<string, SharedDevice<State>>, uniqueName: string): SharedDevice<State> {
  let device = devices.get(uniqueName);
  if (!device) devices.set(uniqueName, (device = { state: null, holders: new Set(), queue: Promise.resolve() }));
  return device;
}

/** Runs `operation` after the device's earlier ones, whatever they came to. */
export function serially(device: SharedDevice<unknown>, operation: () => Promise<void>): Promise<void> {
  const run = device.queue.then(operation, operation);
  device.queue = run.catch(() => {});
  return run;
}
