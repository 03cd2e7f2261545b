/**
 * The kubelet's `CredentialProviderConfig` (staging/src/k8s.io/kubelet/config/v1/types.go): which
 * exec plugins give image pull credentials, for which images, cached how long. Decoded strictly
 * from YAML or JSON and validated with the kubelet's rules and words
 * (pkg/credentialprovider/plugin/config.go decode, validateCredentialProviderConfig).
 *
 * Pure: text in, config or error messages out. Reading the files is plugins.ts's.
 */

import { parse as parseYaml } from 'yaml';
import { labelProblem } from '../api/validate.ts';
import { DurationError, formatDuration, parseDuration } from '../duration.ts';
import { parseSchemelessUrl } from './urlGlob.ts';

/** The config's group in every version the kubelet's scheme has (plugin.go init: config v1alpha1, v1beta1, v1). */
const CONFIG_GROUP = 'kubelet.config.k8s.io';
const CONFIG_VERSIONS = ['v1', 'v1beta1', 'v1alpha1'];
const CONFIG_KIND = 'CredentialProviderConfig';

/** The plugin protocol's versions a provider may name (plugin.go apiVersions). */
export const PLUGIN_API_VERSIONS = [
  'credentialprovider.kubelet.k8s.io/v1',
  'credentialprovider.kubelet.k8s.io/v1alpha1',
  'credentialprovider.kubelet.k8s.io/v1beta1',
] as const;
const PLUGIN_API_V1 = 'credentialprovider.kubelet.k8s.io/v1';

/** tokenAttributes.cacheType values (config.go validCacheTypes), sorted as the kubelet lists them. */
const TOKEN_CACHE_TYPES = ['ServiceAccount', 'Token'];

export interface ExecEnvVar {
  name: string;
  value: string;
}

/** ServiceAccountTokenAttributes: the service-account token mode of a provider. */
export interface TokenAttributes {
  serviceAccountTokenAudience: string;
  cacheType: string;
  requireServiceAccount: boolean | null;
  requiredServiceAccountAnnotationKeys: string[];
  optionalServiceAccountAnnotationKeys: string[];
}

export interface CredentialProvider {
  /** The executable's name in the bin directory. */
  name: string;
  matchImages: string[];
  /** null when the field is missing (a validation error). */
  defaultCacheDurationMs: number | null;
  /** The plugin protocol's version, sent in requests and required in responses. */
  apiVersion: string;
  args: string[];
  env: ExecEnvVar[];
  tokenAttributes: TokenAttributes | null;
}

export interface CredentialProviderConfig {
  providers: CredentialProvider[];
}

/** A config file that does not decode; the message is the reason, the caller names the file. */
export class ConfigDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigDecodeError';
  }
}

// ---------------------------------------------------------------------------------------------
// Decoding

/**
 * Decodes one config file's text (YAML or JSON) as the kubelet's strict decoder does: the kind and
 * group checked, unknown fields refused (serializer.EnableStrict), wrong types refused.
 */
