/**
 * The ObjectReader over the API server: ConfigMaps and Secrets read with the node's identity (the
 * Node authorizer allows only those referenced by pods bound to this node). Not found is `null`;
 * any other failure is thrown and fails the container's config (it is retried). Each start reads
 * afresh: there is no watch-based cache yet (the kubelet's configmap and secret managers).
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

export function apiObjectReader(api: KubeApi): ObjectReader {
  return {
    configMap: async (namespace, name) => {
      const found = await orNull(() => api.getConfigMap(namespace, name));
      return found ? (found.data ?? {}) : null;
    },
    secret: async (namespace, name) => {
      const found = await orNull(() => api.getSecret(namespace, name));
      if (!found) return null;
      const decoded: Record<string, string> = {};
      for (const [key, value] of Object.entries(found.data ?? {})) decoded[key] = Buffer.from(value, 'base64').toString('utf8');
      return decoded satisfies ObjectData;
    },
  };
}
