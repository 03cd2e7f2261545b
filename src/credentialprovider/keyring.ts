/**
 * The kubelet's keyring of registry credentials (pkg/credentialprovider): the credentials of a
 * pod's image pull secrets, in the order the kubelet tries them for an image.
 *
 * Pure functions: a Secret's bytes in, credentials out. The image manager (kuberuntime/images.ts)
 * tries each returned credential in order; the pulled-image records (kuberuntime/pullRecords.ts)
 * keep the source and hash of the one that worked.
 */
import { createHash } from 'node:crypto';
import type { PodPullContext, ServiceAccountCoordinates } from './pluginServiceAccount.ts';
import { parseSchemelessUrl, urlsMatchStr } from './urlGlob.ts';

/** A credential for one registry, with where it came from. */
export interface PullCredential {
  username: string;
  password: string;
  /**
   * The hex SHA-256 of the credential as the kubelet hashes it (keyring.go hashAuthConfig): what
   * a pulled-image record keeps, never the credential itself.
   */
  hash: string;
  /** The Secret it came from; null for one the whole node has (a credential provider plugin's). */
  source: SecretCoordinates | null;
  /**
   * The pod's service account a plugin in service-account token mode gave it for
   * (credentialprovider.CredentialSource.ServiceAccount): an image pulled with it is free to the
   * pods of that account only.
   */
  serviceAccount?: ServiceAccountCoordinates;
}

/** Names a Secret (credentialprovider.SecretCoordinates). */
export interface SecretCoordinates {
  uid: string;
  namespace: string;
  name: string;
}

/** A Secret as the pod's image pull secrets are read (client/objects.ts ObjectReader.pullSecret). */
export interface PullSecret extends SecretCoordinates {
  type: string;
  data: Readonly<Record<string, Buffer>>;
}

/** One entry of a docker config: `username`, `password`, `email` (DockerConfigEntry). */
export interface DockerConfigEntry {
  username: string;
  password: string;
  email: string;
}

/** The registries of a keyring, each with its credentials in the order they were added. */
export interface Keyring {
  /** The keys, deduplicated and reverse-sorted (more specific paths first). */
  index: string[];
  creds: Map<string, PullCredential[]>;
}

export const DOCKER_CONFIG_JSON_TYPE = 'kubernetes.io/dockerconfigjson';
export const DOCKER_CONFIG_JSON_KEY = '.dockerconfigjson';
export const DOCKERCFG_TYPE = 'kubernetes.io/dockercfg';
export const DOCKERCFG_KEY = '.dockercfg';

/** A pull secret that cannot be read as a docker config: the pull fails with this. */
export class PullSecretError extends Error {
  override readonly name = 'PullSecretError';
}

/**
 * The keyring of a pod's pull secrets (pkg/credentialprovider/secrets/secrets.go
 * secretsToTrackedDockerConfigs): a `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson`
 * (`{"auths": {…}}`) or a `kubernetes.io/dockercfg` Secret's `.dockercfg` (the bare map); a Secret
 * of another type, or whose key is missing or empty, adds nothing. A Secret that is not valid JSON
 * of that shape throws PullSecretError: the kubelet fails the pull with the decoding error.
 */
export function keyringOfSecrets(secrets: readonly PullSecret[]): Keyring {
  let keyring: Keyring = { index: [], creds: new Map() };
  for (const secret of secrets) {
    const config = dockerConfigOf(secret);
    if (config) keyring = addToKeyring(keyring, config, { uid: secret.uid, namespace: secret.namespace, name: secret.name });
  }
  return keyring;
}

function dockerConfigOf(secret: PullSecret): Map<string, DockerConfigEntry> | null {
  const json = secret.data[DOCKER_CONFIG_JSON_KEY];
  if (secret.type === DOCKER_CONFIG_JSON_TYPE && json && json.length > 0) {
    return parseDockerConfigJson(json, (why) => secretError(secret, DOCKER_CONFIG_JSON_KEY, why));
  }
  const cfg = secret.data[DOCKERCFG_KEY];
  if (secret.type === DOCKERCFG_TYPE && cfg && cfg.length > 0) return parseDockercfg(cfg, (why) => secretError(secret, DOCKERCFG_KEY, why));
  return null;
}

function secretError(secret: PullSecret, key: string, why: string): PullSecretError {
  return new PullSecretError(`invalid image pull secret "${secret.namespace}/${secret.name}": ${key}: ${why}`);
}

/** Makes the error for a docker config that cannot be read, saying why (never with its content). */
export type ConfigError = (why: string) => Error;

