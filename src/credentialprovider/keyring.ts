/**
 * The kubelet's keyring of registry credentials (pkg/credentialprovider): the credentials of a
 * pod's image pull secrets, in the order the kubelet tries them for an image.
 *
 * Pure functions: a Secret's bytes in, credentials out. The image manager (kuberuntime/images.ts)
 * tries each returned credential in order; the pulled-image records (kuberuntime/pullRecords.ts)
 * keep the source and hash of the one that worked.
 */
import { createHash } from 'node:crypto';

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
interface DockerConfigEntry {
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
    const parsed = parseJson(secret, DOCKER_CONFIG_JSON_KEY, json);
    if (!isObject(parsed)) throw secretError(secret, DOCKER_CONFIG_JSON_KEY, 'not a JSON object');
    const auths = field(parsed, 'auths');
    if (auths === undefined || auths === null) return new Map();
    return entriesOf(secret, DOCKER_CONFIG_JSON_KEY, auths);
  }
  const cfg = secret.data[DOCKERCFG_KEY];
  if (secret.type === DOCKERCFG_TYPE && cfg && cfg.length > 0) return entriesOf(secret, DOCKERCFG_KEY, parseJson(secret, DOCKERCFG_KEY, cfg));
  return null;
}

function secretError(secret: PullSecret, key: string, why: string): PullSecretError {
  return new PullSecretError(`invalid image pull secret "${secret.namespace}/${secret.name}": ${key}: ${why}`);
}

