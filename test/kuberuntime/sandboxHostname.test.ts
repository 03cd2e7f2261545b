/** A sandbox config that cannot be made (generatePodSandboxConfig's errors): no sandbox, the kubelet's event. */
import { expect, it } from 'vitest';
import { container, makePod } from '../support/pods.ts';
import { lifecycleRig, syncOnce } from './support.ts';

it('creates no sandbox for a pod whose fully qualified hostname is too long, with the FailedCreatePodSandBox event', async () => {
  const rig = lifecycleRig();
  const pod = makePod('web', { hostname: 'h'.repeat(60), subdomain: 'db', setHostnameAsFQDN: true, containers: [container('main')] });
  const result = await syncOnce(rig, pod);
  expect(result.errors).toEqual([expect.stringMatching(/^CreatePodSandboxError: failed to construct FQDN from pod hostname and cluster domain, FQDN h{60}\.db\..* is too long \(64 characters is the max/)]);
  expect(rig.events.lines()).toEqual([expect.stringMatching(/^FailedCreatePodSandBox: Failed to create pod sandbox: failed to construct FQDN/)]);
  expect(rig.runtime.callLog().filter((c) => c.startsWith('runPodSandbox'))).toEqual([]);
});
