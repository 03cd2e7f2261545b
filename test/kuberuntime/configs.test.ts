/** Where a container's log is (configs.ts): as the agent names it, and found again from a running container's labels. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { containerConfig, containerLogPath, podLogDirectory, sandboxConfig } from '../../src/kuberuntime/configs.ts';
import { containerConfigFromRequest, containerConfigToWire } from '../../src/runtime/cri/objectsWire.ts';
import { container, makePod } from '../support/pods.ts';

describe('containerLogPath', () => {
  it("finds a running container's log from its labels", () => {
    const labels = { 'io.kubernetes.pod.namespace': 'shop', 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.uid': 'u1', 'io.kubernetes.container.name': 'app' };
    expect(containerLogPath('/var/log/pods', { labels, annotations: { 'io.kubernetes.container.restartCount': '3' } })).toBe('/var/log/pods/shop_web_u1/app/3.log');
    expect(containerLogPath('/var/log/pods', { labels: {}, annotations: {} })).toBeNull();
  });

  it('is the file the sandbox and container configs name', () => {
    const app = container('app');
    const pod = makePod('web', { containers: [app] });
    const config = containerConfig(pod, app, 'container', 2, 'busybox', []);
    const directory = sandboxConfig(pod, 0, '/var/log/pods').logDirectory;
    expect(directory).toBe(podLogDirectory('/var/log/pods', pod));
    expect(containerLogPath('/var/log/pods', config)).toBe(path.join(directory, config.logPath));
  });
});

describe('containerConfig: the attach settings', () => {
  it('passes stdin, stdinOnce and tty to the runtime, and through the CRI wire', () => {
    const app = container('app', { stdin: true, stdinOnce: true, tty: true });
    const pod = makePod('web', { containers: [app] });
    const config = containerConfig(pod, app, 'container', 0, 'busybox', []);
    expect(config).toMatchObject({ stdin: true, stdinOnce: true, tty: true });
    expect(containerConfigToWire(config).stdinOnce).toBe(true);
    expect(containerConfigFromRequest(containerConfigToWire(config))).toMatchObject({ stdin: true, stdinOnce: true, tty: true });
    const plain = containerConfig(pod, container('app'), 'container', 0, 'busybox', []);
    expect(plain.stdinOnce).toBeUndefined();
    expect(containerConfigToWire(plain).stdinOnce).toBe(false);
  });
});
