/**
 * Who may call the agent's authenticated API, and for what (pkg/kubelet/server/auth.go and the
 * kubelet's InstallAuthFilter):
 * - authentication, in order: a client certificate the `--client-ca-file` CA signed (user = its
 *   CN, groups = its O), a bearer token the API server vouches for (TokenReview, answers kept
 *   2 min), or, only with `--anonymous-auth`, `system:anonymous`; otherwise 401;
 * - authorization: the request as an action on the node object (`nodes/<subresource>` with the
 *   HTTP method's verb), asked of the API server (SubjectAccessReview; allowed answers kept 5 min,
 *   denied 30 s) or allowed outright (`AlwaysAllow`); a denial is 403 naming the user, verb and
 *   subresource. Tokens are kept as hashes, never logged.
 */
import { createHash } from 'node:crypto';
import type { AccessReview, KubeApi, UserInfo } from '../client/api.ts';

/** The node-object action a request is (kubelet server auth.go GetRequestAttributes), pure. */
export function requestAttributes(method: string, urlPath: string): { verb: string; subresource: string } {
  const verbs: Record<string, string> = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };
  const first = urlPath.split('/')[1] ?? '';
  const subresources: Record<string, string> = { stats: 'stats', metrics: 'metrics', logs: 'log', checkpoint: 'checkpoint' };
  return { verb: verbs[method] ?? '', subresource: subresources[first] ?? 'proxy' };
}

const ANONYMOUS: UserInfo = { username: 'system:anonymous', groups: ['system:unauthenticated'] };

/** A client certificate's subject as a user (CN, and O as groups). */
export function certificateUser(subject: Record<string, string | string[]> | undefined): UserInfo | null {
  const cn = subject?.['CN'];
  const name = Array.isArray(cn) ? cn[0] : cn;
  if (!name) return null;
  const o = subject?.['O'];
  return { username: name, groups: o === undefined ? [] : Array.isArray(o) ? o : [o] };
}

interface AuthSettings {
  anonymous: boolean;
  /** TokenReview for bearer tokens; absent: tokens are not accepted. */
  tokenReview?: Pick<KubeApi, 'createTokenReview'>;
  /** SubjectAccessReview for every request; absent: AlwaysAllow. */
  accessReview?: Pick<KubeApi, 'createSubjectAccessReview'>;
  nodeName: string;
  now(): number;
}

const TOKEN_TTL_MS = 2 * 60_000;
const ALLOWED_TTL_MS = 5 * 60_000;
const DENIED_TTL_MS = 30_000;

export type AuthOutcome = { user: UserInfo } | { status: 401 | 403 | 500; message: string };

/** A small time-bounded cache (answers of the API server), swept when it grows. */
class Answers<T> {
  private readonly entries = new Map<string, { value: T; until: number }>();
  constructor(private readonly now: () => number) {}
  get(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.until < this.now()) return undefined;
    return entry.value;
  }
  set(key: string, value: T, ttlMs: number): void {
    if (this.entries.size >= 4096) for (const [k, e] of this.entries) if (e.until < this.now()) this.entries.delete(k);
    this.entries.set(key, { value, until: this.now() + ttlMs });
  }
}

export class RequestAuth {
  private readonly tokens: Answers<UserInfo | null>;
  private readonly decisions: Answers<boolean>;

  constructor(private readonly settings: AuthSettings) {
    this.tokens = new Answers(settings.now);
    this.decisions = new Answers(settings.now);
  }

  /** Who is asking: the certificate's user, the token's, anonymous, or 401. */
  async authenticate(certificate: UserInfo | null, authorization: string | undefined): Promise<AuthOutcome> {
    if (certificate) return { user: certificate };
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    if (token && this.settings.tokenReview) {
      const key = createHash('sha256').update(token).digest('hex');
      let user = this.tokens.get(key);
      if (user === undefined) {
        try {
          const review = await this.settings.tokenReview.createTokenReview(token);
          user = review.authenticated ? review.user : null;
          this.tokens.set(key, user, TOKEN_TTL_MS);
        } catch {
          return { status: 401, message: 'Unauthorized' };
        }
      }
      if (user) return { user };
      return { status: 401, message: 'Unauthorized' };
    }
    if (this.settings.anonymous && !token) return { user: ANONYMOUS };
    return { status: 401, message: 'Unauthorized' };
  }

  /** Whether `user` may do what the request is, or the 403/500 that says it may not. */
  async authorize(user: UserInfo, method: string, urlPath: string): Promise<AuthOutcome> {
    const { verb, subresource } = requestAttributes(method, urlPath);
    const describe = `user=${user.username}, verb=${verb}, resource=nodes, subresource=${subresource}`;
    if (!this.settings.accessReview) return { user };
    const key = JSON.stringify([user.username, user.uid ?? '', [...user.groups].sort(), verb, subresource]);
    let allowed = this.decisions.get(key);
    if (allowed === undefined) {
      const review: AccessReview = { user, verb, resource: 'nodes', subresource, name: this.settings.nodeName };
      try {
        allowed = (await this.settings.accessReview.createSubjectAccessReview(review)).allowed;
      } catch {
        return { status: 500, message: `Authorization error (${describe})` };
      }
      this.decisions.set(key, allowed, allowed ? ALLOWED_TTL_MS : DENIED_TTL_MS);
    }
    return allowed ? { user } : { status: 403, message: `Forbidden (${describe})` };
  }
}
