/**
 * Where the certificate on the authenticated port comes from when no certificate manager issues
 * it (pkg/kubelet/kubelet.go NewMainKubelet, cmd/kubelet/app/server.go InitializeTLS), and the
 * client CA bundle requests are checked against:
 * - `--tls-cert-file`/`--tls-private-key-file`: the pair in those files, reloaded when they change
 *   (NewKubeletServerCertificateDynamicFileManager, gate ReloadKubeletServerCertificateFile); a
 *   pair that does not parse or match is logged and the old one stays in use;
 * - neither: the self-signed `<cert-dir>/kubelet.crt` + `kubelet.key`, made when they cannot be
 *   read (certutil.CanReadCertAndKey, GenerateSelfSignedCertKey) and then read as the files above.
 *   statelet also renews it (certificates.ts selfSignedRenewalAt), which the kubelet does not;
 * - `authentication.x509.clientCAFile`: the bundle, reloaded when it changes (gate
 *   ReloadKubeletClientCAFile, dynamiccertificates.DynamicFileCAContent).
 */
import { access, mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { CertificateSource } from '../certificate/source.ts';
import type { TimerHandle } from '../clock.ts';
import { type CheckedPair, checkCaBundle, checkServingPair, selfSignedPair, selfSignedRenewalAt } from './certificates.ts';
import { WatchedFiles, type WatchedFilesDeps } from './watchedFiles.ts';
import type { ServingCertificateMode } from './servingMode.ts';
import type { ServingTls, TlsSettings } from './servingTls.ts';

/** A source the agent stops with it. */
export interface ClosableCertificateSource extends CertificateSource {
  close(): void;
}

/** The client CA bundle (PEM) in use, kept current. */
export interface CaBundleSource {
  current(): string;
  onChange(listener: () => void): () => void;
  close(): void;
}

/** The pair in `certFile`/`keyFile`, reloaded when they change (`deps.reload`). */
export async function servingPairFromFiles(certFile: string, keyFile: string, deps: WatchedFilesDeps): Promise<ClosableCertificateSource> {
  return pairSource(await WatchedFiles.open('serving certificate files', [certFile, keyFile], ([cert, key]) => checkServingPair(cert!, key!), deps));
}

/** The client CA bundle in `file`, reloaded when it changes (`deps.reload`). */
export async function clientCaFromFile(file: string, deps: WatchedFilesDeps): Promise<CaBundleSource> {
  const files = await WatchedFiles.open('client CA file', [file], ([bundle]) => checkCaBundle(bundle!), deps);
  return { current: () => files.current(), onChange: (listener) => files.onChange(listener), close: () => files.close() };
}

function pairSource(files: WatchedFiles<CheckedPair>): ClosableCertificateSource {
  return {
    current: () => {
      const { cert, key, notAfter } = files.current();
      return { cert, key, notAfter };
    },
    onChange: (listener) => files.onChange(listener),
    close: () => files.close(),
  };
}

export interface SelfSignedOptions extends WatchedFilesDeps {
  certDir: string;
  /** The node's hostname (the certificate's names). */
  host: string;
  /** The node's IP addresses, named in the certificate besides the host. */
  addresses: readonly string[];
}

/** The longest a renewal timer waits before looking again (timers of more than ~24.8 days overflow). */
const LONGEST_WAIT_MS = 24 * 3_600_000;
/** After a failed renewal (the directory unwritable), the next try. */
const RENEWAL_RETRY_MS = 3_600_000;

/**
 * The self-signed pair in `certDir`, made if absent or due for renewal, renewed on the clock when
 * 80 % of its lifetime has passed; an administrator's replacement of the files is picked up as
 * with --tls-cert-file, and its own renewal time followed.
 */
export async function selfSignedServingPair(options: SelfSignedOptions): Promise<ClosableCertificateSource> {
  const { clock, log } = options;
  const certFile = path.join(options.certDir, 'kubelet.crt');
  const keyFile = path.join(options.certDir, 'kubelet.key');
  const make = () => selfSignedPair(options.host, options.addresses, new Date(clock.now()));
  const write = async (pair: CheckedPair) => {
    await mkdir(options.certDir, { recursive: true, mode: 0o755 });
    // Each file whole or not at all: written aside, then renamed over the old one, key first.
    await writeFile(`${keyFile}.tmp`, pair.key, { mode: 0o600 });
    await writeFile(`${certFile}.tmp`, pair.cert, { mode: 0o644 });
    await rename(`${keyFile}.tmp`, keyFile);
    await rename(`${certFile}.tmp`, certFile);
  };
  if (!(await canReadCertAndKey(certFile, keyFile))) {
    await write(await make());
    log('info', 'Using self-signed cert', { TLSCertFile: certFile, TLSPrivateKeyFile: keyFile });
  }
  const files = await WatchedFiles.open('self-signed serving certificate files', [certFile, keyFile], ([cert, key]) => checkServingPair(cert!, key!), options);
  let timer: TimerHandle | null = null;
  let closed = false;
  const renew = async () => {
    try {
      await files.rewrite(async () => write(await make()));
      log('info', 'Renewed the self-signed serving certificate', { TLSCertFile: certFile, notAfter: files.current().notAfter.toISOString() });
    } catch (err) {
      log('error', 'Could not renew the self-signed serving certificate; trying again in an hour', { TLSCertFile: certFile, err });
      wait(clock.now() + RENEWAL_RETRY_MS);
    }
  };
  const wait = (at: number) => {
    if (timer !== null) clock.clearTimeout(timer);
    timer = null;
    if (closed) return;
    const delay = at - clock.now();
    if (delay <= 0) void renew();
    else timer = clock.setTimeout(() => wait(at), Math.min(delay, LONGEST_WAIT_MS));
  };
  const schedule = () => wait(selfSignedRenewalAt(files.current()).getTime());
  files.onChange(schedule);
  if (clock.now() >= selfSignedRenewalAt(files.current()).getTime()) await renew();
  else schedule();
  const source = pairSource(files);
  return {
    ...source,
    close: () => {
      closed = true;
      if (timer !== null) clock.clearTimeout(timer);
      source.close();
    },
  };
}

/** certutil.CanReadCertAndKey: both readable, neither, or an error naming the one missing. */
async function canReadCertAndKey(certFile: string, keyFile: string): Promise<boolean> {
  const [cert, key] = await Promise.all([readable(certFile), readable(keyFile)]);
  if (!cert && !key) return false;
  if (!cert) throw new Error(`error reading ${certFile}, certificate and key must be supplied as a pair`);
  if (!key) throw new Error(`error reading ${keyFile}, certificate and key must be supplied as a pair`);
  return true;
}

async function readable(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

export interface ServingTlsOptions extends Omit<WatchedFilesDeps, 'reload'> {
  mode: ServingCertificateMode;
  /** The certificate manager's pair, for mode `manager`. */
  manager?: CertificateSource;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  certDir: string;
  host: string;
  addresses: readonly string[];
  /** authentication.x509.clientCAFile / --client-ca-file. */
  clientCaFile?: string;
  /** Gate ReloadKubeletServerCertificateFile. */
  reloadServingFiles: boolean;
  /** Gate ReloadKubeletClientCAFile. */
  reloadClientCa: boolean;
  settings: TlsSettings;
}

/** A source that never has a pair: mode `none`. */
const NO_CERTIFICATE: CertificateSource = { current: () => null, onChange: () => () => {} };

/** The authenticated port's TLS for the settings, and what stops its watches and timers. */
export async function openServingTls(options: ServingTlsOptions): Promise<{ tls: ServingTls; close(): void }> {
  const { clock, log } = options;
  const closers: (() => void)[] = [];
  try {
    let certificate: CertificateSource;
    switch (options.mode) {
      case 'manager':
        if (!options.manager) throw new Error('serverTLSBootstrap: no certificate manager was given for the serving certificate');
        certificate = options.manager;
        break;
      case 'files': {
        const files = await servingPairFromFiles(options.tlsCertFile!, options.tlsPrivateKeyFile!, { clock, log, reload: options.reloadServingFiles });
        closers.push(() => files.close());
        certificate = files;
        break;
      }
      case 'self-signed': {
        const selfSigned = await selfSignedServingPair({ certDir: options.certDir, host: options.host, addresses: options.addresses, clock, log, reload: options.reloadServingFiles });
        closers.push(() => selfSigned.close());
        certificate = selfSigned;
        break;
      }
      case 'none':
        certificate = NO_CERTIFICATE;
        break;
    }
    let clientCA: CaBundleSource | undefined;
    if (options.clientCaFile) {
      clientCA = await clientCaFromFile(options.clientCaFile, { clock, log, reload: options.reloadClientCa }).catch((err: unknown) => {
        throw new Error(`unable to load client CA file ${options.clientCaFile}: ${err instanceof Error ? err.message : String(err)}`);
      });
      closers.push(() => clientCA!.close());
    }
    return { tls: { certificate, ...(clientCA ? { clientCA } : {}), settings: options.settings }, close: () => closers.forEach((close) => close()) };
  } catch (err) {
    closers.forEach((close) => close());
    throw err;
  }
}
