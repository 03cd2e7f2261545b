/**
 * API validation and defaulting of a v1 Pod, limited to the rules the agent depends on.
 *
 * Sources hand us plain JSON of unknown shape; `validatePod` is the one place that turns it into a
 * typed `Pod` (or a list of field errors), so the rest of the agent can trust the types. The rules
 * follow the API server's pod validation for the fields the agent reads; everything else a user
 * wrote is carried through untouched. Error messages start the way the API server's do
 * ("Required value", "Invalid value", "Unsupported value", "Duplicate value", "Forbidden") so they
 * read familiarly in logs.
 *
 * `applyPodDefaults` fills in the API defaults the agent relies on. It runs on a valid pod, so it
 * only ever sets absent fields to valid values and cannot make a valid pod invalid.
 */
import { parseQuantity } from './quantity.ts';
import type { Container, ContainerPort, Pod, Probe, PullPolicy } from './types.ts';

interface FieldError {
  /** Path of the offending field, e.g. `spec.containers[1].name`; empty for the object itself. */
  field: string;
  message: string;
}

export interface PodValidation {
  /** Present exactly when `errors` is empty. */
  pod?: Pod;
  errors: FieldError[];
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_LABEL_MAX = 63;
const DNS_SUBDOMAIN_MAX = 253;
const PORT_MAX = 65535;
/** activeDeadlineSeconds is stored as an unsigned 32-bit number by the API. */
const ACTIVE_DEADLINE_MAX = 2 ** 32 - 1;

const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'] as const;
/** A container's policies in the API server's message order (validation.go supportedContainerRestartPolicies, a sorted set). */
const CONTAINER_RESTART_POLICIES = ['Always', 'Never', 'OnFailure'] as const;
const RESTART_RULE_ACTIONS = ['Restart', 'RestartAllContainers'] as const;
const RESTART_RULE_OPERATORS = ['In', 'NotIn'] as const;
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;
const PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;
const PROBE_HANDLERS = ['exec', 'httpGet', 'tcpSocket', 'grpc'] as const;
const PROBE_COUNTS = [
  'initialDelaySeconds',
  'timeoutSeconds',
  'periodSeconds',
  'successThreshold',
  'failureThreshold',
  'terminationGracePeriodSeconds',
] as const;

function isDnsLabel(value: string): boolean {
  return value.length <= DNS_LABEL_MAX && DNS_LABEL.test(value);
}

/** A lowercase RFC 1123 subdomain: dot-separated DNS labels, 253 characters at most. */
export function isDnsSubdomain(value: string): boolean {
  return value.length <= DNS_SUBDOMAIN_MAX && value.split('.').every((part) => DNS_LABEL.test(part));
}

const QUALIFIED_NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * Why a label key or value is invalid, or null (k8s.io/apimachinery/pkg/util/validation
 * IsQualifiedName, IsValidLabelValue): a key is `[prefix/]name`, the prefix a DNS subdomain, the
 * name and the value at most 63 characters of alphanumerics, '-', '_' and '.', starting and
 * ending alphanumeric; a value may be empty.
 */
export function labelProblem(key: string, value: string): string | null {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && !isDnsSubdomain(prefix)) return `prefix ${JSON.stringify(prefix)} must be a DNS subdomain`;
  if (name.length === 0 || name.length > DNS_LABEL_MAX || !QUALIFIED_NAME_PART.test(name)) {
    return `name part must be 1-63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character`;
  }
  if (value.length > DNS_LABEL_MAX || (value !== '' && !QUALIFIED_NAME_PART.test(value))) {
    return `value ${JSON.stringify(value)} must be at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character`;
  }
  return null;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Collects errors for one object; each check returns whether the value passed. */
class Errors {
  readonly list: FieldError[] = [];

  add(field: string, message: string): false {
    this.list.push({ field, message });
    return false;
  }
  required(field: string): false {
    return this.add(field, 'Required value');
  }
  invalid(field: string, value: unknown, detail: string): false {
    return this.add(field, `Invalid value: ${show(value)}: ${detail}`);
  }
  unsupported(field: string, value: unknown, allowed: readonly string[]): false {
    const supported = allowed.map((v) => JSON.stringify(v)).join(', ');
    return this.add(field, `Unsupported value: ${show(value)}: supported values: ${supported}`);
  }
}

/** Longest rendering of a bad value in a message; the API server leaves out a too-long value altogether (field.TooLong). */
const SHOWN_MAX = 80;

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > SHOWN_MAX ? `${text.slice(0, SHOWN_MAX)}… (${text.length} characters)` : text;
}

function isOneOf<T extends string>(value: unknown, allowed: readonly T[]): value is T {
  return typeof value === 'string' && (allowed as readonly string[]).includes(value);
}

function checkRequiredString(errs: Errors, field: string, value: unknown): value is string {
  if (value === undefined || value === null || value === '') return errs.required(field);
  if (typeof value !== 'string') return errs.invalid(field, value, 'must be a string');
  return true;
}

