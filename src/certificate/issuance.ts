/**
 * What a watched CSR says about the request a node is waiting for (client-go
 * util/certificate/csr/csr.go WaitForCertificate's condition): issued, refused (with the
 * kubelet's words), or not yet. Pure.
 */
import type { CertificateSigningRequest } from '../api/cluster.ts';

export type Issuance = { issued: string } | { refused: string } | null;

/** The state of request `name` (UID `uid`) from one watch event of it. */
export function issuanceOf(event: 'ADDED' | 'MODIFIED' | 'DELETED', csr: CertificateSigningRequest, name: string, uid: string): Issuance {
  if (event === 'DELETED') return { refused: `csr "${name}" was deleted` };
  if (csr.metadata.uid !== uid) return { refused: `csr "${name}" changed UIDs` };
  let approved = false;
  for (const condition of csr.status?.conditions ?? []) {
    if (condition.type === 'Denied') return { refused: `certificate signing request is denied, reason: ${condition.reason ?? ''}, message: ${condition.message ?? ''}` };
    if (condition.type === 'Failed') return { refused: `certificate signing request failed, reason: ${condition.reason ?? ''}, message: ${condition.message ?? ''}` };
    if (condition.type === 'Approved') approved = true;
  }
  if (approved && csr.status?.certificate) return { issued: Buffer.from(csr.status.certificate, 'base64').toString('utf8') };
  return null;
}
