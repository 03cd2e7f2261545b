/**
 * The container hash recorded on every container. Like the newest kubelet (1.31+), it covers only
 * the container's name and image: any other spec change is applied on the next start, and never
 * restarts a running container by itself.
 */
import type { Container } from '../api/types.ts';

const FNV32_OFFSET = 0x811c9dc5;
const FNV32_PRIME = 0x01000193;

/** FNV-1a, 32 bit, over the UTF-8 bytes of `text`. */
function fnv32a(text: string): number {
  let hash = FNV32_OFFSET;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, FNV32_PRIME) >>> 0;
  }
  return hash >>> 0;
}

export function containerHash(container: Pick<Container, 'name' | 'image'>): string {
  return fnv32a(JSON.stringify({ name: container.name, image: container.image ?? '' })).toString(16);
}
