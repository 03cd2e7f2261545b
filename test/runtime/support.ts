/** Helpers shared by the runtime tests: config builders, error capture and event reading. */
import {
  CriError,
  NamespaceMode,
  type ContainerConfig,
  type ContainerEvent,
  type PodSandboxConfig,
} from '../../src/runtime/types.ts';

/** A sandbox config in namespace `default` with uid `uid-<name>`; `overrides` replace whole fields. */
export function podSandboxConfig(name: string, overrides: Partial<PodSandboxConfig> = {}): PodSandboxConfig {
  return {
    metadata: { name, uid: `uid-${name}`, namespace: 'default', attempt: 0 },
    hostname: name,
    logDirectory: '',
    portMappings: [],
    labels: {},
    annotations: {},
    ...overrides,
  };
}

/** `PodSandboxConfig.linux` that sets only the network namespace mode (NODE for hostNetwork). */
export function networkNamespace(network: NamespaceMode): NonNullable<PodSandboxConfig['linux']> {
  return { securityContext: { namespaceOptions: { network } } };
}

/** A container config with attempt 0, no command and log path `<name>/0.log`; `overrides` replace whole fields. */
export function containerConfig(name: string, overrides: Partial<ContainerConfig> = {}): ContainerConfig {
  return {
    metadata: { name, attempt: 0 },
    image: { image: 'busybox' },
    command: [],
    args: [],
    workingDir: '',
    envs: [],
    mounts: [],
    labels: {},
    annotations: {},
    logPath: `${name}/0.log`,
    stdin: false,
    tty: false,
    ...overrides,
  };
}

/** The CriError a call rejects with; fails the test if it resolves or rejects with anything else. */
export async function rejection(promise: Promise<unknown>): Promise<CriError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof CriError) return err;
    throw err;
  }
  throw new Error('expected the call to reject');
}

/** Reads up to `count` events, fewer if the stream ends first. */
export async function take(iterator: AsyncIterator<ContainerEvent>, count: number): Promise<ContainerEvent[]> {
  const events: ContainerEvent[] = [];
  for (let i = 0; i < count; i++) {
    const next = await iterator.next();
    if (next.done) break;
    events.push(next.value);
  }
  return events;
}
