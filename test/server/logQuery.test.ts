/** A containerLogs query (logQuery.ts) as the kubelet decodes and validates it. */
import { describe, expect, it } from 'vitest';
import { parseLogQuery } from '../../src/server/logQuery.ts';

const NOW = Date.parse('2026-11-25T10:00:00Z');
const parse = (query: string) => parseLogQuery(new URLSearchParams(query), NOW);

describe('parseLogQuery', () => {
  it.each<[string, unknown]>([
    ['', { options: { follow: false, timestamps: false }, previous: false }],
    ['follow=true&timestamps=1&previous=true', { options: { follow: true, timestamps: true }, previous: true }],
    ['tailLines=10&limitBytes=100', { options: { follow: false, timestamps: false, tailLines: 10, limitBytes: 100 }, previous: false }],
    ['tail=5', { options: { follow: false, timestamps: false, tailLines: 5 }, previous: false }],
    ['tail=all', { options: { follow: false, timestamps: false }, previous: false }],
    ['sinceSeconds=60', { options: { follow: false, timestamps: false, sinceMs: NOW - 60_000 }, previous: false }],
    ['sinceTime=2026-11-25T09:00:00Z', { options: { follow: false, timestamps: false, sinceMs: NOW - 3_600_000 }, previous: false }],
    ['tailLines=-5', { status: 422, body: '{"message": "Invalid request."}' }],
    ['limitBytes=0', { status: 422, body: '{"message": "Invalid request."}' }],
    ['sinceSeconds=10&sinceTime=2026-11-25T09:00:00Z', { status: 422, body: '{"message": "Invalid request."}' }],
    ['sinceTime=yesterday', { status: 400, body: '{"message": "Unable to decode query."}' }],
    ['tailLines=ten', { status: 400, body: '{"message": "Unable to decode query."}' }],
    ['follow=maybe', { status: 400, body: '{"message": "Unable to decode query."}' }],
  ])('%j', (query, expected) => expect(parse(query)).toEqual(expected));
});