function checkOptionalInteger(errs: Errors, field: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    errs.invalid(field, value, 'must be an integer');
  } else if (value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `greater than or equal to ${min}` : `between ${min} and ${max}, inclusive`;
    errs.invalid(field, value, `must be ${range}`);
  }
}

function checkStringMap(errs: Errors, field: string, value: unknown): void {
  if (value === undefined) return;
  if (!isRecord(value)) {
    errs.invalid(field, value, 'must be a map of strings');
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string') errs.invalid(`${field}[${key}]`, v, 'must be a string');
  }
}

/** Labels: a map of strings whose keys and values are label keys and values (ValidateLabels). */
function checkLabels(errs: Errors, labels: unknown): void {
  checkStringMap(errs, 'metadata.labels', labels);
  if (!isRecord(labels)) return;
  for (const [key, value] of Object.entries(labels)) {
    const problem = typeof value === 'string' ? labelProblem(key, value) : null;
    if (problem) errs.invalid(`metadata.labels[${key}]`, value, problem);
  }
}

function checkStringList(errs: Errors, field: string, value: unknown): void {
  if (value === undefined) return;
  if (!Array.isArray(value)) {
    errs.invalid(field, value, 'must be a list of strings');
    return;
  }
  value.forEach((item, i) => {
    if (typeof item !== 'string') errs.invalid(`${field}[${i}]`, item, 'must be a string');
  });
}

/**
 * The JSON type of the fields the agent reads that the checks below do not otherwise cover, as
 * the Go types of k8s.io/api/core/v1 decode them: the kubelet rejects a manifest whose field has
 * the wrong type when it decodes it (pkg/kubelet/config/common.go tryDecodeSinglePod), and so do
 * we, so that the rest of the agent can trust the `Pod` type. Members not listed are not read and
 * are carried through untouched.
 */
type Shape =
  | 'string'
  | 'integer'
  | 'boolean'
  /** A port: a number or a port name. */
  | 'intOrString'
  /** A resource quantity: a number or a string such as `100m` or `64Mi`. */
  | 'quantity'
  | { list: Shape }
  | { map: Shape }
  | { oneOf: readonly string[] }
  | { object: Fields };
type Fields = { readonly [member: string]: Shape };

const STRINGS: Shape = { list: 'string' };
const QUANTITIES: Shape = { map: 'quantity' };
const RESOURCES: Shape = { object: { requests: QUANTITIES, limits: QUANTITIES } };
const EXEC: Shape = { object: { command: STRINGS } };
const HTTP_GET: Shape = {
  object: {
    path: 'string',
    port: 'intOrString',
    host: 'string',
    scheme: { oneOf: ['HTTP', 'HTTPS'] },
    httpHeaders: { list: { object: { name: 'string', value: 'string' } } },
  },
};
const TCP_SOCKET: Shape = { object: { port: 'intOrString', host: 'string' } };
const LIFECYCLE_HANDLER: Shape = { object: { exec: EXEC, httpGet: HTTP_GET, tcpSocket: TCP_SOCKET, sleep: { object: { seconds: 'integer' } } } };
const KEY_SELECTOR: Shape = { object: { name: 'string', key: 'string', optional: 'boolean' } };
const FIELD_REF: Shape = { object: { apiVersion: 'string', fieldPath: 'string' } };
const RESOURCE_FIELD_REF: Shape = { object: { containerName: 'string', resource: 'string', divisor: 'quantity' } };
const KEY_TO_PATHS: Shape = { list: { object: { key: 'string', path: 'string', mode: 'integer' } } };
const DOWNWARD_ITEMS: Shape = { list: { object: { path: 'string', fieldRef: FIELD_REF, resourceFieldRef: RESOURCE_FIELD_REF, mode: 'integer' } } };
const SELECTOR_REQUIREMENTS: Shape = { list: { object: { key: 'string', operator: 'string', values: STRINGS } } };

const SELINUX_OPTIONS: Shape = { object: { user: 'string', role: 'string', type: 'string', level: 'string' } };
const PROFILE: Shape = { object: { type: { oneOf: ['RuntimeDefault', 'Unconfined', 'Localhost'] }, localhostProfile: 'string' } };
const SECURITY_CONTEXT: Shape = {
  object: {
    capabilities: { object: { add: STRINGS, drop: STRINGS } },
    privileged: 'boolean',
    seLinuxOptions: SELINUX_OPTIONS,
    runAsUser: 'integer',
    runAsGroup: 'integer',
    runAsNonRoot: 'boolean',
    readOnlyRootFilesystem: 'boolean',
    allowPrivilegeEscalation: 'boolean',
    procMount: { oneOf: ['Default', 'Unmasked'] },
    seccompProfile: PROFILE,
    appArmorProfile: PROFILE,
  },
};
const POD_SECURITY_CONTEXT: Shape = {
  object: {
    seLinuxOptions: SELINUX_OPTIONS,
    runAsUser: 'integer',
    runAsGroup: 'integer',
    runAsNonRoot: 'boolean',
    supplementalGroups: { list: 'integer' },
    supplementalGroupsPolicy: { oneOf: ['Merge', 'Strict'] },
    fsGroup: 'integer',
    sysctls: { list: { object: { name: 'string', value: 'string' } } },
    seccompProfile: PROFILE,
    appArmorProfile: PROFILE,
  },
};

