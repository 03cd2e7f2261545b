/**
 * Reads a KubeletConfiguration file (YAML or JSON, `kubelet.config.k8s.io/v1beta1`) into the
 * subset of AgentSettings statelet supports. Fields statelet does not know are ignored with a
 * warning, because the kubelet too falls back to lenient decoding and a config file shared with
 * real kubelets will carry many fields statelet has no use for. A known field holding the wrong
 * type is an error: silently dropping it would run the agent with a setting the user did not get.
 */

import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { AgentSettings } from './config.ts';
import { OPTIONS, ValueError, type AnyOptionSpec, type SettingKey } from './options.ts';
import { IDS_PER_POD } from '../userns/rules.ts';

const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
const KUBELET_CONFIG_KIND = 'KubeletConfiguration';

/** A problem with the config file; the message starts with the file's path. */
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
  /** Only the settings the file sets; merge them over the defaults. */
  settings: Partial<AgentSettings>;
  /** One line per ignored field, for the caller to log. */
  warnings: string[];
}

/** Fields every KubeletConfiguration has that are not settings. */
const TYPE_META_FIELDS = new Set(['apiVersion', 'kind']);

const OPTIONS_BY_FIELD: ReadonlyMap<string, AnyOptionSpec> = new Map(
  OPTIONS.flatMap((spec) => (spec.configField === undefined ? [] : [[spec.configField, spec] as const])),
);

/** Reads and maps the file at `file`; relative paths inside it resolve against its directory. */
export function readKubeletConfigFile(file: string): KubeletConfigResult {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = error instanceof Error && 'code' in error ? String(error.code) : String(error);
    throw new ConfigFileError(file, `cannot read kubelet config file (${code})`);
  }
  return parseKubeletConfig(text, file);
}

/**
 * Maps the text of a config file. `file` names it in messages and anchors relative paths (the
 * kubelet resolves e.g. `staticPodPath: manifests` against the config file's directory).
 */
export function parseKubeletConfig(text: string, file: string): KubeletConfigResult {
  if (text.trim() === '') throw new ConfigFileError(file, 'kubelet config file is empty');
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    throw new ConfigFileError(file, `not valid YAML or JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw new ConfigFileError(file, `expected a ${KUBELET_CONFIG_KIND} object`);
  }

  const fields: Record<string, unknown> = { ...document };
  if (fields.apiVersion !== KUBELET_CONFIG_API_VERSION) {
    throw new ConfigFileError(
      file,
      `apiVersion is ${JSON.stringify(fields.apiVersion ?? null)}, expected "${KUBELET_CONFIG_API_VERSION}"`,
    );
  }
  if (fields.kind !== KUBELET_CONFIG_KIND) {
    throw new ConfigFileError(file, `kind is ${JSON.stringify(fields.kind ?? null)}, expected "${KUBELET_CONFIG_KIND}"`);
  }

  const settings: Partial<AgentSettings> = {};
  const warnings: string[] = [];
  for (const [field, value] of Object.entries(fields)) {
    if (TYPE_META_FIELDS.has(field)) continue;
    if (field === 'userNamespaces') {
      const problem = userNamespacesProblem(value);
      if (problem) throw new ConfigFileError(file, problem);
      continue;
    }
    const spec = OPTIONS_BY_FIELD.get(field);
    if (spec === undefined) {
      warnings.push(`${file}: ignoring field "${field}", which statelet does not support`);
      continue;
    }
    // Go decodes null into "leave the default", so null is not a type error.
    if (value === null) continue;
    try {
      setSetting(settings, spec.key, spec.kind.fromConfig(value));
    } catch (error) {
      if (error instanceof ValueError) throw new ConfigFileError(file, `${field}: ${error.message}`);
      throw error;
    }
    if (spec.configRelativePath === true) resolveRelativePath(settings, spec.key, path.dirname(file));
  }
  return { settings, warnings };
}

/**
 * `userNamespaces` (KubeletConfiguration UserNamespaces): statelet gives each pod of its own user
 * namespace 65536 IDs, the default of `idsPerPod`; another count is refused rather than run as 65536.
 */
function userNamespacesProblem(value: unknown): string | null {
  if (value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) return 'userNamespaces: expected an object';
  for (const [key, setting] of Object.entries(value)) {
    if (key !== 'idsPerPod') return `userNamespaces: unknown field "${key}"`;
    if (setting !== null && setting !== IDS_PER_POD) return `userNamespaces.idsPerPod: statelet gives each pod ${IDS_PER_POD} IDs (the default); ${JSON.stringify(setting)} is not supported`;
  }
  return null;
}

function setSetting<K extends SettingKey>(target: Partial<AgentSettings>, key: K, value: AgentSettings[K]): void {
  target[key] = value;
}

function resolveRelativePath(settings: Partial<AgentSettings>, key: SettingKey, baseDir: string): void {
  const value = settings[key];
  if (typeof value === 'string' && value !== '' && !path.isAbsolute(value)) {
    setSetting(settings, key, path.resolve(baseDir, value));
  }
}
