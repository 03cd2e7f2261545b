/**
 * CredentialProviderConfig decoding and validation (src/credentialprovider/pluginConfig.ts;
 * pkg/credentialprovider/plugin/config.go decode, validateCredentialProviderConfig), from tables.
 */
import { describe, expect, it } from 'vitest';
import {
  type CredentialProvider,
  ConfigDecodeError,
  decodeCredentialProviderConfig,
  mergeCredentialProviderConfigs,
  validateCredentialProviderConfig,
} from '../../src/credentialprovider/pluginConfig.ts';

const yamlConfig = (apiVersion: string) => `
apiVersion: ${apiVersion}
kind: CredentialProviderConfig
providers:
  - name: ecr-credential-provider
    matchImages:
      - "*.dkr.ecr.*.amazonaws.com"
    defaultCacheDuration: 12h
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args: [get-credentials]
    env:
      - name: AWS_PROFILE
        value: node
`;

const ecr: CredentialProvider = {
  name: 'ecr-credential-provider',
  matchImages: ['*.dkr.ecr.*.amazonaws.com'],
  defaultCacheDurationMs: 12 * 3_600_000,
  apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
  args: ['get-credentials'],
  env: [{ name: 'AWS_PROFILE', value: 'node' }],
  tokenAttributes: null,
};

describe('decodeCredentialProviderConfig', () => {
  it.each(['kubelet.config.k8s.io/v1', 'kubelet.config.k8s.io/v1beta1', 'kubelet.config.k8s.io/v1alpha1'])('reads YAML of %s', (apiVersion) => {
    expect(decodeCredentialProviderConfig(yamlConfig(apiVersion))).toEqual({ providers: [ecr] });
  });

  it('reads JSON, and leaves a missing defaultCacheDuration for validation to name', () => {
    const json = JSON.stringify({
      apiVersion: 'kubelet.config.k8s.io/v1',
      kind: 'CredentialProviderConfig',
      providers: [{ name: 'p', matchImages: ['registry.io'], apiVersion: 'credentialprovider.kubelet.k8s.io/v1' }],
    });
    expect(decodeCredentialProviderConfig(json).providers[0]).toMatchObject({ name: 'p', defaultCacheDurationMs: null, args: [], env: [] });
  });

  it('reads tokenAttributes', () => {
    const text = `${yamlConfig('kubelet.config.k8s.io/v1')}    tokenAttributes:
      serviceAccountTokenAudience: sts.amazonaws.com
      cacheType: Token
      requireServiceAccount: true
`;
    expect(decodeCredentialProviderConfig(text).providers[0]!.tokenAttributes).toEqual({
      serviceAccountTokenAudience: 'sts.amazonaws.com',
      cacheType: 'Token',
      requireServiceAccount: true,
      requiredServiceAccountAnnotationKeys: [],
      optionalServiceAccountAnnotationKeys: [],
    });
  });

  it.each([
    ['an unknown field', yamlConfig('kubelet.config.k8s.io/v1').replace('args:', 'arg:'), 'strict decoding error: unknown field "providers[0].arg"'],
    ['an unknown top-level field', `${yamlConfig('kubelet.config.k8s.io/v1')}extra: 1\n`, 'strict decoding error: unknown field "extra"'],
    ['another kind', yamlConfig('kubelet.config.k8s.io/v1').replace('kind: CredentialProviderConfig', 'kind: KubeletConfiguration'), 'no kind "KubeletConfiguration" is registered for version "kubelet.config.k8s.io/v1"'],
    ['another group', yamlConfig('example.com/v1'), 'no kind "CredentialProviderConfig" is registered for version "example.com/v1"'],
    ['no kind', 'apiVersion: kubelet.config.k8s.io/v1\nproviders: []\n', "Object 'Kind' is missing"],
    ['a number for a name', yamlConfig('kubelet.config.k8s.io/v1').replace('name: ecr-credential-provider', 'name: 7'), 'json: cannot unmarshal number into Go struct field CredentialProvider.providers.name of type string'],
    ['a string for matchImages', yamlConfig('kubelet.config.k8s.io/v1').replace('matchImages:\n      - "*.dkr.ecr.*.amazonaws.com"', 'matchImages: gcr.io'), 'json: cannot unmarshal string into Go struct field CredentialProvider.providers.matchImages of type []string'],
    ['a bad duration', yamlConfig('kubelet.config.k8s.io/v1').replace('12h', '12 hours'), 'time: invalid duration "12 hours"'],
    ['a list', '- a\n', 'json: cannot unmarshal array into Go value of type CredentialProviderConfig'],
  ])('refuses %s', (_what, text, message) => {
    expect(() => decodeCredentialProviderConfig(text)).toThrow(new ConfigDecodeError(message));
  });
});