const METADATA_FIELDS: Fields = {
  resourceVersion: 'string',
  generation: 'integer',
  creationTimestamp: 'string',
  deletionTimestamp: 'string',
  ownerReferences: { list: { object: {} } },
};

const CONTAINER_FIELDS: Fields = {
  workingDir: 'string',
  envFrom: {
    list: {
      object: {
        prefix: 'string',
        configMapRef: { object: { name: 'string', optional: 'boolean' } },
        secretRef: { object: { name: 'string', optional: 'boolean' } },
      },
    },
  },
  volumeMounts: {
    list: {
      object: { name: 'string', mountPath: 'string', readOnly: 'boolean', subPath: 'string', subPathExpr: 'string', mountPropagation: 'string' },
    },
  },
  lifecycle: { object: { postStart: LIFECYCLE_HANDLER, preStop: LIFECYCLE_HANDLER } },
  resources: RESOURCES,
  terminationMessagePath: 'string',
  terminationMessagePolicy: { oneOf: ['File', 'FallbackToLogsOnError'] },
  stdin: 'boolean',
  stdinOnce: 'boolean',
  tty: 'boolean',
  securityContext: SECURITY_CONTEXT,
  restartPolicyRules: { list: { object: { action: 'string', exitCodes: { object: { operator: 'string', values: { list: 'integer' } } } } } },
};

const ENV_VAR_FIELDS: Fields = {
  valueFrom: { object: { fieldRef: FIELD_REF, resourceFieldRef: RESOURCE_FIELD_REF, configMapKeyRef: KEY_SELECTOR, secretKeyRef: KEY_SELECTOR } },
};

const PORT_FIELDS: Fields = { name: 'string', hostIP: 'string' };

const PROBE_FIELDS: Fields = { exec: EXEC, httpGet: HTTP_GET, tcpSocket: TCP_SOCKET, grpc: { object: { port: 'integer', service: 'string' } } };

const VOLUME: Shape = {
  object: {
    name: 'string',
    emptyDir: { object: { medium: 'string', sizeLimit: 'quantity' } },
    configMap: { object: { name: 'string', items: KEY_TO_PATHS, defaultMode: 'integer', optional: 'boolean' } },
    secret: { object: { secretName: 'string', items: KEY_TO_PATHS, defaultMode: 'integer', optional: 'boolean' } },
    downwardAPI: { object: { items: DOWNWARD_ITEMS, defaultMode: 'integer' } },
    hostPath: { object: { path: 'string', type: 'string' } },
    projected: {
      object: {
        defaultMode: 'integer',
        sources: {
          list: {
            object: {
              configMap: { object: { name: 'string', items: KEY_TO_PATHS, optional: 'boolean' } },
              secret: { object: { name: 'string', items: KEY_TO_PATHS, optional: 'boolean' } },
              downwardAPI: { object: { items: DOWNWARD_ITEMS } },
              serviceAccountToken: { object: { path: 'string', audience: 'string', expirationSeconds: 'integer' } },
            },
          },
        },
      },
    },
  },
};

const SPEC_FIELDS: Fields = {
  nodeSelector: { map: 'string' },
  hostNetwork: 'boolean',
  hostPID: 'boolean',
  hostIPC: 'boolean',
  shareProcessNamespace: 'boolean',
  securityContext: POD_SECURITY_CONTEXT,
  hostname: 'string',
  hostnameOverride: 'string',
  subdomain: 'string',
  tolerations: {
    list: { object: { key: 'string', operator: 'string', value: 'string', effect: 'string', tolerationSeconds: 'integer' } },
  },
  affinity: {
    object: {
      nodeAffinity: {
        object: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            object: { nodeSelectorTerms: { list: { object: { matchExpressions: SELECTOR_REQUIREMENTS, matchFields: SELECTOR_REQUIREMENTS } } } },
          },
        },
      },
    },
  },
  runtimeClassName: 'string',
  hostUsers: 'boolean',
  overhead: QUANTITIES,
  resources: RESOURCES,
  priority: 'integer',
  priorityClassName: 'string',
  volumes: { list: VOLUME },
  hostAliases: { list: { object: { ip: 'string', hostnames: STRINGS } } },
  dnsPolicy: { oneOf: ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'] },
  dnsConfig: { object: { nameservers: STRINGS, searches: STRINGS, options: { list: { object: { name: 'string', value: 'string' } } } } },
  readinessGates: { list: { object: { conditionType: 'string' } } },
  serviceAccountName: 'string',
  enableServiceLinks: 'boolean',
  os: { object: { name: 'string' } },
};

