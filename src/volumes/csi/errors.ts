/**
 * A failed CSI call, classified as the kubelet classifies it (pkg/volume/csi/csi_client.go
 * isFinalError): *final* errors mean the operation did not start or failed for good, so the
 * kubelet cleans up and treats the volume as not mounted; *uncertain* ones mean it may still be
 * in progress on the driver's side, so the kubelet keeps its directories and state, retries, and
 * still unpublishes/unstages if the pod goes away.
 */
import { type CriErrorCode, goStatusText } from '../../runtime/types.ts';

/** A gRPC status code other than OK, by its name in the gRPC spec (`DEADLINE_EXCEEDED`). */
export type GrpcCode = CriErrorCode;

/**
 * csi_client.go isFinalError: Canceled (the caller cancelled), DeadlineExceeded (timeout),
 * Unavailable (server shutting down, connection broken), ResourceExhausted (server temporarily
 * out of resources) and Aborted (CSI: operation pending for the volume) leave the operation
 * possibly in progress; a failure without a gRPC status (null: it happened before the call could
 * be answered) too, to be on the safe side. Every other code is final.
 */
export function isFinalError(code: GrpcCode | null): boolean {
  switch (code) {
    case null:
    case 'CANCELLED':
    case 'DEADLINE_EXCEEDED':
    case 'UNAVAILABLE':
    case 'RESOURCE_EXHAUSTED':
    case 'ABORTED':
      return false;
    default:
      return true;
  }
}

/**
 * A CSI call that failed. `message` is the text the kubelet's events and logs carry: a gRPC
 * status reads `rpc error: code = NotFound desc = <the driver's message>` (grpc-go's status
 * error), anything else its own words.
 */
export class CsiError extends Error {
  override readonly name = 'CsiError';

  private constructor(
    /** The RPC, e.g. `NodeStageVolume`. */
    readonly rpc: string,
    /** The call's gRPC status; null when the call was not made or failed without one. */
    readonly code: GrpcCode | null,
    /** The driver's (or the transport's) own message. */
    readonly detail: string,
    /** False: the operation may still be in progress on the driver's side (uncertain). */
    readonly final: boolean,
  ) {
    super(code === null ? detail : goStatusText(code, detail));
  }

  /** The call ended with a gRPC status: final or uncertain by `isFinalError`. */
  static status(rpc: string, code: GrpcCode, detail: string): CsiError {
    return new CsiError(rpc, code, detail, isFinalError(code));
  }

  /** The call failed without a gRPC status: uncertain (`isFinalError` of a non-gRPC error). */
  static withoutStatus(rpc: string, detail: string): CsiError {
    return new CsiError(rpc, null, detail, isFinalError(null));
  }

  /**
   * The call was not made: its arguments are wrong (`missing volume id`). Final, as the kubelet's
   * plain errors are to its operation executor (only an uncertain-progress error is not).
   */
  static notMade(rpc: string, detail: string): CsiError {
    return new CsiError(rpc, null, detail, true);
  }
}
