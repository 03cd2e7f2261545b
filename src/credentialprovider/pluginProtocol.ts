/**
 * The exec protocol between the kubelet and a credential provider plugin
 * (staging/src/k8s.io/kubelet/pkg/apis/credentialprovider/v1/types.go): a CredentialProviderRequest
 * on the plugin's stdin, a CredentialProviderResponse on its stdout, both JSON of the version the
 * provider's config names. The checks and messages are plugin.go execPlugin.ExecPlugin's and
 * pluginProvider.provide's.
 *
 * Pure: text in, text or a decoded response out.
 */

import { ConfigDecodeError, Fields, decodeDuration } from './pluginConfig.ts';

/** What the credentials a response gives are cached for: this image, its registry, or every image. */
export type CacheKeyType = 'Image' | 'Registry' | 'Global';
const CACHE_KEY_TYPES: readonly string[] = ['Image', 'Registry', 'Global'];

/** One entry of a response's `auth`: credentials for the images its key matches. */
export interface AuthEntry {
  /** The key as the plugin wrote it (`*.registry.io`, `registry.io/team`); the keyring matches it against images. */
  matchKey: string;
  username: string;
  password: string;
  /** Set for a provider in service-account token mode: the account they were given for. */
  serviceAccount?: { uid: string; namespace: string; name: string };
}

export interface CredentialProviderResponse {
  cacheKeyType: string;
  /** null: the provider's defaultCacheDuration; 0: not cached. */
  cacheDurationMs: number | null;
  /** In the order the plugin wrote them. */
  auth: AuthEntry[];
}

/** A response that cannot be used; the message never holds the response's text (it may hold credentials). */
export class PluginResponseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PluginResponseError';
  }
}

/** What a provider in service-account token mode adds to its request: the pod's token and the account's annotations it asked for. */
export interface ServiceAccountRequestFields {
  token: string;
  annotations: Readonly<Record<string, string>>;
}

/**
 * The request the plugin reads, in its JSON form: `serviceAccountToken` and
 * `serviceAccountAnnotations` are omitted when empty (types.go CredentialProviderRequest, omitempty).
 */
export function encodeRequest(apiVersion: string, image: string, serviceAccount?: ServiceAccountRequestFields): string {
  const annotations = serviceAccount && Object.keys(serviceAccount.annotations).length > 0 ? { serviceAccountAnnotations: serviceAccount.annotations } : {};
  return JSON.stringify({ kind: 'CredentialProviderRequest', apiVersion, image, ...(serviceAccount?.token ? { serviceAccountToken: serviceAccount.token } : {}), ...annotations });
}

/**
 * Reads a plugin's stdout: the apiVersion must be the provider's (the first check, with its own
 * message), then the whole response decodes strictly or is refused without detail, because the
 * detail could quote the credentials (plugin.go ExecPlugin).
 */
export function decodeResponse(expectedApiVersion: string, stdout: string): CredentialProviderResponse {
  let document: unknown;
  try {
    document = JSON.parse(stdout);
  } catch (error) {
    // JSON.parse's message quotes the text around the fault, which may be credentials: not passed on.
    const reason = stdout.trim() === '' ? 'unexpected end of JSON input' : 'not valid JSON';
    throw new PluginResponseError(`error reading GVK from response: ${error instanceof SyntaxError ? reason : String(error)}`);
  }
  const apiVersion = typeof document === 'object' && document !== null && 'apiVersion' in document ? document.apiVersion : undefined;
  const actual = typeof apiVersion === 'string' ? apiVersion : '';
  if (actual !== expectedApiVersion) {
    throw new PluginResponseError(`apiVersion from credential plugin response did not match expected apiVersion:${expectedApiVersion}, actual apiVersion:${actual}`);
  }
  try {
    return decodeResponseFields(new Fields(document, '', 'CredentialProviderResponse'));
  } catch (error) {
    if (error instanceof ConfigDecodeError) throw new PluginResponseError('error decoding credential provider plugin response from stdout');
    throw error;
  }
}

function decodeResponseFields(fields: Fields): CredentialProviderResponse {
  fields.string('apiVersion');
  if (fields.string('kind') !== 'CredentialProviderResponse') throw new ConfigDecodeError('unexpected Kind');
  const duration = fields.optionalString('cacheDuration');
  const auth = fields.optionalObject('auth', (entries) => entries, 'map[string]AuthConfig');
  const response: CredentialProviderResponse = {
    cacheKeyType: fields.string('cacheKeyType'),
    cacheDurationMs: duration === null ? null : decodeDuration(duration),
    auth: auth === null ? [] : auth.keys().map((matchKey) => {
      const entry = auth.optionalObject(matchKey, (config) => {
        const decoded = { matchKey, username: config.string('username'), password: config.string('password') };
        config.refuseUnknown();
        return decoded;
      }, 'AuthConfig');
      return entry ?? { matchKey, username: '', password: '' };
    }),
  };
  fields.refuseUnknown();
  return response;
}

/** pluginProvider.provide's check of cacheKeyType, which the decoder leaves to it. */
export function cacheKeyTypeOf(response: CredentialProviderResponse): CacheKeyType {
  if (!CACHE_KEY_TYPES.includes(response.cacheKeyType)) {
    throw new PluginResponseError(`credential provider plugin did not return a valid cacheKeyType: ${JSON.stringify(response.cacheKeyType)}`);
  }
  return response.cacheKeyType as CacheKeyType;
}

/** The registry an image's credentials are cached under for cacheKeyType Registry: its first path segment (plugin.go parseRegistry). */
export function registryOf(image: string): string {
  return image.split('/', 1)[0]!;
}
