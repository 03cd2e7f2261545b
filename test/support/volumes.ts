/**
 * The volume manager as a test runs it beside pod effects that have a pods directory: the volume
 * world the syncs ask, and the volume manager's loop machine (its pod volume actors) over it, with
 * the plugins' real filesystem work under `podsDir`.
 */
import { createActor } from 'xstate';
import { type Clock, realClock } from '../../src/clock.ts';
import type { EventRecorder } from '../../src/eventrecorder/recorder.ts';
import { type Logger, silentLogger } from '../../src/log.ts';
import { createPodVolumeEffects, reconstructVolumes } from '../../src/volumemanager/effects.ts';
import { volumeManagerMachineWith } from '../../src/volumemanager/volumeManager.ts';
import { diskOnly } from '../../src/volumes/mounter.ts';
import type { VolumeDeps } from '../../src/volumes/setUp.ts';
import { type CsiOperationsDeps, CsiOperations } from '../../src/volumes/csi/operations.ts';
import path from 'node:path';
import { type LoopDevices, systemLoopDevices } from '../../src/volumes/blockMap.ts';
import { CsiBlockOperations } from '../../src/volumes/csi/block.ts';
import { type VolumeWorldOptions, VolumeWorld } from '../../src/volumes/world.ts';

export function runningVolumeManager(options: {
  deps: Omit<VolumeDeps, 'mounter' | 'now'> & Partial<Pick<VolumeDeps, 'mounter' | 'now'>>;
  recorder: EventRecorder;
  log?: Logger;
  clock?: Clock;
  claims?: VolumeWorldOptions['claims'];
  csiDrivers?: VolumeWorldOptions['csiDrivers'];
  /** The CSI plugin's parts; by default no driver is registered, the node named `node-a`, its root the pods directory's parent. */
  csi?: Partial<Omit<CsiOperationsDeps, 'attach'>>;
  /** Reconstructs the volumes found under the pods directory at start, as the node's volume manager does after a restart. */
  reconstruct?: boolean;
  /** The loop devices a mapped raw block volume is held open by; the system's by default. */
  loops?: LoopDevices;
}): { world: VolumeWorld; csi: CsiOperations; stop(): void } {
  const clock = options.clock ?? realClock;
  const world = new VolumeWorld({ clock, ...(options.claims ? { claims: options.claims } : {}), ...(options.csiDrivers ? { csiDrivers: options.csiDrivers } : {}) });
  if (options.reconstruct) world.expectReconstruction();
  const csi = new CsiOperations({ rootDir: path.dirname(options.deps.podsDir), nodeName: 'node-a', drivers: { endpoint: () => null }, ...options.csi, attach: world });
  const deps: VolumeDeps = { mounter: diskOnly, now: () => clock.now(), ...options.deps };
  const loops = options.loops ?? systemLoopDevices();
  const block = { csi: new CsiBlockOperations({ rootDir: path.dirname(options.deps.podsDir), nodeName: 'node-a', csi, attach: world, mounter: deps.mounter, loops, ...definedCsi(options.csi) }), loops };
  const logic = volumeManagerMachineWith(
    {
      adopt: async () => ({ mounts: 0, tokens: 0, reconstructed: options.reconstruct ? await reconstructVolumes({ world, csi, csiBlock: block.csi, podsDir: options.deps.podsDir, log: options.log ?? silentLogger }) : 0 }),
      collect: async () => ({ mounts: 0, tokens: 0, dropped: 0 }),
      listen: (changed) => world.listen(changed),
    },
    createPodVolumeEffects({ world, deps: () => deps, csi, block, recorder: options.recorder, log: options.log ?? silentLogger }),
  );
  const actor = createActor(logic, { clock });
  actor.start();
  return { world, csi, stop: () => actor.stop() };
}

/** The root and node name a test gives the CSI plugin, for the block mapper to use the same. */
function definedCsi(csi: Partial<Omit<CsiOperationsDeps, 'attach'>> | undefined): { rootDir?: string; nodeName?: string } {
  return { ...(csi?.rootDir ? { rootDir: csi.rootDir } : {}), ...(csi?.nodeName ? { nodeName: csi.nodeName } : {}) };
}