/** Checks `value` (absent is fine) against `shape`, naming each offending member by its path. */
function checkShape(errs: Errors, field: string, value: unknown, shape: Shape): void {
  if (value === undefined) return;
  if (typeof shape === 'string') {
    const ok =
      shape === 'string' ? typeof value === 'string'
      : shape === 'integer' ? Number.isInteger(value)
      : shape === 'boolean' ? typeof value === 'boolean'
      : shape === 'intOrString' ? Number.isInteger(value) || typeof value === 'string'
      : Number.isFinite(value) || (typeof value === 'string' && !(parseQuantity(value) instanceof Error));
    if (!ok) errs.invalid(field, value, SHAPE_NAMES[shape]);
  } else if ('oneOf' in shape) {
    if (!isOneOf(value, shape.oneOf)) errs.unsupported(field, value, shape.oneOf);
  } else if ('list' in shape) {
    if (!Array.isArray(value)) errs.invalid(field, value, 'must be a list');
    else value.forEach((item: unknown, i) => checkShape(errs, `${field}[${i}]`, item, shape.list));
  } else if ('map' in shape) {
    if (!isRecord(value)) errs.invalid(field, value, 'must be a map');
    else for (const [key, item] of Object.entries(value)) checkShape(errs, `${field}[${key}]`, item, shape.map);
  } else if (!isRecord(value)) {
    errs.invalid(field, value, 'must be an object');
  } else {
    checkFields(errs, field, value, shape.object);
  }
}

const SHAPE_NAMES: Record<Extract<Shape, string>, string> = {
  string: 'must be a string',
  integer: 'must be an integer',
  boolean: 'must be a boolean',
  intOrString: 'must be a port number or name',
  quantity: 'must be a quantity, e.g. 100m or 64Mi',
};

/** Checks the listed members of an object that is known to be one. */
function checkFields(errs: Errors, field: string, value: Record<string, unknown>, fields: Fields): void {
  for (const [member, shape] of Object.entries(fields)) checkShape(errs, `${field}.${member}`, value[member], shape);
}

function checkMetadata(errs: Errors, metadata: unknown): void {
  if (metadata === undefined || metadata === null) {
    errs.required('metadata');
    return;
  }
  if (!isRecord(metadata)) {
    errs.invalid('metadata', metadata, 'must be an object');
    return;
  }
  const { name, namespace, uid } = metadata;
  if (checkRequiredString(errs, 'metadata.name', name) && !isDnsSubdomain(name)) {
    errs.invalid(
      'metadata.name',
      name,
      "a lowercase RFC 1123 subdomain of at most 253 characters: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit",
    );
  }
  if (checkRequiredString(errs, 'metadata.namespace', namespace) && !isDnsLabel(namespace)) {
    errs.invalid(
      'metadata.namespace',
      namespace,
      "a lowercase RFC 1123 label of at most 63 characters: lowercase letters, digits and '-', starting and ending with a letter or digit",
    );
  }
  // The API server assigns UIDs; every pod the agent runs has one (static pods get a generated one).
  checkRequiredString(errs, 'metadata.uid', uid);
  checkLabels(errs, metadata['labels']);
  checkStringMap(errs, 'metadata.annotations', metadata['annotations']);
  checkOptionalInteger(errs, 'metadata.deletionGracePeriodSeconds', metadata['deletionGracePeriodSeconds'], 0);
  checkFields(errs, 'metadata', metadata, METADATA_FIELDS);
}

function checkProbe(errs: Errors, field: string, probe: unknown, kind: 'liveness' | 'readiness' | 'startup'): void {
  if (probe === undefined) return;
  if (!isRecord(probe)) {
    errs.invalid(field, probe, 'must be an object');
    return;
  }
  checkFields(errs, field, probe, PROBE_FIELDS);
  const handlers = PROBE_HANDLERS.filter((h) => probe[h] !== undefined);
  if (handlers.length === 0) errs.add(field, 'Required value: must specify a handler type');
  if (handlers.length > 1) errs.add(`${field}.${handlers[1]}`, 'Forbidden: may not specify more than 1 handler type');
  for (const count of PROBE_COUNTS) checkOptionalInteger(errs, `${field}.${count}`, probe[count], 0);
  // A liveness or startup probe acts on the first success; a higher threshold would be ignored.
  const success = probe['successThreshold'];
  if (kind !== 'readiness' && success !== undefined && success !== 0 && success !== 1) {
    errs.invalid(`${field}.successThreshold`, success, 'must be 1');
  }
}

