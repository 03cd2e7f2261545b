/**
 * Making a pod CIDR local to the host, so that sim:// pods' servers can bind any address in it:
 * one route of type `local` on the loopback device (`ip route add local 10.244.1.0/24 dev lo`).
 * Linux then treats every address of the range as its own ("AnyIP"): a socket binds one without
 * an address configured per pod, and a connection to one from anywhere on the host is delivered
 * locally. Adding the route needs CAP_NET_ADMIN (root); a route already there (made by an
 * administrator, or by another sim:// runtime on the same range) is used as it is.
 */
import { execFile } from 'node:child_process';
import net from 'node:net';

export type LocalRangeResult =
  /** `added`: this call made the route (the caller removes it when done); false: it was there. */
  | { local: true; added: boolean }
  | { local: false; reason: string };

/** Whether this process can bind `address` (a listening socket on an ephemeral port, closed at once). */
export function canBind(address: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: address, port: 0, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

function ip(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('ip', args, { timeout: 5_000 }, (error, _stdout, stderr) => {
      if (!error) return resolve();
      const code = (error as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'the ip command (iproute2) is not installed' : stderr.trim() || error.message;
      reject(new Error(`ip ${args.join(' ')}: ${why}`));
    });
  });
}

/**
 * Makes `cidr` local unless `probe` (an address of it) can be bound already. On failure the reason
 * names the command and what it answered (e.g. `RTNETLINK answers: Operation not permitted`).
 */
export async function makeRangeLocal(cidr: string, probe: string): Promise<LocalRangeResult> {
  if (await canBind(probe)) return { local: true, added: false };
  try {
    await ip(['route', 'add', 'local', cidr, 'dev', 'lo']);
  } catch (err) {
    return { local: false, reason: (err as Error).message };
  }
  if (await canBind(probe)) return { local: true, added: true };
  await removeLocalRange(cidr).catch(() => undefined);
  return { local: false, reason: `ip route add local ${cidr} dev lo: ${probe} still cannot be bound` };
}

/** Removes the route `makeRangeLocal` added. */
export function removeLocalRange(cidr: string): Promise<void> {
  return ip(['route', 'del', 'local', cidr, 'dev', 'lo']);
}
