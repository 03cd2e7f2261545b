/** The CRI log format and the reader's options (format.ts), table-tested. */
import { describe, expect, it } from 'vitest';
import { LogFilter, fixedTimestamp, parseCriLine, parseJsonLine, parserFor, tailOffset } from '../../../src/kuberuntime/logs/format.ts';

const b = (s: string) => Buffer.from(s);

describe('parseCriLine', () => {
  it.each<[string, unknown]>([
    ['2026-11-25T10:00:00.123456789Z stdout F hello', { stream: 'stdout', partial: false, content: 'hello\n' }],
    ['2026-11-25T10:00:00.1Z stderr P part of a', { stream: 'stderr', partial: true, content: 'part of a' }],
    ['2026-11-25T10:00:00Z stdout F:x ', { stream: 'stdout', partial: false, content: '\n' }],
    ['2026-11-25T10:00:00Z stdin F nope', null],
    ['not a log line', null],
    ['yesterday stdout F hi', null],
  ])('%j', (line, expected) => {
    const parsed = parseCriLine(b(line));
    expect(parsed && { stream: parsed.stream, partial: parsed.partial, content: parsed.content.toString() }).toEqual(expected);
  });

  it('reads Docker JSON lines when the file starts with one', () => {
    const line = b('{"log":"hi\\n","stream":"stderr","time":"2026-11-25T10:00:00.5Z"}');
    expect(parserFor(line)).toBe(parseJsonLine);
    expect(parseJsonLine(line)).toMatchObject({ stream: 'stderr', partial: false, content: b('hi\n') });
    expect(parserFor(b('2026-11-25T10:00:00Z stdout F x'))).toBe(parseCriLine);
  });
});

describe('fixedTimestamp', () => {
  it.each([
    ['2026-11-25T10:00:00.123456789Z', '2026-11-25T10:00:00.123456789Z'],
    ['2026-11-25T10:00:00.1Z', '2026-11-25T10:00:00.100000000Z'],
    ['2026-11-25T10:00:00Z', '2026-11-25T10:00:00.000000000Z'],
    ['2026-11-25T11:00:00.5+01:00', '2026-11-25T10:00:00.500000000Z'],
  ])('%s → %s', (time, expected) => expect(fixedTimestamp(time)).toBe(expected));
});

describe('tailOffset', () => {
  it.each<[string, number, string]>([
    ['a\nb\nc\n', 2, 'b\nc\n'],
    ['a\nb\nc\n', 5, 'a\nb\nc\n'],
    ['a\nb\nc', 1, 'c'],
    ['a\nb\nc\n', 0, ''],
  ])('%j, last %i', (text, n, expected) => expect(b(text).subarray(tailOffset(b(text), n)).toString()).toBe(expected));
});

describe('LogFilter', () => {
  const line = (time: string, content: string, partial = false) => parseCriLine(b(`${time} stdout ${partial ? 'P' : 'F'} ${content}`))!;
  const render = (filter: LogFilter, lines: ReturnType<typeof line>[]) => lines.map((l) => filter.render(l)?.toString() ?? null);

  it('leaves out lines older than since, and prefixes the start of each logical line with the fixed timestamp', () => {
    const filter = new LogFilter({ sinceMs: Date.parse('2026-11-25T10:00:01Z'), timestamps: true });
    expect(render(filter, [line('2026-11-25T10:00:00Z', 'old'), line('2026-11-25T10:00:02.5Z', 'a long ', true), line('2026-11-25T10:00:02.6Z', 'line')])).toEqual([
      null,
      '2026-11-25T10:00:02.500000000Z a long ',
      'line\n',
    ]);
  });

  it('cuts to the byte budget and then writes nothing', () => {
    const filter = new LogFilter({ limitBytes: 5 });
    expect(render(filter, [line('2026-11-25T10:00:00Z', 'abc'), line('2026-11-25T10:00:00Z', 'defgh'), line('2026-11-25T10:00:00Z', 'x')])).toEqual(['abc\n', 'd', null]);
    expect(filter.exhausted).toBe(true);
  });
});
