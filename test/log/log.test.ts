/** The agent's log: klog's text form or JSON; the lines of one turn of the event loop written together, the rest at exit. */
import { describe, expect, it } from 'vitest';
import { batchedLines, createLogger } from '../../src/log.ts';

describe('createLogger', () => {
  it('writes klog-like text lines and JSON records, debug only at verbosity 4 and up', () => {
    const lines: string[] = [];
    const text = createLogger({ format: 'text', verbosity: 0, write: (l) => lines.push(l) });
    text('info', 'Pod started', { pod: 'default/web', restarts: 2 });
    text('debug', 'not shown');
    const json = createLogger({ format: 'json', verbosity: 4, write: (l) => lines.push(l) });
    json('debug', 'shown', { err: new Error('boom') });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^I\d{4} \d\d:\d\d:\d\d\.\d{3} "Pod started" pod="default\/web" restarts=2$/);
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: 'debug', msg: 'shown', err: 'boom' });
  });
});

describe('batchedLines', () => {
  it('writes the lines of one turn in one write, in order, and what is pending at exit', async () => {
    const writes: string[] = [];
    let atExit: (() => void) | undefined;
    const write = batchedLines((text) => writes.push(text), (flush) => (atExit = flush));
    write('one');
    write('two');
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual(['one\ntwo\n']);
    write('three');
    atExit?.();
    expect(writes).toEqual(['one\ntwo\n', 'three\n']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toHaveLength(2);
  });
});
