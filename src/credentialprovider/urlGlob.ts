/**
 * Whether an image matches a registry glob such as `*.azurecr.io` or `registry.io:5000/team`: the
 * rule of the kubelet's keyring (pkg/credentialprovider/keyring.go ParseSchemelessURL, SplitURL,
 * URLsMatch), which credential provider plugins' `matchImages` use too
 * (pkg/credentialprovider/plugin/plugin.go isImageAllowed).
 *
 * A glob matches a target when
 *   - their ports are equal (`127.0.0.1` does not match `127.0.0.1:5000`),
 *   - their host names have as many dot-separated parts, each part matching as a `filepath.Match`
 *     pattern (`*`, `?`, `[a-z]`; `*` never crosses a dot),
 *   - the glob's path is a string prefix of the target's path.
 *
 * Pure: strings in, answers out.
 */

/** The parts of a schemeless URL that matching reads. */
export interface SchemelessUrl {
  /** Host and port as written (`registry.io:5000`). */
  host: string;
  /** Everything from the first `/` on, unescaped (`/team/app`), or ''. */
  path: string;
}

/**
 * Parses `text` as Go's `url.Parse("https://" + text)` does, for the errors a match image can have
 * (ParseSchemelessURL). Returns the URL, or the error text as Go words it (`parse "https://…": …`).
 */
export function parseSchemelessUrl(text: string): SchemelessUrl | string {
  const full = `https://${text}`;
  const problem = (reason: string) => `parse ${JSON.stringify(full)}: ${reason}`;
  // net/url refuses ASCII control characters anywhere (url.go stringContainsCTLByte).
  if (/[\x00-\x1f\x7f]/.test(text)) return problem('net/url: invalid control character in URL');
  const withoutFragment = text.split('#', 1)[0]!;
  const withoutQuery = withoutFragment.split('?', 1)[0]!;
  const slash = withoutQuery.indexOf('/');
  const authority = slash < 0 ? withoutQuery : withoutQuery.slice(0, slash);
  const rawPath = slash < 0 ? '' : withoutQuery.slice(slash);
  const host = authority.slice(authority.lastIndexOf('@') + 1);

  const hostProblem = checkHost(host);
  if (hostProblem !== null) return problem(hostProblem);
  const path = unescape(rawPath);
  if (typeof path !== 'string') return problem(path.error);
  return { host, path };
}

/** url.go parseHost's checks: a numeric port after the last colon, and only the characters a host may hold. */
function checkHost(host: string): string | null {
  let name = host;
  if (host.startsWith('[')) {
    const close = host.lastIndexOf(']');
    if (close < 0) return 'missing \']\' in host';
    const port = host.slice(close + 1);
    if (port !== '' && !/^:\d*$/.test(port)) return `invalid port ${JSON.stringify(port)} after host`;
    name = host.slice(1, close);
  } else {
    const colon = host.lastIndexOf(':');
    if (colon >= 0) {
      const port = host.slice(colon);
      if (!/^:\d*$/.test(port)) return `invalid port ${JSON.stringify(port)} after host`;
      name = host.slice(0, colon);
    }
  }
  const escaped = unescape(name);
  if (typeof escaped !== 'string') return escaped.error;
  // url.go shouldEscape(…, encodeHost): letters, digits and these may appear in a host.
  const bad = [...name].find((char) => !/[A-Za-z0-9\-._~!$&'()*+,;=:[\]<>"%]/.test(char) && char.charCodeAt(0) < 0x80);
  return bad === undefined ? null : `invalid character ${JSON.stringify(bad)} in host name`;
}

/** Percent-decoding as url.go unescape: `%` must be followed by two hex digits. */
function unescape(text: string): string | { error: string } {
  const bad = /%(?![0-9A-Fa-f]{2})(.{0,2})/.exec(text);
  if (bad !== null) return { error: `invalid URL escape ${JSON.stringify(`%${bad[1]}`)}` };
  try {
    return decodeURIComponent(text);
  } catch {
    // Escapes that are not UTF-8 stay as written; Go keeps their bytes, and matching compares text.
    return text;
  }
}

/** net.SplitHostPort, falling back to the whole host and no port when it fails (keyring.go SplitURL). */
export function splitHostPort(host: string): { parts: string[]; port: string } {
  const bracketed = /^\[([^\]]*)\]:(\d*)$/.exec(host);
  if (bracketed) return { parts: bracketed[1]!.split('.'), port: bracketed[2]! };
  const colons = host.split(':').length - 1;
  // Go refuses a host with more than one colon outside brackets ("too many colons"): no port then.
  if (colons !== 1) return { parts: host.split('.'), port: '' };
  const colon = host.indexOf(':');
  return { parts: host.slice(0, colon).split('.'), port: host.slice(colon + 1) };
}

/** keyring.go URLsMatch over parsed URLs. */
export function urlsMatch(glob: SchemelessUrl, target: SchemelessUrl): boolean {
  const globHost = splitHostPort(glob.host);
  const targetHost = splitHostPort(target.host);
  if (globHost.port !== targetHost.port) return false;
  if (globHost.parts.length !== targetHost.parts.length) return false;
  if (!target.path.startsWith(glob.path)) return false;
  return globHost.parts.every((part, i) => filepathMatch(part, targetHost.parts[i]!));
}

/** keyring.go URLsMatchStr: false when either side does not parse. */
export function urlsMatchStr(glob: string, target: string): boolean {
  const globUrl = parseSchemelessUrl(glob);
  const targetUrl = parseSchemelessUrl(target);
  if (typeof globUrl === 'string' || typeof targetUrl === 'string') return false;
  return urlsMatch(globUrl, targetUrl);
}

/**
 * Go's `filepath.Match` on one host part (no separators in it): `*` any run, `?` one character,
 * `[…]` a class (`^` negates, `a-z` ranges), `\` escapes. A malformed pattern matches nothing, as
 * URLsMatch treats Match's ErrBadPattern.
 */
export function filepathMatch(pattern: string, name: string): boolean {
  const regex = globRegex(pattern);
  return regex !== null && regex.test(name);
}

function globRegex(pattern: string): RegExp | null {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else if (char === '\\') {
      if (i + 1 >= pattern.length) return null;
      source += escapeRegex(pattern[++i]!);
    } else if (char === '[') {
      const close = classEnd(pattern, i + 1);
      if (close < 0) return null;
      const body = pattern.slice(i + 1, close);
      const negated = body.startsWith('^');
      const ranges = negated ? body.slice(1) : body;
      if (ranges === '') return null;
      source += `[${negated ? '^' : ''}${ranges.replace(/\\(.)/g, '$1').replace(/[\]\\^]/g, '\\$&')}]`;
      i = close;
    } else source += escapeRegex(char);
  }
  try {
    return new RegExp(`^${source}$`);
  } catch {
    return null;
  }
}

/** The index of the `]` closing a class that starts at `from`, skipping escaped characters; -1 if none. */
function classEnd(pattern: string, from: number): number {
  for (let i = from; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++;
    else if (pattern[i] === ']') return i;
  }
  return -1;
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}
