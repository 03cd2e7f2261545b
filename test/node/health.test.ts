/** runtimeNetworkError: the runtime's network state from its Status conditions (kubelet.go updateRuntimeUp). */
import { describe, expect, it } from 'vitest';
import { runtimeNetworkError } from '../../src/node/health.ts';
import type { RuntimeStatusInfo } from '../../src/runtime/types.ts';

type Conditions = RuntimeStatusInfo['conditions'];
const runtimeReady = { type: 'RuntimeReady', status: true, reason: '', message: '' };
const network = (status: boolean, reason = '', message = '') => ({ type: 'NetworkReady', status, reason, message });

describe('the runtime network state from its Status (kubelet.go updateRuntimeUp, runtime.go networkErrors)', () => {
  it.each<[string, Conditions, string | null]>([
    ['NetworkReady true: ready', [runtimeReady, network(true)], null],
    ['NetworkReady true, whatever else is said: ready', [{ ...runtimeReady, status: false }, network(true, 'Ignored', 'ignored')], null],
    [
      "NetworkReady false: the kubelet's words, with the condition's reason and message (containerd without CNI)",
      [runtimeReady, network(false, 'NetworkPluginNotReady', 'Network plugin returns error: cni plugin not initialized')],
      'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized',
    ],
    ['NetworkReady false without reason or message', [network(false)], 'container runtime network not ready: NetworkReady=false reason: message:'],
    ['no NetworkReady condition: not ready (Go prints the missing condition as <nil>)', [runtimeReady], 'container runtime network not ready: <nil>'],
    ['no conditions at all', [], 'container runtime network not ready: <nil>'],
  ])('%s', (_name, conditions, want) => {
    expect(runtimeNetworkError(conditions)).toBe(want);
  });
});
