/**
 * Reads the KubeletConfiguration (`kubelet.config.k8s.io/v1beta1`) the way the kubelet does
 * (cmd/kubelet/app/server.go loadConfigFile, mergeKubeletConfigurations): the --config file, then
 * every `*.conf` drop-in under --config-dir applied over it as a JSON merge patch (RFC 7386), in
 * filepath.WalkDir order. Each field of the pinned release (kubeletConfigApi.ts) is then either a
 * setting of statelet's (options.ts `configField`) or has a status (kubeletConfigFields.ts): a field
 * statelet does not implement is accepted only at its default and refused otherwise, naming the
 * file, the field and the value. A zero value where SetDefaults_KubeletConfiguration puts a
 * default (`0s`, `""`, 0 in a non-pointer field) means that default. A field outside the schema
 * is warned about and ignored, as the kubelet's lenient decoding does; a wrong type, apiVersion or
 * kind fails the start.
 */

import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { AgentSettings } from './config.ts';
import { OPTIONS, ValueError, type AnyOptionSpec, type SettingKey } from './options.ts';
import { DurationError, parseDuration } from '../duration.ts';
import { parseQuantity } from '../api/quantity.ts';
import { KUBELET_CONFIG_DEFAULTS, KUBELET_CONFIG_FIELDS, type ConfigField } from './kubeletConfigApi.ts';
import { CONFIG_FIELD_STATUS, CONFIG_PATH_FIELDS } from './kubeletConfigFields.ts';

const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
const KUBELET_CONFIG_KIND = 'KubeletConfiguration';
const DROP_IN_EXTENSION = '.conf';

/** A problem with a config file; the message starts with the file's path. */
export class ConfigFileError extends Error {
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super(`${file}: ${detail}`);
    this.name = 'ConfigFileError';
  }
}

interface KubeletConfigResult {
  /** Only the settings the files set; merge them over the defaults. */
  settings: Partial<AgentSettings>;
  /** The file each setting came from (the last drop-in that set it, else --config), for messages. */
  origins: Partial<Record<SettingKey, string>>;
  /** One line per field outside the schema, for the caller to log. */
  warnings: string[];
}

type Document = Record<string, unknown>;

const OPTIONS_BY_FIELD: ReadonlyMap<string, AnyOptionSpec> = new Map(
  OPTIONS.flatMap((spec) => (spec.configField === undefined ? [] : [[spec.configField, spec] as const])),
);

/**
 * The settings of `--config` (may be absent) with the drop-ins of `--config-dir` (may be absent)
 * merged over it.
 */
export function loadKubeletConfig(configFile: string | undefined, configDir: string | undefined): KubeletConfigResult {
  const warnings: string[] = [];
  let document: Document = {};
  const origins = new Map<string, string>();
  if (configFile) {
    document = configFileDocument(readDocument(configFile, 'config', warnings), configFile);
    for (const field of Object.keys(document)) origins.set(field, configFile);
  }
  // The kubelet merges drop-ins onto its defaulted configuration, whose report frequency is set
  // already (configFileDocument), to 5m when --config set neither frequency: a drop-in's update
  // frequency then leaves it, unless a drop-in also resets the report frequency (null, 0s).
  let reportFollowsUpdate = true;
  if (configDir) {
    reportFollowsUpdate = document.nodeStatusReportFrequency !== undefined;
    for (const file of dropInFiles(configDir)) {
      const patch = readDocument(file, 'drop-in', warnings);
      if ('nodeStatusReportFrequency' in patch) reportFollowsUpdate = true;
      // The kubelet merges onto its defaulted configuration, whose evictionHard is the default
      // thresholds (server.go loadConfigFile): a drop-in's evictionHard patches them.
      if (isObject(patch.evictionHard) && document.evictionHard === undefined) document.evictionHard = { ...KUBELET_DEFAULT_EVICTION_HARD };
      document = mergePatch(document, patch) as Document;
      for (const [field, value] of Object.entries(patch)) {
        if (value === null) origins.delete(field);
        else origins.set(field, file);
      }
    }
  }
  return { ...settingsOf(document, (field) => origins.get(field) ?? configFile ?? configDir ?? '', warnings, reportFollowsUpdate), warnings };
}

/** Maps the text of a config file named `file` (for messages and relative paths). */
export function parseKubeletConfig(text: string, file: string): { settings: Partial<AgentSettings>; warnings: string[] } {
  const warnings: string[] = [];
  const document = configFileDocument(parseDocument(text, file, 'config', warnings), file);
  return { settings: settingsOf(document, () => file, warnings, true).settings, warnings };
}

