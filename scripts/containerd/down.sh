#!/usr/bin/env bash
# Stops the private containerd that up.sh started in WORKDIR and removes every trace of it, and
# nothing else: processes are found by PID (the pid file, checked against the command line) or
# by a command line naming this instance's socket, never by name, so other containerd instances
# on the machine (the system one, a parallel test run) are left alone.
#
#   1. through CRI: stop and remove every container and pod sandbox (StopPodSandbox runs CNI
#      DEL, which releases the pod IP and its iptables rules); then ctr kills any task left
#   2. the daemon, by the PID in WORKDIR/containerd.pid: SIGTERM, then SIGKILL after 10 s
#   3. leftovers of a crash: containers in this instance's runc root (runc delete --force kills
#      what is still running), shims whose -address is this socket, their sockets in the shared
#      /run/containerd/s
#   4. every mount under WORKDIR (container rootfs overlays, sandbox /dev/shm, netns files)
#   5. the network: iptables rules of this instance's CNI network, its bridge, libcni's cache,
#      the subnet claim
#   6. WORKDIR itself (only if it carries up.sh's marker)
#
# Safe to run twice, and on a WORKDIR where up.sh failed half way.
#
# Usage: down.sh WORKDIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

log() { echo "containerd-down: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $# -eq 1 ]] || { echo "usage: $0 WORKDIR" >&2; exit 2; }
wd=$(realpath -m "$1")
if [[ ! -e $wd ]]; then
  log "$wd does not exist: nothing to do"
  exit 0
fi
[[ -f $wd/.statelet-containerd ]] || die "$wd has no .statelet-containerd marker: not made by up.sh, not touching it"
[[ $(id -u) -eq 0 ]] || die "must run as root"

sock=$wd/containerd.sock
net_index=$(cat "$wd/net-index" 2>/dev/null || true)

# The command line of a PID as one line with spaces, or nothing if it is gone.
cmdline() { { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null || true; }
alive() { [[ -n $(cmdline "$1") ]]; }

# ---------------------------------------------------------------- 1. through the runtime
pid=
if [[ -f $wd/containerd.pid ]]; then
  candidate=$(cat "$wd/containerd.pid")
  # A PID from the file is ours only if it still runs our config (PIDs get reused).
  if [[ $candidate =~ ^[0-9]+$ ]] && cmdline "$candidate" | grep -qF -- "--config $wd/config.toml"; then
    pid=$candidate
  fi
fi

if [[ -n $pid && -S $sock ]]; then
  if [[ -f $here/../../src/runtime/cri/api.proto ]]; then
    timeout 120 node "$here/cri.mjs" cleanup "unix://$sock" ||
      log "CRI cleanup incomplete; killing what is left with ctr and runc"
  fi
  # Tasks CRI did not know about (made with ctr) or could not stop.
  for ns in $(timeout 10 ctr -a "$sock" namespaces ls -q 2>/dev/null || true); do
    for task in $(timeout 10 ctr -a "$sock" -n "$ns" tasks ls -q 2>/dev/null || true); do
      timeout 10 ctr -a "$sock" -n "$ns" tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true
      timeout 10 ctr -a "$sock" -n "$ns" tasks delete -f "$task" >/dev/null 2>&1 || true
    done
    for c in $(timeout 10 ctr -a "$sock" -n "$ns" containers ls -q 2>/dev/null || true); do
      timeout 10 ctr -a "$sock" -n "$ns" containers rm "$c" >/dev/null 2>&1 || true
    done
  done
fi

# ---------------------------------------------------------------- 2. the daemon
if [[ -n $pid ]]; then
  log "stopping containerd pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then
    log "containerd pid $pid ignored SIGTERM for 10s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
  fi
fi

# ---------------------------------------------------------------- 3. crash leftovers
# Containers runc still knows in this instance's own runc root: kill and delete (delete --force
# also kills every process left in the container's cgroup and removes the cgroup).
if [[ -d $wd/runc ]]; then
  for root in "$wd"/runc/*/; do
    [[ -d $root ]] || continue
    for id in $(runc --root "$root" list -q 2>/dev/null || true); do
      log "runc: force-deleting leftover container $id"
      runc --root "$root" kill "$id" KILL >/dev/null 2>&1 || true
      runc --root "$root" delete --force "$id" >/dev/null 2>&1 || true
    done
  done
fi

# Shims outlive containerd by design and are reparented; ours name our socket in -address.
own_shims() {
  local dir
  for dir in /proc/[0-9]*; do
    local -a argv=()
    mapfile -d '' -t argv <"$dir/cmdline" 2>/dev/null || continue
    [[ ${#argv[@]} -gt 0 && ${argv[0]##*/} == containerd-shim* ]] || continue
    local i
    for ((i = 1; i < ${#argv[@]}; i++)); do
      if [[ ${argv[i - 1]} == -address && ( ${argv[i]} == "$sock" || ${argv[i]} == "unix://$sock" ) ]]; then
        echo "${dir#/proc/}"
        break
      fi
    done
  done
}
shims=$(own_shims)
if [[ -n $shims ]]; then
  log "killing leftover shims: $(echo $shims)"
  # shellcheck disable=SC2086
  kill -TERM $shims 2>/dev/null || true
  for _ in $(seq 30); do [[ -z $(own_shims) ]] && break; sleep 0.1; done
  shims=$(own_shims)
  # shellcheck disable=SC2086
  [[ -z $shims ]] || kill -KILL $shims 2>/dev/null || true
fi

# containerd 1.6 puts shim sockets in the shared /run/containerd/s; a shim killed above leaves
# its socket there. Each bundle records its socket in an `address` file.
if [[ -d $wd/state/io.containerd.runtime.v2.task ]]; then
  for f in "$wd"/state/io.containerd.runtime.v2.task/*/*/address; do
    [[ -f $f ]] || continue
    addr=$(cat "$f")
    addr=${addr#unix://}
    if [[ $addr =~ ^/run/containerd/s/[0-9a-f]{64}$ ]]; then rm -f "$addr"; fi
  done
fi

# ---------------------------------------------------------------- 4. mounts
mounts_under_wd() {
  awk -v dir="$wd" '$5 == dir || index($5, dir "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}
for _ in 1 2 3 4 5; do
  mounts=$(mounts_under_wd)
  [[ -n $mounts ]] || break
  while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done <<<"$mounts"
done

# ---------------------------------------------------------------- 5. network
if [[ -n $net_index ]]; then
  netname=statelet-$net_index
  bridge=statelet$net_index
  # Rules the bridge (ipMasq) and portmap plugins add carry a comment naming the network; normally
  # CNI DEL removed them, but not when pods died with containerd. The chains they jump to
  # (CNI-<hash>, CNI-DN-<hash>) are hashes of this network's name and a container id: ours alone.
  if command -v iptables-save >/dev/null; then
    for table in nat filter; do
      mapfile -t rules < <(iptables-save -t "$table" 2>/dev/null | grep -F -- "name: \\\"$netname\\\"" | grep '^-A ' || true)
      (( ${#rules[@]} )) || continue
      log "iptables: removing ${#rules[@]} leftover $table rule(s) of $netname"
      chains=()
      for rule in "${rules[@]}"; do
        # iptables-save quotes the comment shell-style; eval re-reads it as arguments.
        eval "iptables -w -t $table -D ${rule#-A }" 2>/dev/null || true
        if [[ $rule =~ -j\ (CNI-[A-Za-z0-9-]+) && ${BASH_REMATCH[1]} != CNI-HOSTPORT-* ]]; then
          chains+=("${BASH_REMATCH[1]}")
        fi
      done
      for chain in $(printf '%s\n' "${chains[@]}" | sort -u); do
        iptables -w -t "$table" -F "$chain" 2>/dev/null || true
        iptables -w -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  fi
  if ip link show "$bridge" >/dev/null 2>&1; then
    log "deleting bridge $bridge"
    ip link delete "$bridge" || true
  fi
  # libcni's result cache is machine-wide (/var/lib/cni/results): entries are named
  # <network>-<sandbox id>-<ifname>, for our bridge network and for the loopback network the
  # CRI plugin adds to every sandbox. CNI DEL removes them; after a crash they stay.
  rm -f /var/lib/cni/results/"$netname"-* 2>/dev/null || true
  for sandbox in "$wd"/root/io.containerd.grpc.v1.cri/sandboxes/*/; do
    [[ -d $sandbox ]] || continue
    id=$(basename "$sandbox")
    if [[ $id =~ ^[0-9a-f]{64}$ ]]; then rm -f "/var/lib/cni/results/cni-loopback-$id-lo"; fi
  done
  claim=/run/statelet-containerd/net.$net_index
  if [[ $(cat "$claim/owner" 2>/dev/null || true) == "$wd" ]]; then
    rm -rf "$claim"
  fi
fi

# ---------------------------------------------------------------- 6. the work dir
left=$(mounts_under_wd)
if [[ -n $left ]]; then
  die "mounts remain under $wd, not deleting it: $(echo $left)"
fi
if [[ -n $pid ]] && alive "$pid"; then
  die "containerd pid $pid is still running, not deleting $wd"
fi
# --one-file-system: never follow a mount we failed to see into someone else's files.
rm -rf --one-file-system "$wd"
log "removed $wd"