function checkPorts(errs: Errors, field: string, ports: unknown): void {
  if (ports === undefined) return;
  if (!Array.isArray(ports)) {
    errs.invalid(field, ports, 'must be a list');
    return;
  }
  ports.forEach((port: unknown, i) => {
    const at = `${field}[${i}]`;
    if (!isRecord(port)) {
      errs.invalid(at, port, 'must be an object');
      return;
    }
    if (port['containerPort'] === undefined) errs.required(`${at}.containerPort`);
    else checkOptionalInteger(errs, `${at}.containerPort`, port['containerPort'], 1, PORT_MAX);
    // hostPort 0 means "no host port" in the API.
    if (port['hostPort'] !== 0) checkOptionalInteger(errs, `${at}.hostPort`, port['hostPort'], 1, PORT_MAX);
    const protocol = port['protocol'];
    if (protocol !== undefined && !isOneOf(protocol, PROTOCOLS)) errs.unsupported(`${at}.protocol`, protocol, PROTOCOLS);
    checkFields(errs, at, port, PORT_FIELDS);
  });
}

function checkEnv(errs: Errors, field: string, env: unknown): void {
  if (env === undefined) return;
  if (!Array.isArray(env)) {
    errs.invalid(field, env, 'must be a list');
    return;
  }
  env.forEach((item: unknown, i) => {
    const at = `${field}[${i}]`;
    if (!isRecord(item)) {
      errs.invalid(at, item, 'must be an object');
      return;
    }
    checkRequiredString(errs, `${at}.name`, item['name']);
    const value = item['value'];
    if (value !== undefined && typeof value !== 'string') errs.invalid(`${at}.value`, value, 'must be a string');
    checkFields(errs, at, item, ENV_VAR_FIELDS);
  });
}

/** The largest uid or gid a security context may name (validation.go ValidateSecurityContext). */
const MAX_ID = 2147483647;

/**
 * The rules of a container's security context the API server checks
 * (pkg/apis/core/validation/validation.go ValidateSecurityContext): ids in range, and no privilege
 * escalation forbidden where it is granted anyway.
 */
function checkSecurityContext(errs: Errors, field: string, context: unknown): void {
  if (!isRecord(context)) return; // its shape is checked with the container's other fields
  checkOptionalInteger(errs, `${field}.runAsUser`, context['runAsUser'], 0, MAX_ID);
  checkOptionalInteger(errs, `${field}.runAsGroup`, context['runAsGroup'], 0, MAX_ID);
  if (context['allowPrivilegeEscalation'] !== false) return;
  if (context['privileged'] === true) errs.add(field, 'Invalid value: cannot set `allowPrivilegeEscalation` to false and `privileged` to true');
  const add = isRecord(context['capabilities']) ? context['capabilities']['add'] : undefined;
  if (Array.isArray(add) && add.includes('CAP_SYS_ADMIN')) errs.add(field, 'Invalid value: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN');
}

const RESTART_RULES_MAX = 20;
const RESTART_RULE_CODES_MAX = 255;

/**
 * A container's own restart policy and rules (validation.go validateContainerRestartPolicy,
 * ContainerRestartRules): rules need a policy; at most 20 rules, each an action and `exitCodes`
 * with an operator and at most 255 values.
 */
function checkContainerRestartPolicy(errs: Errors, field: string, container: Record<string, unknown>): void {
  const policy = container['restartPolicy'];
  const rules = container['restartPolicyRules'];
  if (policy === undefined) {
    if (Array.isArray(rules) && rules.length > 0) errs.add(`${field}.restartPolicy`, 'Required value: must specify restartPolicy when restart rules are used');
  } else if (!isOneOf(policy, CONTAINER_RESTART_POLICIES)) errs.unsupported(`${field}.restartPolicy`, policy, CONTAINER_RESTART_POLICIES);
  if (!Array.isArray(rules)) return; // absent, or its shape is checked with the other fields
  if (rules.length > RESTART_RULES_MAX) errs.add(`${field}.restartPolicyRules`, `Too many: ${rules.length}: must have at most ${RESTART_RULES_MAX} items`);
  rules.forEach((rule: unknown, i) => {
    if (!isRecord(rule)) return;
    const at = `${field}.restartPolicyRules[${i}]`;
    if (!isOneOf(rule['action'], RESTART_RULE_ACTIONS)) errs.unsupported(`${at}.action`, rule['action'], RESTART_RULE_ACTIONS);
    const codes = rule['exitCodes'];
    if (!isRecord(codes)) {
      errs.add(`${at}.exitCodes`, 'Required value: must be specified');
      return;
    }
    if (!isOneOf(codes['operator'], RESTART_RULE_OPERATORS)) errs.unsupported(`${at}.exitCodes.operator`, codes['operator'], RESTART_RULE_OPERATORS);
    const values = codes['values'];
    if (Array.isArray(values) && values.length > RESTART_RULE_CODES_MAX) errs.add(`${at}.exitCodes.values`, `Too many: ${values.length}: must have at most ${RESTART_RULE_CODES_MAX} items`);
  });
}

/**
 * An init container's restart policy (validation.go validateInitContainerRestartPolicy): rules need
 * a policy, and that alone is reported when one is missing. With ContainerRestartRules and
 * RestartAllContainersOnContainerExits (both on in v1.37, the latter allowing rules on sidecars),
 * any policy — `Always`, which makes a sidecar, `OnFailure` or `Never` — and its rules are checked
 * as a regular container's (validateContainerRestartPolicy).
 */
