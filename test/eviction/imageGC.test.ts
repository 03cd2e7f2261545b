/**
 * The images the eviction manager's disk reclaim removes (src/kuberuntime/imageGC.ts unusedImages;
 * pkg/kubelet/images/image_gc_manager.go DeleteUnusedImages): every image neither pinned nor used
 * by a container the runtime still has, whether the container names it by id, tag or digest.
 */
import { describe, expect, it } from 'vitest';
import { unusedImages } from '../../src/kuberuntime/imageGC.ts';
import type { ImageInfo } from '../../src/runtime/types.ts';

function image(id: string, repoTags: string[] = [], repoDigests: string[] = [], pinned?: boolean): ImageInfo {
  return { id, repoTags, repoDigests, size: 1_000_000, ...(pinned !== undefined ? { pinned } : {}) };
}

const busybox = image('sha256:b0b', ['docker.io/library/busybox:1.36'], ['docker.io/library/busybox@sha256:b1b']);
const use = (image: string, imageRef: string) => ({ image, imageRef });

describe('unusedImages', () => {
  it.each<[string, ImageInfo, { image: string; imageRef: string }[], boolean]>([
    ['no container at all', busybox, [], true],
    ['a container of another image', busybox, [use('docker.io/library/nginx:1.25', 'sha256:n9n')], true],
    ['a container whose imageRef is the image id', busybox, [use('docker.io/library/busybox:latest', 'sha256:b0b')], false],
    ['a container whose image is one of its tags', busybox, [use('docker.io/library/busybox:1.36', 'sha256:elsewhere')], false],
    ['a container whose image is its digest', busybox, [use('docker.io/library/busybox@sha256:b1b', 'sha256:elsewhere')], false],
    ['a container whose imageRef is its digest', busybox, [use('busybox', 'docker.io/library/busybox@sha256:b1b')], false],
    ['a container naming a different tag of the same repository', busybox, [use('docker.io/library/busybox:1.37', 'sha256:other')], true],
    ['a pinned image, unused', image('sha256:p0p', ['registry.k8s.io/pause:3.10'], [], true), [], false],
    ['an image marked not pinned, unused', image('sha256:p0p', ['registry.k8s.io/pause:3.10'], [], false), [], true],
    ['an untagged image, unused', image('sha256:d0d'), [use('docker.io/library/busybox:1.36', 'sha256:b0b')], true],
  ])('%s: removable %s', (_case, img, containers, removable) => {
    expect(unusedImages([img], containers)).toEqual(removable ? [img] : []);
  });

  it.each<[string, string | undefined, boolean]>([
    ['named by tag', 'registry.k8s.io/pause:3.10', false],
    ['named by id', 'sha256:p0p', false],
    ['not named', undefined, true],
    ['another image named', 'registry.k8s.io/pause:3.9', true],
  ])("keeps the runtime's sandbox image, unpinned and unused (containerd 1.6), %s: removable %s", (_case, sandboxImage, removable) => {
    const pause = image('sha256:p0p', ['registry.k8s.io/pause:3.10']);
    expect(unusedImages([pause], [], sandboxImage)).toEqual(removable ? [pause] : []);
  });

  it('keeps the pinned and used images and returns the rest, in the runtime\'s order', () => {
    const pause = image('sha256:p0p', ['registry.k8s.io/pause:3.10'], [], true);
    const nginx = image('sha256:n9n', ['docker.io/library/nginx:1.25']);
    const redis = image('sha256:r3r', ['docker.io/library/redis:7'], ['docker.io/library/redis@sha256:r4r']);
    const alpine = image('sha256:a1a', ['docker.io/library/alpine:3.20']);
    const dangling = image('sha256:d0d');
    const containers = [
      // Running, by id.
      use('docker.io/library/busybox:1.36', 'sha256:b0b'),
      // Exited but still there, by tag.
      use('docker.io/library/nginx:1.25', 'sha256:unrelated'),
      // By digest.
      use('docker.io/library/redis@sha256:r4r', 'sha256:unrelated-2'),
    ];
    expect(unusedImages([alpine, pause, busybox, nginx, dangling, redis], containers)).toEqual([alpine, dangling]);
  });
});
