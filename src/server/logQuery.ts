/**
 * A `containerLogs` request's query as the kubelet reads it, pure (pkg/kubelet/server/server.go
 * getContainerLogs; v1.PodLogOptions and its validation): `follow`, `previous`, `timestamps`,
 * `sinceSeconds`, `sinceTime`, `tailLines` (or the legacy `tail`, `all` for every line),
 * `limitBytes`. A value that does not decode is 400 `Unable to decode query.`; options that do
 * not validate (a negative tail, a byte limit under 1, both since forms) are 422 `Invalid request.`.
 */
import type { LogOptions } from '../kuberuntime/logs/format.ts';

type LogQuery = { options: LogOptions; previous: boolean } | { status: 400 | 422; body: string };

const DECODE = { status: 400 as const, body: '{"message": "Unable to decode query."}' };
const INVALID = { status: 422 as const, body: '{"message": "Invalid request."}' };

function bool(value: string | null): boolean | null {
  if (value === null || value === '') return false;
  if (['true', '1', 't', 'True', 'TRUE'].includes(value)) return true;
  if (['false', '0', 'f', 'False', 'FALSE'].includes(value)) return false;
  return null;
}

function integer(value: string | null): number | null | undefined {
  if (value === null || value === '') return undefined;
  return /^-?\d+$/.test(value) ? Number(value) : null;
}

export function parseLogQuery(query: URLSearchParams, nowMs: number): LogQuery {
  const follow = bool(query.get('follow'));
  const previous = bool(query.get('previous'));
  const timestamps = bool(query.get('timestamps'));
  if (follow === null || previous === null || timestamps === null) return DECODE;
  const legacyTail = query.get('tail');
  const tailLines = legacyTail === 'all' ? undefined : integer(query.get('tailLines') ?? legacyTail);
  const sinceSeconds = integer(query.get('sinceSeconds'));
  const limitBytes = integer(query.get('limitBytes'));
  if (tailLines === null || sinceSeconds === null || limitBytes === null) return DECODE;
  const sinceTimeText = query.get('sinceTime');
  const sinceTime = sinceTimeText ? Date.parse(sinceTimeText) : undefined;
  if (sinceTimeText && (Number.isNaN(sinceTime) || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(sinceTimeText))) return DECODE;
  if ((tailLines !== undefined && tailLines < 0) || (limitBytes !== undefined && limitBytes < 1) || (sinceSeconds !== undefined && sinceSeconds < 1)) return INVALID;
  if (sinceSeconds !== undefined && sinceTime !== undefined) return INVALID;
  const options: LogOptions = { follow, timestamps };
  if (tailLines !== undefined) options.tailLines = tailLines;
  if (limitBytes !== undefined) options.limitBytes = limitBytes;
  if (sinceSeconds !== undefined) options.sinceMs = nowMs - sinceSeconds * 1000;
  if (sinceTime !== undefined) options.sinceMs = sinceTime;
  return { options, previous };
}