function parseJson(secret: PullSecret, key: string, bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw secretError(secret, key, `not valid JSON (${err instanceof Error ? err.message : String(err)})`);
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
function entriesOf(secret: PullSecret, key: string, value: unknown): Map<string, DockerConfigEntry> {
  if (value === null) return new Map();
  if (!isObject(value)) throw secretError(secret, key, 'not a JSON object of registries');
  const entries = new Map<string, DockerConfigEntry>();
  for (const [registry, raw] of Object.entries(value)) {
    if (raw === null) {
      entries.set(registry, { username: '', password: '', email: '' });
      continue;
    }
    if (!isObject(raw)) throw secretError(secret, key, `the entry for "${registry}" is not a JSON object`);
    const text = (name: string): string => {
      const found = field(raw, name);
      if (found === undefined || found === null) return '';
      if (typeof found !== 'string') throw secretError(secret, key, `the entry for "${registry}": ${name} is not a string`);
      return found;
    };
    const entry = { username: text('username'), password: text('password'), email: text('email') };
    const auth = text('auth');
    if (auth.length > 0) {
      const decoded = decodeAuthField(auth);
      if (decoded instanceof Error) throw secretError(secret, key, `the entry for "${registry}": ${decoded.message}`);
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
function addToKeyring(keyring: Keyring, config: Map<string, DockerConfigEntry>, source: SecretCoordinates | null): Keyring {
  const creds = new Map(keyring.creds);
  const index = [...keyring.index];
  for (const [location, entry] of config) {
    const url = parseSchemelessUrl(location.replace(/^https?:\/\//, ''));
    if (!url) continue;
    let path = url.path;
    if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
    const key = path.length > 0 && path !== '/' ? url.host + path : url.host;
    const credential: PullCredential = { username: entry.username, password: entry.password, hash: credentialHash(entry), source };
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

/** A URL without its scheme: host (with its port) and path (keyring.go ParseSchemelessURL); null when it is not one. */
function parseSchemelessUrl(schemeless: string): { host: string; path: string } | null {
  const end = schemeless.search(/[/?#]/);
  const host = end < 0 ? schemeless : schemeless.slice(0, end);
  const rest = end < 0 ? '' : schemeless.slice(end);
  const path = rest.startsWith('/') ? rest.replace(/[?#].*$/, '') : '';
  // Go's url.Parse refuses spaces and control characters in a host, and a bad port.
  if (/[\s\x00-\x1f\x7f]/.test(host) || !/^(?:\[[^\]]*\]|[^:]*)(?::\d*)?$/.test(host)) return null;
  return { host, path };
}

/** Host parts and port (keyring.go SplitURL): `a.b.c:5000` ⇒ [a, b, c], `5000`. */
function splitHost(host: string): { parts: string[]; port: string } {
  const bracketed = /^\[([^\]]*)\]:(\d*)$/.exec(host);
  if (bracketed) return { parts: bracketed[1]!.split('.'), port: bracketed[2]! };
  const colon = host.lastIndexOf(':');
  // net.SplitHostPort fails on a host with more than one colon and no brackets: then no port.
  if (colon >= 0 && host.indexOf(':') === colon) return { parts: host.slice(0, colon).split('.'), port: host.slice(colon + 1) };
  return { parts: host.split('.'), port: '' };
}

/**
 * Whether a keyring key (a glob) matches an image's repository (keyring.go URLsMatch): the same
 * port (`127.0.0.1` does not match `127.0.0.1:5000`), as many dot-separated host parts, each
 * matching its glob part (`*.example.com`, `reg*.io`), and the key's path a prefix of the image's.
 */
export function urlsMatch(glob: string, target: string): boolean {
  const globUrl = parseSchemelessUrl(glob);
  const targetUrl = parseSchemelessUrl(target);
  if (!globUrl || !targetUrl) return false;
  const g = splitHost(globUrl.host);
  const t = splitHost(targetUrl.host);
  if (g.port !== t.port || g.parts.length !== t.parts.length) return false;
  if (!targetUrl.path.startsWith(globUrl.path)) return false;
  return g.parts.every((part, i) => pathMatch(part, t.parts[i]!));
}

/**
 * Go's filepath.Match for one host part (no separators in it): `*` any run, `?` one character,
 * `[…]` a class (ranges, `^` negation), `\` escapes. A malformed pattern matches nothing, as the
 * keyring drops filepath.Match's ErrBadPattern.
 */
export function pathMatch(pattern: string, name: string): boolean {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') source += '[^/]*';
    else if (c === '?') source += '[^/]';
    else if (c === '\\') {
      if (i + 1 >= pattern.length) return false;
      source += escapeRegex(pattern[++i]!);
    } else if (c === '[') {
      const close = classEnd(pattern, i + 1);
      if (close < 0) return false;
      let body = pattern.slice(i + 1, close);
      const negated = body.startsWith('^');
      if (negated) body = body.slice(1);
      if (body.length === 0) return false;
      const items = body.replace(/\\(.)/g, '$1');
      source += `[${negated ? '^' : ''}${items.replace(/[\]\\^]/g, '\\$&')}]`;
      i = close;
    } else source += escapeRegex(c);
  }
  try {
    return new RegExp(`^${source}$`, 's').test(name);
  } catch {
    return false;
  }
}

/** Where a `[` class that starts at `from` ends (its `]`), -1 when it does not. */
function classEnd(pattern: string, from: number): number {
  for (let i = from; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++;
    else if (pattern[i] === ']' && i > from && !(i === from + 1 && pattern[from] === '^')) return i;
  }
  return -1;
}

const escapeRegex = (c: string): string => c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

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
  const found = keyring.index.filter((key) => urlsMatch(key, repository)).flatMap((key) => keyring.creds.get(key) ?? []);
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
 * Where credentials come from after the pod's secrets (the kubelet's node keyring and credential
 * provider plugins, image_manager.go makeLookupPullCredentialsFunc): given an image's repository,
 * the credentials they have for it, in order. Credentials from these sources are the node's
 * (`source: null`): an image pulled with them is free to every pod (image_manager.go trackedToImagePullCreds).
 */
export type CredentialSource = (repository: string) => Promise<readonly { username: string; password: string }[]>;

/** A node-wide credential (no Secret behind it), hashed as the kubelet hashes it. */
function nodeCredential(credential: { username: string; password: string }): PullCredential {
  return { username: credential.username, password: credential.password, hash: credentialHash(credential), source: null };
}

/**
 * The credentials to try for an image, in order (image_manager.go makeLookupPullCredentialsFunc:
 * MakeDockerKeyring(pullSecrets, UnionDockerKeyring{node keyring, plugins})): the pod's pull
 * secrets' that match, then those `node` has for the image's repository. Throws PullSecretError
 * for a pull secret that cannot be read.
 */
export async function credentialsFor(secrets: readonly PullSecret[], image: string, node?: CredentialSource): Promise<PullCredential[]> {
  const repository = repositoryOf(image);
  const fromSecrets = lookup(keyringOfSecrets(secrets), repository);
  const fromNode = node ? (await node(repository)).map(nodeCredential) : [];
  return [...fromSecrets, ...fromNode];
}
