/**
 * Removing the images no container uses (pkg/kubelet/images/image_gc_manager.go
 * DeleteUnusedImages, as the eviction manager calls it under disk pressure): every image that is
 * neither pinned by the runtime, nor its sandbox image (which containerd 1.6 does not pin: its
 * verbose status names it), nor the image of a container the runtime still has, in any state.
 * One failed removal is logged and the others go on.
 */
import type { Logger } from '../log.ts';
import { type Container, type ImageInfo, type ImageService, type RuntimeService, isNotFound } from '../runtime/types.ts';

/** The images to remove, pure. A container names its image by reference or by id; either keeps it. */
export function unusedImages(images: readonly ImageInfo[], containers: readonly Pick<Container, 'image' | 'imageRef'>[], sandboxImage?: string): ImageInfo[] {
  const used = new Set<string>(sandboxImage ? [sandboxImage] : []);
  for (const c of containers) {
    used.add(c.image);
    used.add(c.imageRef);
  }
  return images.filter((image) => !image.pinned && !used.has(image.id) && !image.repoTags.some((t) => used.has(t)) && !image.repoDigests.some((d) => used.has(d)));
}

/** Removes the unused images; returns the bytes they held. */
export async function removeUnusedImages(runtime: Pick<RuntimeService, 'listContainers' | 'status'>, images: Pick<ImageService, 'listImages' | 'removeImage'>, log: Logger): Promise<number> {
  const [all, containers, status] = await Promise.all([images.listImages(), runtime.listContainers(), runtime.status({ verbose: true })]);
  let freed = 0;
  for (const image of unusedImages(all, containers, status.sandboxImage)) {
    try {
      await images.removeImage(image.id);
      freed += image.size;
      log('info', 'Removed unused image', { image: image.repoTags[0] ?? image.id, size: image.size });
    } catch (err) {
      if (!isNotFound(err)) log('error', 'Failed to remove unused image', { image: image.repoTags[0] ?? image.id, err });
    }
  }
  return freed;
}
