/** The streaming calls of a runtime stub for tests and benchmarks of the authenticated API that serve no exec, attach or port-forward. */
export const noStreaming = { exec: notHere, attach: notHere, portForward: notHere, listPodSandbox: notHere };

async function notHere(): Promise<never> {
  throw new Error('exec, attach and port-forward are not served here');
}
