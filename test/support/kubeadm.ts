/**
 * What `kubeadm init` adds to a control plane so that nodes can join it with a bootstrap token
 * (used by controlPlane.ts with `kubeadm: true`):
 *   - a bootstrap token: its Secret `kube-system/bootstrap-token-<id>` (cluster-bootstrap
 *     `token/api/types.go`), authenticating as `system:bootstrap:<id>` in `system:bootstrappers`
 *     and kubeadm's `system:bootstrappers:kubeadm:default-node-token`;
 *   - kubeadm's RBAC bindings (`cmd/kubeadm/app/phases/bootstraptoken/node/tlsbootstrap.go`): the
 *     token's group may create CSRs (`kubeadm:kubelet-bootstrap`), have its node client CSRs
 *     auto-approved (`kubeadm:node-autoapprove-bootstrap`) and get Nodes (`kubeadm:get-nodes`);
 *     nodes may have their own renewals auto-approved (`kubeadm:node-autoapprove-certificate-rotation`);
 *   - kube-controller-manager's CSR controllers signing with the cluster CA.
 * And what a test does as the cluster's admin: a node's bootstrap-kubelet.conf, approving a CSR
 * (`kubectl certificate approve`), reading the audit log.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomInt } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import type { ClusterCa } from './clusterPki.ts';

/** kubeadm's group for the holders of its default node token (cmd/kubeadm/app/constants NodeBootstrapTokenAuthGroup). */
export const NODE_BOOTSTRAP_TOKEN_GROUP = 'system:bootstrappers:kubeadm:default-node-token';

/**
 * A --cluster-signing-duration under which a node renews its client certificate about every
 * minute and a half, so that two renewals happen within a test: the signer backdates NotBefore by
 * 5 minutes and, below 8 h, does not shorten NotAfter (`pkg/controller/certificates/authority/policies.go
 * PermissiveSigningPolicy.apply`), so a certificate signed at `s` with duration D lives D + 5 min from
 * s − 5 min; the kubelet renews at a uniformly drawn 70–90 % of that (client-go
 * `certificate_manager.go nextRotationDeadline`), i.e. at s − 5 + 0.7..0.9 × (D + 5) minutes. With
 * D = 3 min that is 0.6 to 2.2 minutes after signing, at least 48 s before expiry. Below about
 * 2.2 min the earliest deadline falls before the signing, and the node would renew at once, again
 * and again. (The kubelet sets no spec.expirationSeconds, whose 10-minute floor would not help.)
 */
export const ROTATION_SIGNING_DURATION = '3m';

/** Node and CSR creations, at Metadata level (user, object, response code); nothing else. */
export const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create]
  resources:
  - group: ""
    resources: [nodes]
  - group: certificates.k8s.io
    resources: [certificatesigningrequests]