function checkInitRestartPolicy(errs: Errors, field: string, container: Record<string, unknown>): void {
  if (container['restartPolicy'] !== undefined) {
    checkContainerRestartPolicy(errs, field, container);
    return;
  }
  const rules = container['restartPolicyRules'];
  if (Array.isArray(rules) && rules.length > 0) errs.add(`${field}.restartPolicy`, 'Required value: must specify restartPolicy when restart rules are used');
}

function checkContainer(errs: Errors, field: string, container: Record<string, unknown>, isInit: boolean): void {
  const name = container['name'];
  if (checkRequiredString(errs, `${field}.name`, name) && !isDnsLabel(name)) {
    errs.invalid(`${field}.name`, name, "a lowercase RFC 1123 label: lowercase letters, digits and '-', at most 63 characters");
  }
  const image = container['image'];
  if (checkRequiredString(errs, `${field}.image`, image) && image.trim() !== image) {
    errs.invalid(`${field}.image`, image, 'must not have leading or trailing whitespace');
  }
  checkStringList(errs, `${field}.command`, container['command']);
  checkStringList(errs, `${field}.args`, container['args']);
  checkEnv(errs, `${field}.env`, container['env']);
  checkPorts(errs, `${field}.ports`, container['ports']);

  const pull = container['imagePullPolicy'];
  if (pull !== undefined && !isOneOf(pull, PULL_POLICIES)) errs.unsupported(`${field}.imagePullPolicy`, pull, PULL_POLICIES);

  if (isInit) checkInitRestartPolicy(errs, field, container);
  else checkContainerRestartPolicy(errs, field, container);

  checkSecurityContext(errs, `${field}.securityContext`, container['securityContext']);
  checkProbe(errs, `${field}.livenessProbe`, container['livenessProbe'], 'liveness');
  checkProbe(errs, `${field}.readinessProbe`, container['readinessProbe'], 'readiness');
  checkProbe(errs, `${field}.startupProbe`, container['startupProbe'], 'startup');
  checkFields(errs, field, container, CONTAINER_FIELDS);
}

function checkContainerList(errs: Errors, spec: Record<string, unknown>, key: 'initContainers' | 'containers', names: Set<string>): void {
  const list = spec[key];
  const field = `spec.${key}`;
  if (list === undefined || (Array.isArray(list) && list.length === 0)) {
    if (key === 'containers') errs.required(field);
    return;
  }
  if (!Array.isArray(list)) {
    errs.invalid(field, list, 'must be a list');
    return;
  }
  list.forEach((container: unknown, i) => {
    const at = `${field}[${i}]`;
    if (!isRecord(container)) {
      errs.invalid(at, container, 'must be an object');
      return;
    }
    checkContainer(errs, at, container, key === 'initContainers');
    // Init and regular containers share one namespace of names; the second use is the error.
    const name = container['name'];
    if (typeof name === 'string' && name !== '') {
      if (names.has(name)) errs.add(`${at}.name`, `Duplicate value: ${show(name)}`);
      names.add(name);
    }
  });
}

/** Members an ephemeral container may not set (validation.go allowedEphemeralContainerFields). */
const NOT_FOR_EPHEMERAL = ['ports', 'resources', 'livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle', 'restartPolicy', 'restartPolicyRules'] as const;

/**
 * Whether a member holds more than its Go zero value, as validateFieldAllowList compares: the API
 * server writes `resources: {}` on every ephemeral container (a struct, empty), which is unset;
 * an empty list is unset too; a probe or hook, even empty, is a pointer that is set.
 */
function isSetMember(member: (typeof NOT_FOR_EPHEMERAL)[number], value: unknown): boolean {
  const isEmpty = (v: unknown): boolean => v === undefined || (Array.isArray(v) && v.length === 0) || (isRecord(v) && Object.values(v).every(isEmpty));
  return member === 'ports' || member === 'resources' ? !isEmpty(value) : value !== undefined;
}

/**
 * `spec.ephemeralContainers` (validation.go validateEphemeralContainers, and ValidatePodCreate):
 * none in a pod being created, which is what a static pod is; otherwise each a valid container
 * whose name no other container of any kind has, targeting an init or regular container if any,
 * and without the members that would make it part of the workload (ports, probes, hooks,
 * resources, volume subPaths).
 */