describe('mergeCredentialProviderConfigs', () => {
  it('keeps the order of the files, and refuses a name seen twice', () => {
    const other = { ...ecr, name: 'gcr' };
    expect(mergeCredentialProviderConfigs([{ providers: [ecr] }, { providers: [other] }]).providers.map((p) => p.name)).toEqual(['ecr-credential-provider', 'gcr']);
    expect(() => mergeCredentialProviderConfigs([{ providers: [ecr] }, { providers: [ecr] }])).toThrow('duplicate provider name "ecr-credential-provider" found in configuration file(s)');
  });
});

describe('validateCredentialProviderConfig', () => {
  const tokens = { serviceAccountTokenAudience: 'aud', cacheType: 'Token', requireServiceAccount: true, requiredServiceAccountAnnotationKeys: [], optionalServiceAccountAnnotationKeys: [] };

  it('accepts a good provider', () => {
    expect(validateCredentialProviderConfig({ providers: [ecr] })).toEqual([]);
  });

  it('needs a provider', () => {
    expect(validateCredentialProviderConfig({ providers: [] })).toEqual(['providers: Required value: at least 1 item in plugins is required']);
  });

  it.each<[string, Partial<CredentialProvider>, string[]]>([
    ['a slash in the name', { name: 'bin/plugin' }, ['providers.name: Invalid value: "bin/plugin": provider name cannot contain \'/\'']],
    ['a space in the name', { name: 'my plugin' }, ['providers.name: Invalid value: "my plugin": provider name cannot contain spaces']],
    ['"."', { name: '.' }, ['providers.name: Invalid value: ".": provider name cannot be \'.\'']],
    ['".."', { name: '..' }, ['providers.name: Invalid value: "..": provider name cannot be \'..\'']],
    ['no apiVersion', { apiVersion: '' }, ['providers.apiVersion: Required value']],
    [
      'an unknown apiVersion',
      { apiVersion: 'credentialprovider.kubelet.k8s.io/v2' },
      ['providers.apiVersion: Unsupported value: "credentialprovider.kubelet.k8s.io/v2": supported values: "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1alpha1", "credentialprovider.kubelet.k8s.io/v1beta1"'],
    ],
    ['no matchImages', { matchImages: [] }, ['providers.matchImages: Required value: at least 1 item in matchImages is required']],
    [
      'a match image that does not parse',
      { matchImages: ['registry.io:port'] },
      ['providers.matchImages: Invalid value: "registry.io:port": match image is invalid: parse "https://registry.io:port": invalid port ":port" after host'],
    ],
    ['no defaultCacheDuration', { defaultCacheDurationMs: null }, ['providers.defaultCacheDuration: Required value']],
    ['a negative defaultCacheDuration', { defaultCacheDurationMs: -60_000 }, ['providers.defaultCacheDuration: Invalid value: -1m0s: defaultCacheDuration must be greater than or equal to 0']],
    ['tokenAttributes without their required fields', { tokenAttributes: { ...tokens, serviceAccountTokenAudience: '', requireServiceAccount: null, cacheType: '' } }, [
      'providers.tokenAttributes.serviceAccountTokenAudience: Required value',
      'providers.tokenAttributes.requireServiceAccount: Required value',
      'providers.tokenAttributes.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token',
    ]],
    ['tokenAttributes with another plugin version', { apiVersion: 'credentialprovider.kubelet.k8s.io/v1beta1', tokenAttributes: tokens }, [
      'providers.tokenAttributes: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version',
    ]],
    ['an unknown cacheType', { tokenAttributes: { ...tokens, cacheType: 'Pod' } }, ['providers.tokenAttributes.cacheType: Unsupported value: "Pod": supported values: "ServiceAccount", "Token"']],
    ['required annotation keys without requireServiceAccount', { tokenAttributes: { ...tokens, requireServiceAccount: false, requiredServiceAccountAnnotationKeys: ['a'] } }, [
      'providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set',
    ]],
    ['an annotation key that is not a qualified name, and one given twice', { tokenAttributes: { ...tokens, optionalServiceAccountAnnotationKeys: ['Example.com/Role', 'bad key', 'x', 'x'] } }, [
      'providers.tokenAttributes.optionalServiceAccountAnnotationKeys: Invalid value: "bad key": name part must be 1-63 alphanumeric characters, \'-\', \'_\' or \'.\', starting and ending with an alphanumeric character',
      'providers.tokenAttributes.optionalServiceAccountAnnotationKeys: Duplicate value: "x"',
    ]],
    ['keys both required and optional', { tokenAttributes: { ...tokens, requiredServiceAccountAnnotationKeys: ['b', 'a'], optionalServiceAccountAnnotationKeys: ['a', 'b'] } }, [
      'providers.tokenAttributes: Invalid value: []string{"a", "b"}: annotation keys cannot be both required and optional',
    ]],
  ])('refuses %s', (_what, change, errors) => {
    expect(validateCredentialProviderConfig({ providers: [{ ...ecr, ...change }] })).toEqual(errors);
  });
});