/** The settings of a whole (merged) document; `origin` names the file a top-level field came from. */
function settingsOf(
  document: Document,
  origin: (field: string) => string,
  warnings: string[],
  reportFollowsUpdate: boolean,
): { settings: Partial<AgentSettings>; origins: Partial<Record<SettingKey, string>> } {
  const settings: Partial<AgentSettings> = {};
  const origins: Partial<Record<SettingKey, string>> = {};
  readFields(document, '', KUBELET_CONFIG_FIELDS, KUBELET_CONFIG_DEFAULTS, { settings, settingOrigins: origins, warnings, origin });
  if (reportFollowsUpdate && settings.nodeStatusReportFrequencyMs === undefined && settings.nodeStatusUpdateFrequencyMs !== undefined) {
    // defaults.go SetDefaults_KubeletConfiguration: an unset report frequency follows an update frequency that was set.
    settings.nodeStatusReportFrequencyMs = settings.nodeStatusUpdateFrequencyMs;
  }
  return { settings, origins };
}

/**
 * The --config document as server.go loadConfigFile leaves it: relative paths resolved against the
 * file's directory and, with mergeDefaultEvictionSettings, the default hard eviction thresholds its
 * evictionHard leaves out added.
 */
function configFileDocument(document: Document, file: string): Document {
  resolveRelativePaths(document, path.dirname(file));
  // Defaulted before the drop-ins are merged: the report frequency the file leaves unset follows
  // the update frequency it sets, and a drop-in's update frequency no longer moves it.
  const update = document.nodeStatusUpdateFrequency;
  const report = document.nodeStatusReportFrequency;
  if (typeof update === 'string' && durationMs(update) && (report === undefined || report === null || (typeof report === 'string' && durationMs(report) === 0))) {
    document.nodeStatusReportFrequency = update;
  }
  if (document.mergeDefaultEvictionSettings === true && isObject(document.evictionHard)) {
    document.evictionHard = { ...KUBELET_DEFAULT_EVICTION_HARD, ...document.evictionHard };
  }
  return document;
}

/** The kubelet's Linux default hard eviction thresholds (pkg/kubelet/eviction/defaults_linux.go). */
const KUBELET_DEFAULT_EVICTION_HARD = { 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' };

// ---------------------------------------------------------------------------------------------
// Files

function readDocument(file: string, role: 'config' | 'drop-in', warnings: string[]): Document {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = error instanceof Error && 'code' in error ? String(error.code) : String(error);
    throw new ConfigFileError(file, `cannot read kubelet ${role === 'config' ? 'config' : 'drop-in config'} file (${code})`);
  }
  return parseDocument(text, file, role, warnings);
}

function parseDocument(text: string, file: string, role: 'config' | 'drop-in', warnings: string[]): Document {
  // configfiles.go Load: "kubelet config file %q was empty".
  if (text.trim() === '') throw new ConfigFileError(file, 'kubelet config file is empty');
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    if (!(error instanceof Error && 'code' in error && error.code === 'DUPLICATE_KEY')) {
      throw new ConfigFileError(file, `not valid YAML or JSON: ${error instanceof Error ? error.message : String(error)}`);
    }
    // Strict decoding fails on a duplicate field and the kubelet decodes again leniently, the last one winning.
    warnings.push(`${file}: a field is given twice, the last one is used (lenient decoding, as the kubelet): ${error.message.split('\n')[0]}`);
    document = parseYaml(text, { uniqueKeys: false });
  }
  if (!isObject(document)) throw new ConfigFileError(file, `expected a ${KUBELET_CONFIG_KIND} object`);
  const { apiVersion, kind, ...fields } = document;
  if (role === 'drop-in') {
    // server.go mergeKubeletConfigurations.
    if (apiVersion === undefined || kind === undefined) throw new ConfigFileError(file, 'failed to load kubelet dropin file: no apiVersion/kind');
    if (apiVersion !== KUBELET_CONFIG_API_VERSION || kind !== KUBELET_CONFIG_KIND) {
      throw new ConfigFileError(file, `failed to load kubelet dropin file: unknown apiVersion/kind: ${String(apiVersion)}, Kind=${String(kind)}`);
    }
    return fields;
  }
  if (apiVersion !== KUBELET_CONFIG_API_VERSION) {
    throw new ConfigFileError(file, `apiVersion is ${JSON.stringify(apiVersion ?? null)}, expected "${KUBELET_CONFIG_API_VERSION}"`);
  }
  if (kind !== KUBELET_CONFIG_KIND) throw new ConfigFileError(file, `kind is ${JSON.stringify(kind ?? null)}, expected "${KUBELET_CONFIG_KIND}"`);
  return fields;
}