function checkEphemeralContainers(errs: Errors, spec: Record<string, unknown>, names: Set<string>, create: boolean): void {
  const list = spec['ephemeralContainers'];
  if (list === undefined || (Array.isArray(list) && list.length === 0)) return;
  const field = 'spec.ephemeralContainers';
  if (create) {
    errs.add(field, 'Forbidden: cannot be set on create');
    return;
  }
  if (!Array.isArray(list)) {
    errs.invalid(field, list, 'must be a list');
    return;
  }
  const targets = new Set(names);
  list.forEach((container: unknown, i) => {
    const at = `${field}[${i}]`;
    if (!isRecord(container)) {
      errs.invalid(at, container, 'must be an object');
      return;
    }
    checkContainer(errs, at, container, false);
    const name = container['name'];
    if (typeof name === 'string' && name !== '') {
      if (names.has(name)) errs.add(`${at}.name`, `Duplicate value: ${show(name)}`);
      names.add(name);
    }
    const target = container['targetContainerName'];
    if (target !== undefined && typeof target !== 'string') errs.invalid(`${at}.targetContainerName`, target, 'must be a string');
    else if (target && !targets.has(target)) errs.add(`${at}.targetContainerName`, `Not found: ${show(target)}`);
    for (const member of NOT_FOR_EPHEMERAL) {
      if (isSetMember(member, container[member])) errs.add(`${at}.${member}`, 'Forbidden: cannot be set for an Ephemeral Container');
    }
    const mounts = container['volumeMounts'];
    if (!Array.isArray(mounts)) return;
    mounts.forEach((mount: unknown, m) => {
      if (!isRecord(mount)) return;
      for (const member of ['subPath', 'subPathExpr'] as const) {
        if (mount[member]) errs.add(`${at}.volumeMounts[${m}].${member}`, 'Forbidden: cannot be set for an Ephemeral Container');
      }
    });
  });
}

function checkSpec(errs: Errors, spec: unknown, create: boolean): void {
  if (spec === undefined || spec === null) {
    errs.required('spec');
    return;
  }
  if (!isRecord(spec)) {
    errs.invalid('spec', spec, 'must be an object');
    return;
  }
  const names = new Set<string>();
  checkContainerList(errs, spec, 'initContainers', names);
  checkContainerList(errs, spec, 'containers', names);
  checkEphemeralContainers(errs, spec, names, create);

  const restart = spec['restartPolicy'];
  if (restart !== undefined && !isOneOf(restart, RESTART_POLICIES)) {
    errs.unsupported('spec.restartPolicy', restart, RESTART_POLICIES);
  }
  checkOptionalInteger(errs, 'spec.terminationGracePeriodSeconds', spec['terminationGracePeriodSeconds'], 0);
  checkOptionalInteger(errs, 'spec.activeDeadlineSeconds', spec['activeDeadlineSeconds'], 1, ACTIVE_DEADLINE_MAX);
  const podContext = spec['securityContext'];
  if (isRecord(podContext)) {
    for (const id of ['runAsUser', 'runAsGroup', 'fsGroup'] as const) checkOptionalInteger(errs, `spec.securityContext.${id}`, podContext[id], 0, MAX_ID);
  }
  // validation.go validatePodSpecSecurityContext: one pid namespace or the other.
  if (spec['shareProcessNamespace'] === true && spec['hostPID'] === true) {
    errs.add('spec.securityContext.shareProcessNamespace', 'Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled');
  }
  checkHostnameOverride(errs, spec);
  checkFields(errs, 'spec', spec, SPEC_FIELDS);
}

/** validation.go validatePodHostName: an RFC 1123 subdomain of at most 64 characters, off the host network, not with setHostnameAsFQDN. */
function checkHostnameOverride(errs: Errors, spec: Record<string, unknown>): void {
  const override = spec['hostnameOverride'];
  if (typeof override !== 'string') return; // absent, or its type is checked with the other fields
  const field = 'spec.hostnameOverride';
  if (spec['setHostnameAsFQDN'] === true) errs.add(field, 'Forbidden: may not be specified when setHostnameAsFQDN is true');
  if (spec['hostNetwork'] === true) errs.add(field, 'Forbidden: may not be specified when hostNetwork is true');
  if (override.length > 64) errs.add(field, 'Too long: may not be more than 64 bytes');
  if (!isDnsSubdomain(override) || override === '') errs.invalid(field, override, "a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit");
}

/** Narrowing happens by checking every field the `Pod` type promises; this is that claim. */
function conforms(value: unknown, errs: Errors): value is Pod {
  return isRecord(value) && errs.list.length === 0;
}

/**
 * `value` without the object members that are null. Go's decoder leaves a field set to null at its
 * zero value, so a manifest's `labels:` or `command:` with nothing after it means "not set" to the
 * kubelet (pkg/kubelet/config/common.go tryDecodeSinglePod); it does here too. The same object when
 * it holds no such member.
 */
export function withoutNullMembers(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(withoutNullMembers);
    return items.some((item, i) => item !== value[i]) ? items : value;
  }
  if (!isRecord(value)) return value;
  const entries = Object.entries(value);
  const kept = entries.map(([, member]) => (member === null ? undefined : withoutNullMembers(member)));
  if (kept.every((member, i) => member === entries[i]![1])) return value;
  // Built member by member rather than copied and then deleted from: an object a member was
  // deleted from is kept by V8 as a dictionary, several times the size of a plain one.
  const copy: Record<string, unknown> = {};
  for (const [i, [key]] of entries.entries()) if (kept[i] !== undefined) copy[key] = kept[i];
  return copy;
}