export function decodeCredentialProviderConfig(text: string): CredentialProviderConfig {
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    throw new ConfigDecodeError(`error converting YAML to JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const root = new Fields(document, '', 'CredentialProviderConfig');
  const apiVersion = root.string('apiVersion');
  const kind = root.string('kind');
  if (kind === '') throw new ConfigDecodeError("Object 'Kind' is missing");
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/', 2) : ['', apiVersion];
  if (kind !== CONFIG_KIND || group !== CONFIG_GROUP || !CONFIG_VERSIONS.includes(version!)) {
    throw new ConfigDecodeError(`no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(apiVersion)}`);
  }
  const providers = root.list('providers', '[]CredentialProvider', (item, path) => decodeProvider(new Fields(item, path, 'CredentialProvider')));
  root.refuseUnknown();
  return { providers };
}

function decodeProvider(fields: Fields): CredentialProvider {
  const duration = fields.optionalString('defaultCacheDuration');
  const provider: CredentialProvider = {
    name: fields.string('name'),
    matchImages: fields.strings('matchImages'),
    defaultCacheDurationMs: duration === null ? null : decodeDuration(duration),
    apiVersion: fields.string('apiVersion'),
    args: fields.strings('args'),
    env: fields.list('env', '[]ExecEnvVar', (item, path) => {
      const variable = new Fields(item, path, 'ExecEnvVar');
      const env = { name: variable.string('name'), value: variable.string('value') };
      variable.refuseUnknown();
      return env;
    }),
    tokenAttributes: fields.optionalObject('tokenAttributes', (attributes) => {
      const decoded: TokenAttributes = {
        serviceAccountTokenAudience: attributes.string('serviceAccountTokenAudience'),
        cacheType: attributes.string('cacheType'),
        requireServiceAccount: attributes.optionalBoolean('requireServiceAccount'),
        requiredServiceAccountAnnotationKeys: attributes.strings('requiredServiceAccountAnnotationKeys'),
        optionalServiceAccountAnnotationKeys: attributes.strings('optionalServiceAccountAnnotationKeys'),
      };
      attributes.refuseUnknown();
      return decoded;
    }, 'ServiceAccountTokenAttributes'),
  };
  fields.refuseUnknown();
  return provider;
}

/** metav1.Duration's text: Go's time.ParseDuration, negative values allowed (validation refuses them). */
export function decodeDuration(text: string): number {
  try {
    return parseDuration(text, { allowNegative: true });
  } catch (error) {
    if (error instanceof DurationError) throw new ConfigDecodeError(`time: invalid duration ${JSON.stringify(text)}`);
    throw error;
  }
}

/**
 * One JSON object being decoded into a Go struct: typed reads that name the field as Go's
 * encoding/json does, and the fields nothing read reported as strict decoding does.
 */
export class Fields {
  private readonly object: Record<string, unknown>;
  private readonly read = new Set<string>();

  constructor(
    value: unknown,
    /** The JSON path of this object (`providers[0]`), '' for the root. */
    private readonly path: string,
    /** The Go struct's name, for type errors. */
    private readonly struct: string,
  ) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ConfigDecodeError(`json: cannot unmarshal ${jsonType(value)} into Go value of type ${struct}`);
    }
    this.object = value as Record<string, unknown>;
  }

  private take(name: string): unknown {
    this.read.add(name);
    return this.object[name];
  }

  private typeError(name: string, value: unknown, goType: string): ConfigDecodeError {
    const field = this.path === '' ? name : `${this.path.replace(/\[\d+\]/g, '')}.${name}`;
    return new ConfigDecodeError(`json: cannot unmarshal ${jsonType(value)} into Go struct field ${this.struct}.${field} of type ${goType}`);
  }

  /** A string field; missing or null reads as '' (Go's zero value). */
  string(name: string): string {
    return this.optionalString(name) ?? '';
  }

  optionalString(name: string): string | null {
    const value = this.take(name);
    if (value === undefined || value === null) return null;
    if (typeof value !== 'string') throw this.typeError(name, value, 'string');
    return value;
  }

  optionalBoolean(name: string): boolean | null {
    const value = this.take(name);
    if (value === undefined || value === null) return null;
    if (typeof value !== 'boolean') throw this.typeError(name, value, 'bool');
    return value;
  }

  strings(name: string): string[] {
    return this.list(name, '[]string', (item) => {
      if (typeof item !== 'string') throw this.typeError(name, item, 'string');
      return item;
    });
  }

  /** A list field; `goType` names the Go slice type for a type error (`[]ExecEnvVar`). */
  list<T>(name: string, goType: string, decode: (item: unknown, path: string) => T): T[] {
    const value = this.take(name);
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) throw this.typeError(name, value, goType);
    return value.map((item, i) => decode(item, `${this.childPath(name)}[${i}]`));
  }

  optionalObject<T>(name: string, decode: (fields: Fields) => T, struct: string): T | null {
    const value = this.take(name);
    if (value === undefined || value === null) return null;
    return decode(new Fields(value, this.childPath(name), struct));
  }

  /** The object's keys in their written order, for a Go map. */
  keys(): string[] {
    return Object.keys(this.object);
  }

  /** The strict decoder's error for the fields no read asked for. */
  refuseUnknown(): void {
    const unknown = Object.keys(this.object).filter((key) => !this.read.has(key));
    if (unknown.length > 0) {
      throw new ConfigDecodeError(`strict decoding error: ${unknown.map((key) => `unknown field ${JSON.stringify(this.childPath(key))}`).join(', ')}`);
    }
  }

  private childPath(name: string): string {
    return this.path === '' ? name : `${this.path}.${name}`;
  }
}

function jsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'object';
  return typeof value;
}

/**
 * The providers of several files in one list (config.go readCredentialProviderConfig): a name seen
 * twice is refused while reading, before validation.
 */
export function mergeCredentialProviderConfigs(configs: readonly CredentialProviderConfig[]): CredentialProviderConfig {
  const seen = new Set<string>();
  const providers: CredentialProvider[] = [];
  for (const provider of configs.flatMap((config) => config.providers)) {
    if (seen.has(provider.name)) throw new ConfigDecodeError(`duplicate provider name ${JSON.stringify(provider.name)} found in configuration file(s)`);
    seen.add(provider.name);
    providers.push(provider);
  }
  return { providers };
}

// ---------------------------------------------------------------------------------------------
// Validation

/** Field errors as apimachinery's field.Error prints them (field/errors.go ErrorBody). */
const required = (field: string, detail = '') => `${field}: Required value${detail === '' ? '' : `: ${detail}`}`;
const invalid = (field: string, value: string, detail: string) => `${field}: Invalid value: ${value}: ${detail}`;
const forbidden = (field: string, detail: string) => `${field}: Forbidden: ${detail}`;
const notSupported = (field: string, value: string, supported: readonly string[]) =>
  `${field}: Unsupported value: ${JSON.stringify(value)}: supported values: ${supported.map((v) => JSON.stringify(v)).join(', ')}`;

/**
 * config.go validateCredentialProviderConfig with the KubeletServiceAccountTokenForCredentialProviders
 * gate on (beta and on by default from 1.34, pkg/features/kube_features.go): the errors in the
 * kubelet's order and words, field paths as it builds them (`providers.name`, without an index).
 */
export function validateCredentialProviderConfig(config: CredentialProviderConfig): string[] {
  const errors: string[] = [];
  if (config.providers.length === 0) errors.push(required('providers', 'at least 1 item in plugins is required'));
  for (const provider of config.providers) {
    const name = JSON.stringify(provider.name);
    if (provider.name.includes('/')) errors.push(invalid('providers.name', name, "provider name cannot contain '/'"));
    if (provider.name.includes(' ')) errors.push(invalid('providers.name', name, 'provider name cannot contain spaces'));
    if (provider.name === '.') errors.push(invalid('providers.name', name, "provider name cannot be '.'"));
    if (provider.name === '..') errors.push(invalid('providers.name', name, "provider name cannot be '..'"));

    if (provider.apiVersion === '') errors.push(required('providers.apiVersion'));
    else if (!(PLUGIN_API_VERSIONS as readonly string[]).includes(provider.apiVersion)) {
      errors.push(notSupported('providers.apiVersion', provider.apiVersion, PLUGIN_API_VERSIONS));
    }

    if (provider.matchImages.length === 0) errors.push(required('providers.matchImages', 'at least 1 item in matchImages is required'));
    for (const matchImage of provider.matchImages) {
      const parsed = parseSchemelessUrl(matchImage);
      if (typeof parsed === 'string') errors.push(invalid('providers.matchImages', JSON.stringify(matchImage), `match image is invalid: ${parsed}`));
    }

    if (provider.defaultCacheDurationMs === null) errors.push(required('providers.defaultCacheDuration'));
    else if (provider.defaultCacheDurationMs < 0) {
      errors.push(invalid('providers.defaultCacheDuration', formatDuration(provider.defaultCacheDurationMs), 'defaultCacheDuration must be greater than or equal to 0'));
    }

    if (provider.tokenAttributes !== null) errors.push(...tokenAttributesErrors(provider.tokenAttributes, provider.apiVersion));
  }
  return errors;
}

/** The tokenAttributes part of validateCredentialProviderConfig. */
function tokenAttributesErrors(attributes: TokenAttributes, apiVersion: string): string[] {
  const errors: string[] = [];
  const path = 'providers.tokenAttributes';
  if (attributes.serviceAccountTokenAudience === '') errors.push(required(`${path}.serviceAccountTokenAudience`));
  if (attributes.requireServiceAccount === null) errors.push(required(`${path}.requireServiceAccount`));
  if (apiVersion !== PLUGIN_API_V1) errors.push(forbidden(path, `tokenAttributes is only supported for ${PLUGIN_API_V1} API version`));
  if (attributes.requireServiceAccount === false && attributes.requiredServiceAccountAnnotationKeys.length > 0) {
    errors.push(forbidden(`${path}.requiredServiceAccountAnnotationKeys`, 'requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set'));
  }
  errors.push(...annotationKeyErrors(`${path}.requiredServiceAccountAnnotationKeys`, attributes.requiredServiceAccountAnnotationKeys));
  errors.push(...annotationKeyErrors(`${path}.optionalServiceAccountAnnotationKeys`, attributes.optionalServiceAccountAnnotationKeys));
  const both = [...new Set(attributes.requiredServiceAccountAnnotationKeys)].filter((key) => attributes.optionalServiceAccountAnnotationKeys.includes(key)).sort();
  if (both.length > 0) errors.push(invalid(path, `[]string{${both.map((key) => JSON.stringify(key)).join(', ')}}`, 'annotation keys cannot be both required and optional'));
  if (attributes.cacheType === '') {
    errors.push(required(`${path}.cacheType`, `cacheType is required to be set when tokenAttributes is specified. Supported values are: ${TOKEN_CACHE_TYPES.join(', ')}`));
  } else if (!TOKEN_CACHE_TYPES.includes(attributes.cacheType)) {
    errors.push(notSupported(`${path}.cacheType`, attributes.cacheType, TOKEN_CACHE_TYPES));
  }
  return errors;
}

/**
 * config.go validateServiceAccountAnnotationKeys: each key a qualified name, whatever its case
 * (the rule of annotation keys; the reason in statelet's words), and none twice.
 */
function annotationKeyErrors(field: string, keys: readonly string[]): string[] {
  const errors: string[] = [];
  const seen = new Set<string>();
  for (const key of keys) {
    const problem = labelProblem(key.toLowerCase(), '');
    if (problem !== null) errors.push(invalid(field, JSON.stringify(key), problem));
    if (seen.has(key)) errors.push(`${field}: Duplicate value: ${JSON.stringify(key)}`);
    seen.add(key);
  }
  return errors;
}