/**
 * The `*.conf` files under `dir` in filepath.WalkDir order: each directory's entries sorted by
 * name, a subdirectory walked where it sorts. Other files are skipped, as the kubelet skips them.
 */
export function dropInFiles(dir: string): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    const code = error instanceof Error && 'code' in error ? String(error.code) : String(error);
    throw new ConfigFileError(dir, `failed to walk through kubelet dropin directory (${code})`);
  }
  // WalkDir sorts by name byte-wise, which is what comparing UTF-16 code units gives for ASCII names.
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return entries.flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return dropInFiles(full);
    return path.extname(entry.name) === DROP_IN_EXTENSION ? [full] : [];
  });
}

/** RFC 7386 JSON merge patch: objects merge, anything else replaces, `null` deletes. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: Document = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

function resolveRelativePaths(document: Document, baseDir: string): void {
  for (const fieldPath of CONFIG_PATH_FIELDS) {
    const parts = fieldPath.split('.');
    let holder: unknown = document;
    for (const part of parts.slice(0, -1)) holder = isObject(holder) ? holder[part] : undefined;
    const last = parts[parts.length - 1]!;
    if (!isObject(holder)) continue;
    const value = holder[last];
    if (typeof value === 'string' && value !== '' && !path.isAbsolute(value)) holder[last] = path.join(baseDir, value);
  }
}

// ---------------------------------------------------------------------------------------------
// Fields

interface WalkContext {
  settings: Partial<AgentSettings>;
  settingOrigins: Partial<Record<SettingKey, string>>;
  warnings: string[];
  /** The file that gave a top-level field. */
  origin(field: string): string;
}

function readFields(document: Document, prefix: string, schema: Readonly<Record<string, ConfigField>>, defaults: unknown, context: WalkContext): void {
  for (const [name, value] of Object.entries(document)) {
    const fieldPath = `${prefix}${name}`;
    const file = context.origin(fieldPath.split('.')[0]!);
    const field = schema[name];
    if (field === undefined) {
      context.warnings.push(`${file}: unknown field "${fieldPath}" (not in KubeletConfiguration v1beta1) ignored, as the kubelet's lenient decoding does`);
      continue;
    }
    const fieldDefault = isObject(defaults) ? defaults[name] : undefined;
    // Go decodes null into "leave the default", and SetDefaults replaces a zero it has a default for.
    if (value === null || meansDefault(field, value, fieldDefault)) continue;

    const spec = OPTIONS_BY_FIELD.get(fieldPath);
    if (spec !== undefined) {
      try {
        setSetting(context.settings, spec.key, spec.kind.fromConfig(value));
      } catch (error) {
        if (error instanceof ValueError) throw new ConfigFileError(file, `${fieldPath}: ${error.message}`);
        throw error;
      }
      context.settingOrigins[spec.key] = file;
      continue;
    }
    const status = CONFIG_FIELD_STATUS[fieldPath];
    if (status !== undefined && 'honoured' in status) {
      const problem = typeProblem(field, value);
      if (problem) throw new ConfigFileError(file, `${fieldPath}: ${problem}`);
      continue;
    }
    if (status !== undefined) {
      const problem = typeProblem(field, value);
      if (problem) throw new ConfigFileError(file, `${fieldPath}: ${problem}`);
      if (sameAsDefault(field, value, fieldDefault) || (status.also ?? []).some((allowed) => deepEqual(allowed, value))) continue;
      throw new ConfigFileError(file, `${fieldPath}: ${JSON.stringify(value)} is refused: ${status.defaultOnly}`);
    }
    if (field.fields !== undefined && !field.goType.startsWith('[]')) {
      if (!isObject(value)) throw new ConfigFileError(file, `${fieldPath}: expected an object`);
      readFields(value, `${fieldPath}.`, field.fields, fieldDefault, context);
      continue;
    }
    // test/cli/kubeletConfigFields.test.ts keeps this from happening for the pinned release.
    throw new Error(`KubeletConfiguration field ${fieldPath} has no status in statelet`);
  }
}

