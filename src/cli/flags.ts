/**
 * The command line, parsed the way the kubelet's (Go pflag) parser reads it, so kubelet unit files
 * and scripts work unchanged: `--flag value`, `--flag=value`, bare `--flag` for booleans (a
 * boolean never takes the next argument), single-dash long flags (`-v 2`, `-v=2`), and `_` read
 * as `-` in flag names. Settings are layered as in the kubelet: defaults < `--config` file <
 * `--config-dir` drop-ins < flags.
 * Every flag comes from the table in `options.ts`; nothing here is specific to one setting.
 */

import fs from 'node:fs';
import os from 'node:os';
import { packageFile } from '../packageFiles.ts';
import { agentDefaults, finalizeAgentConfig, imageGcSettingsErrors, type AgentConfig, type AgentSettings } from './config.ts';
import { loadKubeletConfig } from './kubeletConfig.ts';
import { FeatureGateError, resolveFeatureGates } from './featureGates.ts';
import { KUBELET_FLAGS } from './kubeletConfigApi.ts';
import { OPTION_GROUPS, OPTIONS, ValueError, boolKind, ignoredSettings, type AnyOptionSpec, type OptionGroup, type SettingKey } from './options.ts';

/** The command line is wrong; the message names the flag and, where there is one, the bad value. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

type CommandLineResult =
  | { kind: 'run'; config: AgentConfig; warnings: string[] }
  | { kind: 'help'; text: string }
  | { kind: 'version'; text: string };

interface CommandLineEnv {
  hostname: () => string;
}

/** Flags that act instead of configuring, kept out of OPTIONS because they have no setting. */
type MetaFlag = 'help';
const META_FLAGS: ReadonlyMap<string, MetaFlag> = new Map([
  ['help', 'help'],
  ['h', 'help'],
]);

const OPTIONS_BY_FLAG: ReadonlyMap<string, AnyOptionSpec> = new Map(
  OPTIONS.flatMap((spec) => (spec.flag === undefined ? [] : [[spec.flag, spec] as const])),
);

interface ParsedArguments {
  settings: Partial<AgentSettings>;
  meta: Set<MetaFlag>;
  /** The flags given, by name, once per occurrence. */
  given: string[];
  /** --version's value: true, 'raw', or a version to report instead (verflag.go). */
  version?: string;
}

/**
 * Parses `argv` (without the node and script entries). Throws UsageError for a bad command line
 * and ConfigFileError (from kubeletConfig.ts) for a bad `--config` file, and refuses a flag that
 * would be ignored (its option's `onlyWith`). `warnings` lists config file fields that were
 * ignored: unknown ones, and known ones that would have no effect.
 */
