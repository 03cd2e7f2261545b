/**
 * The node as composeNode builds it: nothing runs until it is started (kubelet.go NewMainKubelet
 * constructs, Run starts); then the syncLoop's facts reach the read model the node's parts read, and
 * a source's warning about a pod it left out is recorded as the kubelet records it.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from 'xstate';
import { makePod } from '../support/pods.ts';
import { buildFakeNode } from '../support/fakeNode.ts';
import type { LogFields } from '../../src/log.ts';

describe('composeNode', () => {
  it('builds a node that runs nothing until started', async () => {
    const node = buildFakeNode({ expectedSources: ['file'] });
    node.runtime.clearCalls();
    node.clock.increment(5_000);
    expect(node.runtime.callLog()).toEqual([]);
    expect(node.facts.health()).toEqual({ lastRelistAt: null, lastRuntimeError: null });
    expect(node.facts.sourcesReady()).toBe(false);
    node.start();
    node.clock.increment(1_000);
    await waitFor(node.syncLoop, () => node.facts.health().lastRelistAt !== null);
    expect(node.runtime.callLog('listPodSandbox').length).toBeGreaterThan(0);
    node.syncLoop.send({ type: 'SOURCE.SEEN', source: 'file' });
    expect(node.facts.sourcesReady()).toBe(true);
    node.stop();
  });

  it('records the event a source asks for on a pod it left out', () => {
    const lines: { message: string; fields: LogFields }[] = [];
    const node = buildFakeNode({ log: (_level, message, fields) => void lines.push({ message, fields: fields ?? {} }) });
    node.start();
    const pod = makePod('dup');
    node.syncLoop.send({ type: 'SOURCE.ERROR', source: 'file', message: 'duplicate', warning: { pod, reason: 'FailedValidation', message: 'Error validating pod dup' } });
    expect(lines.find((l) => l.message === 'FailedValidation')?.fields).toMatchObject({ pod: 'default/dup', type: 'Warning', message: 'Error validating pod dup' });
    node.stop();
  });
});
