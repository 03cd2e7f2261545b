/**
 * The node's facts as the syncLoop tells them: the runtime handlers a sandbox's user namespace is
 * checked against (kubelet_getters.go HandlerSupportsUserNamespaces reads runtimeState's handlers).
 */
import { describe, expect, it } from 'vitest';
import { NodeFacts } from '../../src/kubelet/nodeFacts.ts';

const supporting = { name: 'runc', features: { recursiveReadOnlyMounts: false, userNamespaces: true } };

describe('NodeFacts: the runtime handlers', () => {
  it('knows none before the runtime first answers, and those of the Status read at start', () => {
    expect(NodeFacts.atStart({}, []).runtimeHandlers()).toBeNull();
    expect(NodeFacts.atStart({ handlers: [] }, []).runtimeHandlers()).toEqual([]);
    expect(NodeFacts.atStart({ handlers: [supporting] }, []).runtimeHandlers()).toEqual([supporting]);
  });

  it('keeps what the last Status reported, an empty list included', () => {
    const facts = NodeFacts.atStart({}, []);
    facts.record({ type: 'NODE.RUNTIME_HANDLERS', handlers: [supporting] });
    expect(facts.runtimeHandlers()).toEqual([supporting]);
    facts.record({ type: 'NODE.RUNTIME_HANDLERS', handlers: [] });
    expect(facts.runtimeHandlers()).toEqual([]);
  });
});
