/**
 * ConfigMaps and Secrets as containers' environments and volumes use them, read over the API
 * server with the node's identity (the Node authorizer allows only those referenced by pods bound
 * to this node). Not found is `null`; any other failure is thrown (the caller's sync retries). Each start reads
 * afresh (there is no watch-based cache yet, as the kubelet's configmap and secret managers keep),
 * but starts that ask for the same object while a read of it is under way share that read: a
 * burst of pods referring to one ConfigMap costs one request, not one per container.
 */
import { isNotFound, type KubeApi } from './api.ts';

/** A ConfigMap's `data` (text) and `binaryData` (bytes). */
export interface ConfigMapData {
  data: Record<string, string>;
  binaryData: Record<string, Buffer>;
}

/** Reads ConfigMaps and Secrets (a Secret's values decoded to bytes). */
export interface ObjectReader {
  configMap(namespace: string, name: string): Promise<ConfigMapData | null>;
  secret(namespace: string, name: string): Promise<Record<string, Buffer> | null>;
}

const bytes = (values: Record<string, string> | undefined) => Object.fromEntries(Object.entries(values ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]));

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
      return found ? { data: found.data ?? {}, binaryData: bytes(found.binaryData) } : null;
    }),
    secret: shared(async (namespace, name) => {
      const found = await orNull(() => api.getSecret(namespace, name));
      return found ? bytes(found.data) : null;
    }),
  };
}