/**
 * Checks that `value` is a v1 Pod the agent can run. Optional fields are checked only when set, so
 * the same rules apply before and after `applyPodDefaults`. Its input is decoded: members set to
 * null already dropped (`withoutNullMembers`, as the client and the manifest sources decode).
 * `create`: the pod is being created, as a static pod is each time its manifest is read (the
 * kubelet's file and HTTP sources use ValidatePodCreate): it may not have ephemeral containers.
 */
export function validatePod(value: unknown, options: { create?: boolean } = {}): PodValidation {
  const errs = new Errors();
  if (!isRecord(value)) {
    errs.invalid('', value === null ? null : typeof value, 'a Pod must be an object');
    return { errors: errs.list };
  }
  const { apiVersion, kind } = value;
  if (apiVersion !== undefined && apiVersion !== 'v1') errs.unsupported('apiVersion', apiVersion, ['v1']);
  if (kind !== undefined && kind !== 'Pod') errs.unsupported('kind', kind, ['Pod']);
  checkMetadata(errs, value['metadata']);
  checkSpec(errs, value['spec'], options.create === true);
  if (value['status'] !== undefined && !isRecord(value['status'])) errs.invalid('status', value['status'], 'must be an object');
  return conforms(value, errs) ? { pod: value, errors: [] } : { errors: errs.list };
}

/**
 * The API's pull-policy default: `Always` when the image asks for `latest` (explicitly, or by
 * having neither tag nor digest), `IfNotPresent` otherwise.
 */
export function defaultPullPolicy(image: string): PullPolicy {
  const at = image.indexOf('@');
  const named = at === -1 ? image : image.slice(0, at);
  const hasDigest = at !== -1;
  // A ':' before the last '/' belongs to a registry host:port, not to a tag.
  const colon = named.lastIndexOf(':');
  const tag = colon > named.lastIndexOf('/') ? named.slice(colon + 1) : '';
  if (tag === 'latest') return 'Always';
  if (tag === '' && !hasDigest) return 'Always';
  return 'IfNotPresent';
}

type ProbeTiming = 'periodSeconds' | 'timeoutSeconds' | 'successThreshold' | 'failureThreshold';
const PROBE_DEFAULTS: Record<ProbeTiming, number> = { periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 };
const PROBE_TIMINGS: readonly ProbeTiming[] = ['periodSeconds', 'timeoutSeconds', 'successThreshold', 'failureThreshold'];

/** The API treats 0 in these fields as unset (Go zero value), so 0 is defaulted as well. */
function defaultProbe(probe: Probe | undefined): Probe | undefined {
  if (probe === undefined) return undefined;
  const out: Probe = { ...probe };
  for (const key of PROBE_TIMINGS) {
    if (!out[key]) out[key] = PROBE_DEFAULTS[key];
  }
  if (out.httpGet) out.httpGet = { ...out.httpGet, path: out.httpGet.path || '/', scheme: out.httpGet.scheme ?? 'HTTP' };
  return out;
}

function defaultPort(port: ContainerPort): ContainerPort {
  return { ...port, protocol: port.protocol ?? 'TCP' };
}

function defaultContainer<C extends Container>(container: C): C {
  const out: C = {
    ...container,
    imagePullPolicy: container.imagePullPolicy ?? defaultPullPolicy(container.image ?? ''),
    terminationMessagePath: container.terminationMessagePath || '/dev/termination-log',
    terminationMessagePolicy: container.terminationMessagePolicy ?? 'File',
  };
  if (container.ports) out.ports = container.ports.map(defaultPort);
  // A limit without a request is its request (defaults.go SetDefaults_Pod).
  const limits = container.resources?.limits;
  if (limits) out.resources = { ...container.resources, requests: { ...limits, ...container.resources?.requests } };
  for (const key of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
    const probe = defaultProbe(container[key]);
    if (probe) out[key] = probe;
  }
  return out;
}

/**
 * `pod` with the API defaults the agent relies on filled in: restart policy, grace period, DNS
 * policy, and per container (ephemeral ones too) pull policy, termination message settings, port
 * protocols, probe timings and requests from limits. The input is not modified: the spec and its
 * containers are new objects, the rest (metadata, status, volumes…) is the input's own.
 */
export function applyPodDefaults(pod: Pod): Pod {
  const spec = {
    ...pod.spec,
    restartPolicy: pod.spec.restartPolicy ?? 'Always',
    terminationGracePeriodSeconds: pod.spec.terminationGracePeriodSeconds ?? 30,
    dnsPolicy: pod.spec['dnsPolicy'] ?? 'ClusterFirst',
    containers: pod.spec.containers.map(defaultContainer),
  };
  if (spec.initContainers) spec.initContainers = spec.initContainers.map(defaultContainer);
  if (spec.ephemeralContainers) spec.ephemeralContainers = spec.ephemeralContainers.map(defaultContainer);
  return { ...pod, spec };
}