- level: None
`;

/**
 * The controllers that run beside a kubeadm-like API server: kubeadm's `*,bootstrapsigner,tokencleaner`
 * (cmd/kubeadm/app/phases/controlplane/manifests.go getControllerManagerCommand) when `all`, else
 * only what the nodes' certificates and the pods' namespaces need (ServiceAccounts, kube-root-ca.crt).
 */
export function kubeadmControllerManagerArgs(ca: ClusterCa, options: { all: boolean; signingDuration?: string | undefined }): string[] {
  const controllers = options.all
    ? ['*', 'bootstrap-signer-controller', 'token-cleaner-controller']
    : [
        'certificatesigningrequest-signing-controller',
        'certificatesigningrequest-approving-controller',
        'certificatesigningrequest-cleaner-controller',
        'bootstrap-signer-controller',
        'token-cleaner-controller',
        'serviceaccount-controller',
        'root-ca-certificate-publisher-controller',
      ];
  return [
    `--cluster-signing-cert-file=${ca.caFile}`,
    `--cluster-signing-key-file=${ca.keyFile}`,
    ...(options.signingDuration ? [`--cluster-signing-duration=${options.signingDuration}`] : []),
    `--controllers=${controllers.join(',')}`,
  ];
}

/** One audit event (audit.k8s.io/v1 Event at Metadata level): who did what to which object. */
export interface AuditEvent {
  verb: string;
  user: { username: string; groups?: string[] };
  objectRef?: { resource?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number };
  stage: string;
  requestReceivedTimestamp: string;
}

export interface Kubeadm {
  /** The cluster CA (kubeadm's /etc/kubernetes/pki/ca.crt), which a node copies for config.yaml's clientCAFile. */
  caFile: string;
  /** The bootstrap token, `<id>.<secret>`. */
  token: string;
  /**
   * Writes kubeadm's bootstrap-kubelet.conf (cmd/kubeadm/app/cmd/phases/join/kubelet.go, from
   * `kubeconfigutil.CreateWithToken`): cluster `kubernetes` with the CA inline, user
   * `tls-bootstrap-token-user` with the token, context `tls-bootstrap-token-user@kubernetes`.
   */
  bootstrapKubeconfig(file: string): Promise<string>;
  /** Approves a CSR as an admin does (`kubectl certificate approve <name>`). */
  approveCsr(name: string): Promise<void>;
  /**
   * Approves, until the returned stop is called, each pending kubelet-serving CSR of these nodes
   * (requested by `system:node:<name>`), as an external approver (kubelet-csr-approver) does in a
   * cluster whose nodes set serverTLSBootstrap: for tests in which serving certificates rotate.
   */
  approveServingCsrs(nodeNames: string[]): () => Promise<void>;
  /** The CSRs (certificates.k8s.io/v1) as the API server has them now. */
  csrs(): Promise<k8s.V1CertificateSigningRequest[]>;
  /** The audit log so far: the creations of Nodes and CSRs, with their users, on ResponseComplete. */
  auditEvents(): Promise<AuditEvent[]>;
}

const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const tokenPart = (length: number) => Array.from({ length }, () => TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)]).join('');

/** Creates the token and the bindings, and waits until the API server authenticates the token. */
export async function setUpKubeadm(options: {
  dir: string;
  server: string;
  clusterCa: ClusterCa;
  admin: k8s.KubeConfig;
  kubectl: (args: string[]) => Promise<string>;
}): Promise<Kubeadm> {
  const { admin, server, clusterCa } = options;
  const id = tokenPart(6);
  const token = `${id}.${tokenPart(16)}`;
  const core = admin.makeApiClient(k8s.CoreV1Api);
  await core.createNamespacedSecret({
    namespace: 'kube-system',
    body: {
      metadata: { name: `bootstrap-token-${id}` },
      type: 'bootstrap.kubernetes.io/token',
      stringData: {
        'token-id': id,
        'token-secret': token.slice(7),
        description: 'the statelet test cluster’s node token',
        // kubeadm's default token TTL (24 h); the token-cleaner deletes the Secret after it.
        expiration: new Date(Date.now() + 24 * 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z'),
        'usage-bootstrap-authentication': 'true',
        'usage-bootstrap-signing': 'true',
        'auth-extra-groups': NODE_BOOTSTRAP_TOKEN_GROUP,
      },
    },
  });
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  await rbac.createClusterRole({ body: { metadata: { name: 'kubeadm:get-nodes' }, rules: [{ verbs: ['get'], apiGroups: [''], resources: ['nodes'] }] } });
  const bind = (name: string, role: string, group: string) =>
    rbac.createClusterRoleBinding({
      body: { metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role }, subjects: [{ kind: 'Group', name: group, apiGroup: 'rbac.authorization.k8s.io' }] },
    });
  await bind('kubeadm:kubelet-bootstrap', 'system:node-bootstrapper', NODE_BOOTSTRAP_TOKEN_GROUP);
  await bind('kubeadm:node-autoapprove-bootstrap', 'system:certificates.k8s.io:certificatesigningrequests:nodeclient', NODE_BOOTSTRAP_TOKEN_GROUP);
  await bind('kubeadm:node-autoapprove-certificate-rotation', 'system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', 'system:nodes');
  await bind('kubeadm:get-nodes', 'kubeadm:get-nodes', NODE_BOOTSTRAP_TOKEN_GROUP);

  const caPem = await readFile(clusterCa.caFile, 'utf8');
  const writeBootstrapKubeconfig = async (file: string) => {
    await writeFile(file, bootstrapKubeconfigYaml(server, caPem, token), { mode: 0o600 });
    return file;
  };
  // The API server reads token Secrets through an informer: the token works once it has seen it.
  const probe = await writeBootstrapKubeconfig(path.join(options.dir, 'bootstrap-kubelet.conf'));
  await waitForTokenAuthentication(probe, `system:bootstrap:${id}`);

  const certificates = admin.makeApiClient(k8s.CertificatesV1Api);
  return {
    caFile: clusterCa.caFile,
    token,
    bootstrapKubeconfig: writeBootstrapKubeconfig,
    approveCsr: async (name) => {
      await options.kubectl(['certificate', 'approve', name]);
    },
    csrs: async () => (await certificates.listCertificateSigningRequest()).items,
    approveServingCsrs: (nodeNames) => {
      const users = new Set(nodeNames.map((name) => `system:node:${name}`));
      let running = true;
      const loop = (async () => {
        while (running) {
          const pending = (await certificates.listCertificateSigningRequest().catch(() => ({ items: [] as k8s.V1CertificateSigningRequest[] }))).items.filter(
            (csr) => csr.spec.signerName === 'kubernetes.io/kubelet-serving' && users.has(csr.spec.username ?? '') && (csr.status?.conditions ?? []).length === 0,
          );
          for (const csr of pending) await options.kubectl(['certificate', 'approve', csr.metadata!.name!]).catch(() => undefined);
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
      })();
      return async () => {
        running = false;
        await loop;
      };
    },
    auditEvents: async () =>
      (await readFile(path.join(options.dir, 'audit.log'), 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as AuditEvent)
        .filter((event) => event.stage === 'ResponseComplete'),
  };
}

function bootstrapKubeconfigYaml(server: string, caPem: string, token: string): string {
  return [
    'apiVersion: v1',
    'clusters:',
    '- cluster:',
    `    certificate-authority-data: ${Buffer.from(caPem).toString('base64')}`,
    `    server: ${server}`,
    '  name: kubernetes',
    'contexts:',
    '- context:',
    '    cluster: kubernetes',
    '    user: tls-bootstrap-token-user',
    '  name: tls-bootstrap-token-user@kubernetes',
    'current-context: tls-bootstrap-token-user@kubernetes',
    'kind: Config',
    'preferences: {}',
    'users:',
    '- name: tls-bootstrap-token-user',
    '  user:',
    `    token: ${token}`,
    '',
  ].join('\n');
}

/** Asks the API server who the token is (SelfSubjectReview) until it answers `username`. */
async function waitForTokenAuthentication(kubeconfig: string, username: string, timeoutMs = 30_000): Promise<void> {
  const config = new k8s.KubeConfig();
  config.loadFromFile(kubeconfig);
  const authentication = config.makeApiClient(k8s.AuthenticationV1Api);
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const review = await authentication.createSelfSubjectReview({ body: {} });
      if (review.status?.userInfo?.username === username) return;
      last = JSON.stringify(review.status?.userInfo);
    } catch (err) {
      last = String(err);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the bootstrap token did not authenticate as ${username} within ${timeoutMs} ms (${last})`);
}