export function parseCommandLine(
  argv: string[],
  env: CommandLineEnv = { hostname: () => os.hostname() },
): CommandLineResult {
  const { settings: flagSettings, meta, given, version } = parseArguments(argv);
  // As in the kubelet, the whole command line is checked before --help is honoured.
  if (meta.has('help')) return { kind: 'help', text: helpText() };
  if (version !== undefined && version !== 'false') return { kind: 'version', text: versionText(version) };

  const configFile = flagSettings.configFile || undefined;
  const configDir = flagSettings.configDir || undefined;
  const fromFiles = configFile === undefined && configDir === undefined ? undefined : loadKubeletConfig(configFile, configDir);
  const settings: AgentSettings = {
    // The kubelet's v1beta1 defaults apply when a config file is read; its legacy flag defaults otherwise.
    ...agentDefaults(configFile === undefined ? 'flags' : 'config-file'),
    ...fromFiles?.settings,
    ...flagSettings,
  };
  // The kubelet merges feature gates per gate (server.go kubeletConfigFlagPrecedence): one set on
  // the command line wins, the files' others stay.
  try {
    settings.featureGates = resolveFeatureGates({ ...fromFiles?.settings.featureGates, ...flagSettings.featureGates });
  } catch (error) {
    if (error instanceof FeatureGateError) throw new UsageError(`failed to set feature gates: ${error.message}`);
    throw error;
  }
  checkCombinations(settings);
  refuseUnsupportedValues(settings, flagSettings, fromFiles?.origins ?? {});
  const warnings = [...(fromFiles?.warnings ?? []), ...deprecationWarnings(given)];
  for (const { spec, reason } of ignoredSettings(settings)) {
    // A default that would be ignored is no one's request; a flag is refused; a config file field
    // is warned about (a file may be shared with kubelets, which ignore it there too).
    if (spec.flag !== undefined && flagSettings[spec.key] !== undefined) throw new UsageError(`--${spec.flag}: ${reason}`);
    const origin = fromFiles?.origins[spec.key];
    if (origin !== undefined && spec.configField !== undefined) {
      warnings.push(`${origin}: ignoring field "${spec.configField}": ${reason}`);
    }
  }

  let config: AgentConfig;
  try {
    config = finalizeAgentConfig(settings, env.hostname);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  return { kind: 'run', config, warnings };
}

function parseArguments(argv: readonly string[]): ParsedArguments {
  const settings: Partial<AgentSettings> = {};
  const meta = new Set<MetaFlag>();
  const given: string[] = [];
  let version: string | undefined;
  const args = argv[Symbol.iterator]();

  for (let next = args.next(); !next.done; next = args.next()) {
    const arg = next.value;
    if (arg === '--') {
      const extra = args.next();
      if (!extra.done) throw unexpectedArgument(extra.value);
      break;
    }
    if (!arg.startsWith('-') || arg === '-') throw unexpectedArgument(arg);

    const dashes = arg.startsWith('--') ? '--' : '-';
    const body = arg.slice(dashes.length);
    if (body.startsWith('-') || body.startsWith('=')) throw new UsageError(`bad flag syntax: ${arg}`);
    const equals = body.indexOf('=');
    // pflag's word-separator normalisation, which the kubelet installs: --max_pods is --max-pods.
    const name = (equals < 0 ? body : body.slice(0, equals)).replaceAll('_', '-');
    const inlineValue = equals < 0 ? undefined : body.slice(equals + 1);
    const shownName = `${dashes}${name}`;

    if (name === 'version') {
      // verflag.go: a bool flag that also takes `raw` or a version (--version=v1.37.1).
      version = inlineValue === undefined ? 'true' : inlineValue;
      if (version !== 'raw' && !version.startsWith('v')) version = String(readValue(boolKind, version, shownName));
      continue;
    }
    const metaFlag = META_FLAGS.get(name);
    if (metaFlag !== undefined) {
      if (readValue(boolKind, inlineValue === undefined ? 'true' : inlineValue, shownName)) meta.add(metaFlag);
      else meta.delete(metaFlag);
      continue;
    }
    const spec = OPTIONS_BY_FLAG.get(name);
    // cmd/kubelet/app/server.go NewKubeletCommand: "failed to parse kubelet flag: %w", pflag's
    // "unknown flag: --%s"; a flag the kubelet has and statelet does not is refused by name instead,
    // so a kubelet command line that carries it says what stops it.
    if (spec === undefined && KUBELET_FLAGS[name] !== undefined) throw new UsageError(kubeletFlagRefusal(name));
    if (spec === undefined) throw new UsageError(`failed to parse kubelet flag: unknown flag: ${shownName}`);
    given.push(name);

    let text: string;
    if (inlineValue !== undefined) text = inlineValue;
    else if (!spec.kind.takesArgument) text = 'true';
    else {
      const value = args.next();
      // pflag would take a following flag as the value; a value that looks like a flag is almost
      // always a forgotten argument, so say so rather than report a confusing bad value later.
      if (value.done || looksLikeFlag(value.value)) throw new UsageError(`flag needs an argument: ${shownName}`);
      text = value.value;
    }
    applyOccurrence(settings, spec, readValue(spec.kind, text, shownName));
  }
  return { settings, meta, given, ...(version !== undefined ? { version } : {}) };
}

/**
 * pflag's warning for each use of a flag the kubelet marks deprecated (most config-backed ones:
 * cmd/kubelet/app/options/options.go AddKubeletConfigFlags), in its words.
 */
function deprecationWarnings(given: readonly string[]): string[] {
  return given.flatMap((name) => {
    const deprecated = KUBELET_FLAGS[name]?.deprecated;
    return deprecated === undefined ? [] : [`Flag --${name} has been deprecated, ${deprecated}`];
  });
}

function looksLikeFlag(arg: string): boolean {
  return arg.startsWith('-') && arg !== '-' && !/^-\d/.test(arg);
}

function unexpectedArgument(arg: string): UsageError {
  return new UsageError(`unexpected argument ${JSON.stringify(arg)}: statelet takes only flags`);
}

function readValue<T>(kind: { fromText(text: string): T }, text: string, shownName: string): T {
  try {
    return kind.fromText(text);
  } catch (error) {
    if (error instanceof ValueError) {
      throw new UsageError(`invalid value ${JSON.stringify(text)} for flag ${shownName}: ${error.message}`);
    }
    throw error;
  }
}

function applyOccurrence<K extends SettingKey>(
  settings: Partial<AgentSettings>,
  spec: { key: K; kind: { combine?(earlier: AgentSettings[K], later: AgentSettings[K]): AgentSettings[K] } },
  value: AgentSettings[K],
): void {
  const earlier = settings[spec.key];
  settings[spec.key] = earlier !== undefined && spec.kind.combine !== undefined ? spec.kind.combine(earlier, value) : value;
}

/**
 * Refuses a value statelet cannot honour (an option's `refuse`), naming where it was given: the
 * flag, else the config file's field. Defaults are always honoured, so they are never refused.
 */
function refuseUnsupportedValues(settings: AgentSettings, flagSettings: Partial<AgentSettings>, origins: Partial<Record<SettingKey, string>>): void {
  for (const spec of OPTIONS) {
    const value = settings[spec.key];
    if (spec.refuse === undefined || value === undefined) continue;
    const reason = spec.refuse(value);
    if (reason === null) continue;
    const shown = spec.kind.display(value);
    const origin = origins[spec.key];
    const where = flagSettings[spec.key] !== undefined || origin === undefined ? `--${spec.flag}=${shown}` : `${origin}: ${spec.configField}: ${shown}`;
    throw new UsageError(`${where} is refused: ${reason}`);
  }
}

/**
 * Rules spanning two settings, checked after layering because either may come from either source,
 * and the image GC settings, which the kubelet checks there too, with their messages.
 */
function checkCombinations(settings: AgentSettings): void {
  const imageGcErrors = imageGcSettingsErrors(settings);
  // Several at once as the kubelet's aggregated error prints them.
  if (imageGcErrors.length > 0) throw new UsageError(imageGcErrors.length === 1 ? imageGcErrors[0]! : `[${imageGcErrors.join(', ')}]`);
  // pkg/kubelet/apis/config/validation ValidateKubeletConfiguration.
  if (settings.preloadedImagesVerificationAllowlist.length > 0 && settings.imagePullCredentialsVerificationPolicy !== 'NeverVerifyAllowlistedImages') {
    throw new UsageError('invalid configuration: can\'t set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVerificationPolicy` is not "NeverVerifyAllowlistedImages"');
  }
  // The kubelet registers credential provider plugins when either flag is given
  // (kuberuntime_manager.go NewKubeGenericRuntimeManager) and then fails on the missing one with a
  // message about an empty path; statelet says what is missing instead.
  const pluginFlags = [settings.imageCredentialProviderConfig, settings.imageCredentialProviderBinDir].filter((value) => value !== undefined && value !== '');
  if (pluginFlags.length === 1) {
    throw new UsageError('--image-credential-provider-config and --image-credential-provider-bin-dir go together: give both or neither');
  }
  const parallel = settings.maxParallelImagePulls;
  if (parallel !== undefined && parallel > 1 && settings.serializeImagePulls) {
    throw new UsageError(
      `invalid configuration: maxParallelImagePulls (${parallel}) cannot be larger than 1 unless ` +
        'serializeImagePulls (--serialize-image-pulls) is false',
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Help and version

const META_HELP: readonly { group: OptionGroup; left: string; help: string }[] = [
  { group: 'General', left: '-h, --help', help: 'Show this help and exit' },
  { group: 'General', left: '    --version', help: 'Print "Kubernetes <version>" and exit (--version=raw: its parts)' },
];

/** One line per flag, grouped, with its default and its config-file field where it has one. */
export function helpText(): string {
  const defaults: Partial<AgentSettings> = agentDefaults();
  const rows = [
    ...META_HELP,
    ...OPTIONS.map((spec) => ({ group: spec.group, left: flagColumn(spec), help: helpColumn(spec, defaults) })),
  ];
  const width = Math.max(...rows.map((row) => row.left.length)) + 3;
  const sections = OPTION_GROUPS.map((group) => {
    const lines = rows.filter((row) => row.group === group).map((row) => `  ${row.left.padEnd(width)}${row.help}`);
    return lines.length === 0 ? '' : `${group}:\n${lines.join('\n')}\n`;
  }).filter((section) => section !== '');
  return [
    'Usage: statelet [flags]',
    '',
    'statelet is a Kubernetes node agent. Settings are layered as in the kubelet: built-in',
    'defaults, then the KubeletConfiguration file given by --config, then the drop-ins of',
    '--config-dir, then command-line flags. docs/kubelet-config.md gives the status of each field.',
    '',
    ...sections,
  ].join('\n');
}

function flagColumn(spec: AnyOptionSpec): string {
  const placeholder = spec.kind.placeholder === '' ? '' : ` ${spec.kind.placeholder}`;
  if (spec.flag === undefined) return `    (config) ${spec.configField ?? spec.key}${placeholder}`;
  // Single-letter flags are shown with their -x form too, as pflag shows shorthands.
  const names = spec.flag.length === 1 ? `-${spec.flag}, --${spec.flag}` : `    --${spec.flag}`;
  return `${names}${placeholder}`;
}

function helpColumn(spec: AnyOptionSpec, defaults: Partial<AgentSettings>): string {
  const notes: string[] = [];
  const value = defaults[spec.key];
  const shownDefault = spec.defaultText ?? (value === undefined ? '' : spec.kind.display(value));
  if (shownDefault !== '') notes.push(`default ${shownDefault}`);
  if (spec.flag === undefined) notes.push('config file only');
  else if (spec.configField !== undefined) notes.push(`config: ${spec.configField}`);
  return notes.length === 0 ? spec.help : `${spec.help} (${notes.join('; ')})`;
}

/**
 * What --version prints (component-base/version/verflag/verflag.go PrintAndExitIfRequested):
 * "Kubernetes <version>", which kubeadm's preflight parses (cmd/kubeadm/app/preflight/utils.go
 * GetKubeletVersion), the version being the release statelet follows with statelet's own as a
 * pre-release tag; `raw` prints the parts as the kubelet's `version.Info` does. A version to
 * report instead (`--version=vX.Y.Z`) is refused: statelet reports the release it follows.
 */
function versionText(request: string): string {
  if (request.startsWith('v')) {
    throw new UsageError(`--version=${request} is refused: statelet reports the version of the release it follows (${kubeletVersion()}) and does not take another`);
  }
  if (request !== 'raw') return `Kubernetes ${kubeletVersion()}`;
  const [major = '', minor = ''] = KUBERNETES_RELEASE.slice(1).split('.');
  const fields = {
    Major: major,
    Minor: minor,
    GitVersion: kubeletVersion(),
    StateletVersion: stateletVersion() ?? 'unknown',
    NodeVersion: process.version,
    Platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
  return `version.Info{${Object.entries(fields).map(([name, value]) => `${name}:${JSON.stringify(value)}`).join(', ')}}`;
}

/** The package's version, or null when its manifest cannot be read. */
function stateletVersion(): string | null {
  // Read at call time rather than imported: package.json sits outside the sources.
  try {
    const manifest: unknown = JSON.parse(fs.readFileSync(packageFile('package.json'), 'utf8'));
    if (typeof manifest === 'object' && manifest !== null && 'version' in manifest) return String(manifest.version);
  } catch {
    // Fall through: a missing manifest should not stop --version from answering.
  }
  return null;
}

/** The Kubernetes release whose kubelet behaviour statelet follows (and its tests run against). */
const KUBERNETES_RELEASE = 'v1.37.0';

/**
 * The version the Node reports as `nodeInfo.kubeletVersion`: the release statelet follows, with
 * statelet's own version as a pre-release tag (`v1.37.0-statelet.0.1.0`), so tools that parse it
 * as semver still can.
 */
export function kubeletVersion(): string {
  return `${KUBERNETES_RELEASE}-statelet.${stateletVersion() ?? '0.0.0'}`;
}

/** A flag of the kubelet that statelet does not implement (docs/kubelet-config.md lists them), refused at start. */
function kubeletFlagRefusal(name: string): string {
  return `failed to parse kubelet flag: --${name} is a flag of the kubelet that statelet does not implement; leave it out (docs/kubelet-config.md lists the kubelet's flags and fields with what statelet does with each)`;
}