function setSetting<K extends SettingKey>(target: Partial<AgentSettings>, key: K, value: AgentSettings[K]): void {
  target[key] = value;
}

const isPointer = (field: ConfigField) => field.goType.startsWith('*');
const isList = (field: ConfigField) => field.goType.startsWith('[]') || field.goType.startsWith('map[') || field.goType === 'v1.ResourceList' || field.goType === 'v1.VModuleConfiguration';
const isDuration = (field: ConfigField) => /^\*?v1\.(Duration|TimeOrMetaDuration)$/.test(field.goType);
const isQuantity = (field: ConfigField) => field.goType === 'resource.QuantityValue';
const isBool = (field: ConfigField) => field.goType === 'bool' || field.goType === '*bool';
const isNumber = (field: ConfigField) => /^\*?(u?int(8|16|32|64)?|float64|v1\.VerbosityLevel)$/.test(field.goType);

/** The Go zero value of a non-pointer, non-struct field, where SetDefaults puts its non-zero default. */
function meansDefault(field: ConfigField, value: unknown, fieldDefault: unknown): boolean {
  if (isPointer(field) || isList(field) || field.fields !== undefined) return false;
  if (fieldDefault === undefined || isZero(field, fieldDefault)) return false;
  return isZero(field, value);
}

function isZero(field: ConfigField, value: unknown): boolean {
  if (isDuration(field)) return value === 0 || (typeof value === 'string' && durationMs(value) === 0);
  if (isQuantity(field)) return value === 0 || value === '0';
  if (isBool(field)) return value === false;
  if (isNumber(field)) return value === 0;
  return value === '';
}

/** A value equal to the field's default, or, with no default, to "unset": zero, empty, false. */
function sameAsDefault(field: ConfigField, value: unknown, fieldDefault: unknown): boolean {
  if (fieldDefault === undefined) {
    if (isList(field)) return (Array.isArray(value) && value.length === 0) || (isObject(value) && Object.keys(value).length === 0);
    // A pointer to a struct set to anything, even {}, is not unset (tracing: {} traces to the default endpoint).
    if (field.fields !== undefined) return !isPointer(field) && isObject(value) && Object.entries(value).every(([name, child]) => field.fields?.[name] !== undefined && (child === null || sameAsDefault(field.fields[name]!, child, undefined)));
    // A pointer set to its type's zero is not unset, except where the field's Go zero is the behaviour.
    return !isPointer(field) && isZero(field, value);
  }
  if (isDuration(field)) return typeof value === 'string' && typeof fieldDefault === 'string' && durationMs(value) === durationMs(fieldDefault);
  if (isQuantity(field)) return quantity(value) !== undefined && quantity(value) === quantity(fieldDefault);
  if (field.fields !== undefined && isObject(value) && isObject(fieldDefault)) {
    return Object.entries(value).every(([name, child]) => {
      const childField = field.fields?.[name];
      return childField !== undefined && (child === null || meansDefault(childField, child, fieldDefault[name]) || sameAsDefault(childField, child, fieldDefault[name]));
    });
  }
  return deepEqual(value, fieldDefault);
}

/** A value of the wrong JSON type for the field's Go type (decoding fails in the kubelet); null when it fits or cannot be told. */
function typeProblem(field: ConfigField, value: unknown): string | null {
  if (isBool(field)) return typeof value === 'boolean' ? null : 'expected a boolean';
  if (isNumber(field)) return typeof value === 'number' ? null : 'expected a number';
  if (/^\*?string$/.test(field.goType)) return typeof value === 'string' ? null : 'expected a string';
  if (field.goType.startsWith('[]')) return Array.isArray(value) ? null : 'expected a list';
  if (field.goType.startsWith('map[') || (field.fields !== undefined && !isList(field))) return isObject(value) ? null : 'expected an object';
  if (isDuration(field)) {
    if (typeof value === 'number' && Number.isFinite(value)) return null;
    if (typeof value === 'string' && durationMs(value) !== undefined) return null;
    return 'expected a duration such as "5s"';
  }
  return null;
}

function durationMs(text: string): number | undefined {
  try {
    return parseDuration(text);
  } catch (error) {
    if (error instanceof DurationError) return undefined;
    throw error;
  }
}

function quantity(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') return undefined;
  const parsed = parseQuantity(value);
  return parsed instanceof Error ? undefined : parsed;
}

function isObject(value: unknown): value is Document {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
