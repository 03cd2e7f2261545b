#!/usr/bin/env bash
# Restarts the daemon of a private containerd started by up.sh, as a crash and a restart by the
# init system would: SIGKILL, DOWN_SECONDS without it, then the same config again. The containers
# keep running under their shims meanwhile; CRI calls fail and event streams break until it is
# back. Returns once the CRI plugin answers again.
#
# Usage: restart.sh WORKDIR [DOWN_SECONDS]     (root only)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/containerd/lib.sh
source "$here/lib.sh"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
log() { echo "containerd-restart: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 WORKDIR [DOWN_SECONDS]" >&2; exit 2; }
wd=$(realpath -m "$1")
down=${2:-1}
sock=$wd/containerd.sock
[[ -f $wd/containerd.pid && -f $wd/config.toml ]] || die "$wd holds no instance started by up.sh"
pid=$(cat "$wd/containerd.pid")
tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$wd/config.toml" || die "containerd of $wd (pid $pid) is not running"

kill -KILL "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
log "containerd pid $pid killed; down for ${down}s"
sleep "$down"

setsid containerd --config "$wd/config.toml" </dev/null >>"$wd/containerd.log" 2>&1 &
pid=$!
echo "$pid" >"$wd/containerd.pid"
wait_serving "$sock" "$pid"
log "containerd pid $pid serving again"