/** A `config.json`'s bytes (`{"auths": {…}}`, config.go DockerConfigJSON): its entries by registry key. */
export function parseDockerConfigJson(bytes: Buffer, fail: ConfigError): Map<string, DockerConfigEntry> {
  const parsed = parseJson(bytes, fail);
  if (!isObject(parsed)) throw fail('not a JSON object');
  const auths = field(parsed, 'auths');
  if (auths === undefined || auths === null) return new Map();
  return entriesOf(auths, fail);
}

/** A legacy `.dockercfg`'s bytes (the bare map of registries, config.go ReadDockerConfigFileFromBytes). */
export function parseDockercfg(bytes: Buffer, fail: ConfigError): Map<string, DockerConfigEntry> {
  return entriesOf(parseJson(bytes, fail), fail);
}

function parseJson(bytes: Buffer, fail: ConfigError): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    // V8's own message quotes the text around the fault, which may be a password: not repeated.
    throw fail('not valid JSON');
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A JSON field as Go's encoding/json finds a struct field: an exact name first, else case-insensitively. */
function field(object: Record<string, unknown>, name: string): unknown {
  if (name in object) return object[name];
  const key = Object.keys(object).find((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : object[key];
}

/** A docker config's entries (config.go DockerConfigEntry.UnmarshalJSON): `auth`, when set, overrides username and password. */
function entriesOf(value: unknown, fail: ConfigError): Map<string, DockerConfigEntry> {
  if (value === null) return new Map();
  if (!isObject(value)) throw fail('not a JSON object of registries');
  const entries = new Map<string, DockerConfigEntry>();
  for (const [registry, raw] of Object.entries(value)) {
    if (raw === null) {
      entries.set(registry, { username: '', password: '', email: '' });
      continue;
    }
    if (!isObject(raw)) throw fail(`the entry for "${registry}" is not a JSON object`);
    const text = (name: string): string => {
      const found = field(raw, name);
      if (found === undefined || found === null) return '';
      if (typeof found !== 'string') throw fail(`the entry for "${registry}": ${name} is not a string`);
      return found;
    };
    const entry = { username: text('username'), password: text('password'), email: text('email') };
    const auth = text('auth');
    if (auth.length > 0) {
      const decoded = decodeAuthField(auth);
      if (decoded instanceof Error) throw fail(`the entry for "${registry}": ${decoded.message}`);
      Object.assign(entry, decoded);
    }
    entries.set(registry, entry);
  }
  return entries;
}

/**
 * The `auth` field, base64 of `user:password` (config.go decodeDockerConfigFieldAuth): padded
 * when it ends in `=` (StdEncoding), else unpadded (RawStdEncoding).
 */
export function decodeAuthField(field: string): { username: string; password: string } | Error {
  const padded = field.trim().endsWith('=');
  const valid = padded ? /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)$/ : /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2,3})?$/;
  if (!valid.test(field)) return new Error('unable to decode auth field: illegal base64 data');
  const decoded = Buffer.from(field, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return new Error('unable to parse auth field, must be formatted as base64(username:password)');
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * Adds a docker config's entries (keyring.go BasicDockerKeyring.Add): each key loses its
 * `http(s)://` and a leading `/v1/` or `/v2/` of its path (`https://index.docker.io/v1/` is
 * `index.docker.io`); a key that is not a URL is skipped. The index is then deduplicated and
 * reverse-sorted, so that `quay.io/coreos` comes before `quay.io`.
 */
function addToKeyring(keyring: Keyring, config: Map<string, DockerConfigEntry>, source: SecretCoordinates | null, serviceAccount?: ServiceAccountCoordinates): Keyring {
  const creds = new Map(keyring.creds);
  const index = [...keyring.index];
  for (const [location, entry] of config) {
    // Add parses the key as `https://<key>` unless it has a scheme; one Go's url.Parse refuses is skipped.
    const url = parseSchemelessUrl(location.replace(/^https?:\/\//, ''));
    if (typeof url === 'string') continue;
    let path = url.path;
    if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
    const key = path.length > 0 && path !== '/' ? url.host + path : url.host;
    const credential: PullCredential = { username: entry.username, password: entry.password, hash: credentialHash(entry), source, ...(serviceAccount ? { serviceAccount } : {}) };
    creds.set(key, [...(creds.get(key) ?? []), credential]);
    index.push(key);
  }
  // Go's sort.Strings orders by bytes, as this comparison does for the ASCII of registry keys.
  const sorted = [...new Set(index)].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  return { index: sorted, creds };
}

/**
 * The kubelet's hash of a credential (keyring.go hashAuthConfig): SHA-256 of the JSON Go writes
 * for its AuthConfig, whose fields are `username`, `password`, `auth`, `email`, … each left out
 * when empty, with `<`, `>` and `&` escaped as Go's encoder does.
 */
export function credentialHash(entry: { username: string; password: string; email?: string }): string {
  const fields: Record<string, string> = {};
  if (entry.username) fields.username = entry.username;
  if (entry.password) fields.password = entry.password;
  if (entry.email) fields.email = entry.email;
  const json = JSON.stringify(fields).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return createHash('sha256').update(json).digest('hex');
}

/**
 * Whether an image pulls from Docker Hub (keyring.go isDefaultRegistryMatch): a single name, a
 * first part of `docker.io` or `index.docker.io`, or one that is not a host (no `.` nor `:`).
 */
function isDefaultRegistryMatch(image: string): boolean {
  const slash = image.indexOf('/');
  const first = slash < 0 ? image : image.slice(0, slash);
  if (first.length === 0) return false;
  if (slash < 0) return true;
  if (first === 'docker.io' || first === 'index.docker.io') return true;
  return !/[.:]/.test(first);
}

/**
 * The credentials for an image's repository (keyring.go BasicDockerKeyring.Lookup): every key
 * that matches, most specific first; when none does, an `index.docker.io` credential for an
 * image from Docker Hub.
 */
export function lookup(keyring: Keyring, repository: string): PullCredential[] {
  const found = keyring.index.filter((key) => urlsMatchStr(key, repository)).flatMap((key) => keyring.creds.get(key) ?? []);
  if (found.length > 0) return found;
  return isDefaultRegistryMatch(repository) ? (keyring.creds.get('index.docker.io') ?? []) : [];
}

/**
 * An image's repository without tag or digest, as the kubelet names it to the keyring
 * (pkg/util/parsers ParseImageName, distribution/reference ParseNormalizedNamed): `busybox` ⇒
 * `docker.io/library/busybox`, `index.docker.io/x/y:1` ⇒ `docker.io/x/y`.
 */
export function repositoryOf(image: string): string {
  let name = image;
  const at = name.indexOf('@');
  if (at >= 0) name = name.slice(0, at);
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) name = name.slice(0, colon);
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  const isHost = slash >= 0 && (/[.:]/.test(first) || first === 'localhost' || first.toLowerCase() !== first);
  let domain = isHost ? first : 'docker.io';
  let path = isHost ? name.slice(slash + 1) : name;
  if (domain === 'index.docker.io') domain = 'docker.io';
  if (domain === 'docker.io' && !path.includes('/')) path = `library/${path}`;
  return `${domain}/${path}`;
}

/**
 * A keyring of the node's, asked after the pod's secrets: given an image's repository, the
 * credentials it has, each under the registry key it is for (`*.registry.io`, `registry.io/team`).
 * The keyring matches the keys against the repository, as the kubelet's providers' keyrings do
 * (keyring.go providersDockerKeyring, the default keyring of the registered providers, and
 * plugin/plugins.go externalCredentialProviderKeyring add them to a BasicDockerKeyring). They are
 * the node's (`source: null`): an image pulled with one is free to every pod (image_manager.go
 * trackedToImagePullCreds), unless a plugin in service-account token mode gave it for the pod's
 * service account (`serviceAccount`, plugins.go externalCredentialProviderKeyring.Lookup). `pod`
 * is the pod the image is for, which such plugins need.
 */
export type CredentialSource = (
  repository: string,
  pod?: PodPullContext,
) => Promise<readonly { matchKey: string; username: string; password: string; email?: string; serviceAccount?: ServiceAccountCoordinates }[]>;

/**
 * The credentials to try for an image, in order (image_manager.go makeLookupPullCredentialsFunc:
 * MakeDockerKeyring(pullSecrets, UnionDockerKeyring{node keyring, plugins})): the pod's pull
 * secrets' that match, then each of the node's keyrings' in turn (keyring.go
 * UnionDockerKeyring.Lookup: each looked up on its own, the answers joined). Throws
 * PullSecretError for a pull secret that cannot be read.
 */
export async function credentialsFor(secrets: readonly PullSecret[], image: string, node: readonly CredentialSource[] = [], pod?: PodPullContext): Promise<PullCredential[]> {
  const repository = repositoryOf(image);
  const found = [...lookup(keyringOfSecrets(secrets), repository)];
  for (const source of node) {
    const entries = new Map<string, { entry: DockerConfigEntry; serviceAccount: ServiceAccountCoordinates | undefined }>();
    // Go's map keeps one entry per key: a key given twice keeps the later answer.
    for (const entry of await source(repository, pod)) {
      entries.set(entry.matchKey, { entry: { username: entry.username, password: entry.password, email: entry.email ?? '' }, serviceAccount: entry.serviceAccount });
    }
    let keyring: Keyring = { index: [], creds: new Map() };
    for (const [key, { entry, serviceAccount }] of entries) keyring = addToKeyring(keyring, new Map([[key, entry]]), null, serviceAccount);
    found.push(...lookup(keyring, repository));
  }
  return found;
}
