/**
 * The ObjectReader over the API server: ConfigMaps and Secrets read with the node's identity (the
 * Node authorizer allows only those referenced by pods bound to this node). Not found is `null`;
 * any other failure is thrown and fails the container's config (it is retried). Each start reads
 * afresh (there is no watch-based cache yet, as the kubelet's configmap and secret managers keep),
 * but starts that ask for the same object while a read of it is under way share that read: a
 * burst of pods referring to one ConfigMap costs one request, not one per container.
 */
import { isNotFound, type KubeApi } from '../client/api.ts';
import type { ObjectData, ObjectReader } from './envVars.ts';

async function orNull<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

/** Reads by key, sharing a read that is under way with whoever asks for the same key meanwhile. */
function shared<T>(read: (namespace: string, name: string) => Promise<T>): (namespace: string, name: string) => Promise<T> {
  const inFlight = new Map<string, Promise<T>>();
  return (namespace, name) => {
    const key = `${namespace}/${name}`;
    let pending = inFlight.get(key);
    if (!pending) {
      pending = read(namespace, name).finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  };
}

export function apiObjectReader(api: KubeApi): ObjectReader {
  return {
    configMap: shared(async (namespace, name) => {
      const found = await orNull(() => api.getConfigMap(namespace, name));
      return found ? (found.data ?? {}) : null;
    }),
    secret: shared(async (namespace, name) => {
      const found = await orNull(() => api.getSecret(namespace, name));
      if (!found) return null;
      const decoded: Record<string, string> = {};
      for (const [key, value] of Object.entries(found.data ?? {})) decoded[key] = Buffer.from(value, 'base64').toString('utf8');
      return decoded satisfies ObjectData;
    }),
  };
}
