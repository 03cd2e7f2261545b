/**
 * The bytes of a static pod manifest, from a file (file.ts) or from a URL (http.ts), decoded into
 * the one document they hold, as the kubelet's sources do before defaulting
 * (pkg/kubelet/config/common.go tryDecodeSinglePod: YAML, of which JSON is a part, turned into an
 * object). One code path for both sources: the same size and depth limits, the same messages.
 *
 * - The content is UTF-8 text of at most `maxBytes` bytes;
 * - it holds exactly one YAML document with content (a `---` with nothing after it does not
 *   count);
 * - no value is nested deeper than `MAX_MANIFEST_DEPTH` levels.
 *
 * A problem comes back as `ManifestProblem`: the reason, and the line or field where there is
 * one; `describeProblem` writes it after the manifest's name (`name:line: field: reason`).
 * Pure: no I/O.
 */
import { isScalar, LineCounter, parseAllDocuments } from 'yaml';
import { isRecord } from '../api/validate.ts';

/** A problem with a manifest: why, and where when known. */
export interface ManifestProblem {
  /** 1-based line, for YAML syntax errors and extra documents. */
  line?: number;
  /** The offending field, e.g. `spec.containers[0].image`. */
  field?: string;
  reason: string;
}

/** One parsed document, or why there is none. */
export type DecodedManifest = { manifest: unknown } | { problem: ManifestProblem };

/**
 * The largest manifest file read. The kubelet reads files of any size; we stop at 1 MiB: a pod that
 * large cannot be stored as a mirror pod (etcd takes requests of at most 1.5 MiB), and parsing
 * YAML of several MB holds the agent's event loop for seconds (5 MB of JSON: 5 s).
 */
export const MAX_MANIFEST_BYTES = 1024 * 1024;
/**
 * The deepest nesting of objects and lists accepted, the pod object being level 1. The kubelet's
 * decoder stops at 10,000 (k8s.io/apimachinery/pkg/util/json maxDepth); the YAML parser and every
 * recursive walk of a pod here would overflow the stack long before, at a depth that depends on
 * the caller. A real pod nests about 12 levels deep.
 */
export const MAX_MANIFEST_DEPTH = 100;

/** `at line 3, column 5:` and the source excerpt that follow the reason in `yaml`'s messages. */
const YAML_POSITION_SUFFIX = / at line \d+, column \d+:[\s\S]*$/;
/** A parser that recursed too deeply: `yaml` reports the RangeError's message as the reason. */
const STACK_OVERFLOW = /Maximum call stack size exceeded/;
const TOO_DEEP = `nested deeper than ${MAX_MANIFEST_DEPTH} levels`;

/** `name:line: field: reason`, the form every manifest problem is logged in. */
export function describeProblem(name: string, problem: ManifestProblem): string {
  const at = problem.line === undefined ? name : `${name}:${problem.line}`;
  return problem.field ? `${at}: ${problem.field}: ${problem.reason}` : `${at}: ${problem.reason}`;
}

/** The offset of the first byte that is not part of UTF-8 text, in bytes known not to be UTF-8. */
function firstNonUtf8Byte(bytes: Uint8Array): number {
  const decodes = (length: number, stream: boolean) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, length), { stream });
      return true;
    } catch {
      return false;
    }
  };
  // Streaming, a decoder keeps an incomplete last character for later, so whether a prefix
  // decodes is monotonic in its length: search for the longest that does.
  let good = 0;
  let bad = bytes.length;
  while (bad - good > 1) {
    const mid = Math.floor((good + bad) / 2);
    if (decodes(mid, true)) good = mid;
    else bad = mid;
  }
  // It may end in the first bytes of the character that the next byte breaks: that one is bad.
  while (!decodes(good, false)) good--;
  return good;
}

/** The path of the first value nested deeper than `MAX_MANIFEST_DEPTH` levels, if any; iterative, so any depth is measured. */
function tooDeep(manifest: unknown): string | undefined {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: manifest, path: '', depth: 1 }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const { value, path, depth } = next;
    const members = Array.isArray(value)
      ? value.map((item, i) => [`${path}[${i}]`, item] as const)
      : isRecord(value)
        ? Object.entries(value).map(([key, item]) => [path === '' ? key : `${path}.${key}`, item] as const)
        : [];
    for (const [memberPath, item] of members) {
      if (typeof item !== 'object' || item === null) continue;
      if (depth + 1 > MAX_MANIFEST_DEPTH) return memberPath;
      stack.push({ value: item, path: memberPath, depth: depth + 1 });
    }
  }
  return undefined;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

interface DecodeOptions {
  /** The most bytes the content may have. */
  maxBytes: number;
  /** What a second document breaks, e.g. `one Pod per file`. */
  onlyOne: string;
  /** What the content should hold, for an empty one, e.g. `Pod`. */
  expected: string;
}

/** Decodes and parses the content of one manifest (its first `maxBytes + 1` bytes, or its text). */
export function decodeManifest(content: Uint8Array | string, options: DecodeOptions): DecodedManifest {
  const size = typeof content === 'string' ? Buffer.byteLength(content) : content.length;
  if (size > options.maxBytes) return { problem: { reason: `larger than ${options.maxBytes} bytes, the most a manifest may have` } };
  let text: string;
  try {
    text = typeof content === 'string' ? content : new TextDecoder('utf-8', { fatal: true }).decode(content);
  } catch {
    const bytes = content as Uint8Array;
    const at = firstNonUtf8Byte(bytes);
    const line = bytes.subarray(0, at).filter((byte) => byte === 0x0a).length + 1;
    return { problem: { line, reason: `not UTF-8 text (byte ${at})` } };
  }
  const lineCounter = new LineCounter();
  const documents = parseAllDocuments(text, { lineCounter });
  for (const doc of documents) {
    const [syntax] = doc.errors;
    if (syntax) {
      const line = syntax.linePos?.[0].line;
      const reason = STACK_OVERFLOW.test(syntax.message) ? TOO_DEEP : syntax.message.replace(YAML_POSITION_SUFFIX, '');
      return { problem: line === undefined ? { reason } : { line, reason } };
    }
  }
  // A `---` with nothing after it makes an empty (null) document; only documents with content count.
  const found = documents.filter((doc) => doc.contents !== null && !(isScalar(doc.contents) && doc.contents.value === null));
  const [first, second] = found;
  if (!first) return { problem: { reason: `no ${options.expected} in manifest` } };
  if (second) {
    const line = lineCounter.linePos(second.range[0]).line;
    return { problem: { line, reason: `${options.onlyOne}, found ${found.length} YAML documents` } };
  }

  let manifest: unknown;
  try {
    manifest = first.toJS();
  } catch (err) {
    return { problem: { reason: STACK_OVERFLOW.test(errorText(err)) ? TOO_DEEP : errorText(err) } };
  }
  const deep = tooDeep(manifest);
  if (deep !== undefined) return { problem: { field: deep, reason: TOO_DEEP } };
  return { manifest };
}
