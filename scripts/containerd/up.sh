#!/usr/bin/env bash
# Brings up a private containerd (CRI v1) for tests, entirely under WORKDIR, next to whatever
# else runs on the machine (the system containerd, another test run's instance):
#
#   WORKDIR/config.toml          `containerd config default` with every path moved under WORKDIR
#   WORKDIR/containerd.sock      gRPC (containerd API and CRI); WORKDIR/containerd.sock.ttrpc
#   WORKDIR/root, WORKDIR/state  containerd's root (a tmpfs of STATELET_CONTAINERD_ROOT_SIZE, when
#                                set) and state; the CRI plugin derives its own
#                                root/state dirs (and, with netns_mounts_under_state_dir, the
#                                pods' network namespaces) from them
#   WORKDIR/runc                 runc's state root (the default /run/containerd/runc is shared)
#   WORKDIR/cni/                 the CNI conflist; WORKDIR/cni-ipam the host-local leases
#   WORKDIR/containerd.log|.pid  the daemon's output and PID
#   WORKDIR/images/              the busybox and pause images, imported into namespace k8s.io
#   WORKDIR/certs.d/             the CRI plugin's registry `config_path`, empty: a test that runs a
#                                registry adds `certs.d/<host:port>/hosts.toml` (server, CA), which
#                                containerd reads at each pull. Never credentials: a pull must
#                                bring its own (CRI PullImage's auth)
#
# Each instance claims its own pod subnet and bridge (10.88.<4n>.0/22 on bridge `statelet<n>`,
# CNI network `statelet-<n>`) under /run/statelet-containerd, so two instances never share a
# bridge and down.sh can delete its bridge without breaking another run.
#
# On success prints one line on stdout, the CRI endpoint: unix://WORKDIR/containerd.sock.
# Everything else goes to stderr. On failure it prints the daemon log's tail and undoes itself
# with down.sh. Stop it with: scripts/containerd/down.sh WORKDIR
#
# Usage: up.sh WORKDIR        (root only; WORKDIR must be absent or empty)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/containerd/lib.sh
source "$here/lib.sh"
# containerd starts its shims, and the shims start runc, with this PATH.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

log() { echo "containerd-up: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
ms() { date +%s%3N; }

[[ $# -eq 1 ]] || { echo "usage: $0 WORKDIR" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || die "must run as root (containerd needs it)"
for tool in containerd ctr runc node ip iptables tar; do
  command -v "$tool" >/dev/null || die "'$tool' not found (apt-get install containerd runc iptables iproute2)"
done
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/portmap && -x /usr/lib/cni/loopback ]] ||
  die "CNI plugins missing in /usr/lib/cni (apt-get install containernetworking-plugins)"

wd=$(realpath -m "$1")
# Mount paths with spaces are escaped in /proc/self/mountinfo, and unix socket paths are limited
# to 107 bytes; keep WORKDIR simple and short.
[[ $wd =~ ^/[A-Za-z0-9._/+-]+$ ]] || die "WORKDIR '$wd' must be an absolute path of [A-Za-z0-9._/+-]"
(( ${#wd} <= 80 )) || die "WORKDIR '$wd' is too long for unix socket paths (max 80 chars)"
sock=$wd/containerd.sock

if [[ -f $wd/containerd.pid ]]; then
  pid=$(cat "$wd/containerd.pid")
  if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' </proc/"$pid"/cmdline | grep -qF -- "$wd/config.toml"; then
    die "an instance is already running in $wd (pid $pid); stop it with $here/down.sh $wd"
  fi
  die "$wd holds a stopped instance; clean it up with $here/down.sh $wd first"
fi
if [[ -d $wd && -n $(ls -A "$wd") ]]; then
  die "$wd is not empty; give up.sh an absent or empty directory"
fi

t0=$(ms)
mkdir -p "$wd"/{root,state,runc,opt,cni,cni-ipam,images,certs.d}
# STATELET_CONTAINERD_ROOT_SIZE (a tmpfs size such as 128m): containerd's root, where its images
# and their snapshots are, on a filesystem of that size (the image GC tests fill it); down.sh
# unmounts it with every other mount under WORKDIR.
if [[ -n ${STATELET_CONTAINERD_ROOT_SIZE:-} ]]; then
  mount -t tmpfs -o "size=$STATELET_CONTAINERD_ROOT_SIZE,mode=0711" statelet-containerd-root "$wd/root"
fi
# down.sh only ever deletes a directory that carries this marker.
echo "statelet private containerd; stop with $here/down.sh $wd" >"$wd/.statelet-containerd"

# From here on any failure (a `die`, a failing command) undoes what was started.
started=0
ok=0
on_exit() {
  local rc=$?
  (( ok )) && return 0
  if (( started )) && [[ -f $wd/containerd.log ]]; then
    log "last lines of $wd/containerd.log:"
    tail -n 30 "$wd/containerd.log" >&2 || true
  fi
  log "failed (exit $rc); cleaning up with down.sh"
  "$here/down.sh" "$wd" >&2 || true
  exit "$rc"
}
trap on_exit EXIT

# ---------------------------------------------------------------- pod network
# Claim a free /22 out of 10.88.0.0/16: mkdir is atomic, so concurrent up.sh runs cannot take the
# same one. A claim whose owner directory is gone (a run that died without down.sh) is stale.
claims=/run/statelet-containerd
mkdir -p "$claims"
net_index=
for n in $(seq 0 63); do
  subnet=10.88.$((n * 4)).0/22
  claim=$claims/net.$n
  if [[ -d $claim ]]; then
    owner=$(cat "$claim/owner" 2>/dev/null || true)
    [[ -n $owner && ! -f $owner/.statelet-containerd ]] || continue
    rm -rf "$claim"
  fi
  # Leave alone subnets the host already routes and bridges someone else left behind.
  [[ -z $(ip -4 route show match "$subnet" | grep -v '^default' || true) ]] || continue
  ip link show "statelet$n" >/dev/null 2>&1 && continue
  if mkdir "$claim" 2>/dev/null; then
    echo "$wd" >"$claim/owner"
    net_index=$n
    break
  fi
done
[[ -n $net_index ]] || die "no free pod subnet in 10.88.0.0/16 (see $claims)"
echo "$net_index" >"$wd/net-index"
subnet=10.88.$((net_index * 4)).0/22
bridge=statelet$net_index
netname=statelet-$net_index

# One conflist: the CRI plugin loads only the first (max_conf_num = 1) and adds loopback itself.
cat >"$wd/cni/10-statelet.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$netname",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$subnet" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$wd/cni-ipam"
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF

# ---------------------------------------------------------------- containerd config
# Edit the defaults key by key rather than writing a config from scratch, so that the file keeps
# matching the installed containerd. Each override is "SECTION|KEY|VALUE" (SECTION empty for the
# top level); the awk fails if a key is not where it is expected.
overrides=(
  "|root|\"$wd/root\""
  "|state|\"$wd/state\""
  "grpc|address|\"$sock\""
  "ttrpc|address|\"$sock.ttrpc\""
  "plugins.\"io.containerd.internal.v1.opt\"|path|\"$wd/opt\""
  # The VM lacks CAP_SYS_RESOURCE: without this every sandbox fails in runc asking for -998.
  "plugins.\"io.containerd.grpc.v1.cri\"|restrict_oom_score_adj|true"
  "plugins.\"io.containerd.grpc.v1.cri\"|disable_apparmor|true"
  "plugins.\"io.containerd.grpc.v1.cri\"|netns_mounts_under_state_dir|true"
  "plugins.\"io.containerd.grpc.v1.cri\"|sandbox_image|\"statelet.local/pause:1\""
  "plugins.\"io.containerd.grpc.v1.cri\"|systemd_cgroup|false"
  # Registries through hosts.toml files (the default config's registry.mirrors and .configs stay
  # empty: the CRI plugin refuses to load when they are set beside config_path, ValidatePluginConfig
  # in pkg/cri/config/config.go).
  "plugins.\"io.containerd.grpc.v1.cri\".registry|config_path|\"$wd/certs.d\""
  "plugins.\"io.containerd.grpc.v1.cri\".cni|bin_dir|\"/usr/lib/cni\""
  "plugins.\"io.containerd.grpc.v1.cri\".cni|conf_dir|\"$wd/cni\""
  "plugins.\"io.containerd.grpc.v1.cri\".containerd|snapshotter|\"overlayfs\""
  "plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options|SystemdCgroup|false"
  "plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options|Root|\"$wd/runc\""
  # The first garbage collection runs 100 ms after start by default, in the middle of the image
  # imports below, and can take a blob an import has written but not yet tied to its image.
  "plugins.\"io.containerd.gc.v1.scheduler\"|startup_delay|\"60s\""
)
containerd config default | awk -v spec="$(printf '%s\n' "${overrides[@]}")" '
  BEGIN {
    n = split(spec, lines, "\n")
    for (i = 1; i <= n; i++) {
      if (lines[i] == "") continue
      split(lines[i], f, "|")
      want[f[1] "|" f[2]] = f[3]
    }
    section = ""
  }
  /^[[:space:]]*\[.*\][[:space:]]*$/ {
    section = $0
    gsub(/^[[:space:]]*\[|\][[:space:]]*$/, "", section)
  }
  {
    if (match($0, /^[[:space:]]*[A-Za-z_]+ = /)) {
      key = $0
      sub(/^[[:space:]]*/, "", key)
      sub(/ = .*/, "", key)
      k = section "|" key
      if (k in want) {
        indent = $0
        sub(/[^[:space:]].*$/, "", indent)
        print indent key " = " want[k]
        done[k] = 1
        next
      }
    }
    print
  }
  END {
    for (k in want) if (!(k in done)) { print "up.sh: config key not found: " k > "/dev/stderr"; bad = 1 }
    exit bad
  }' >"$wd/config.toml.tmp"
mv "$wd/config.toml.tmp" "$wd/config.toml"

# ---------------------------------------------------------------- start
# setsid: the daemon must outlive this script and not get the caller's Ctrl-C or its stdio
# (a test runner waiting on our stdout would otherwise wait for containerd to exit).
setsid containerd --config "$wd/config.toml" </dev/null >>"$wd/containerd.log" 2>&1 &
pid=$!
started=1
echo "$pid" >"$wd/containerd.pid"
log "containerd pid $pid, socket $sock, bridge $bridge ($subnet)"

wait_serving "$sock" "$pid"
t_ready=$(ms)
log "containerd + CRI ready in $((t_ready - t0)) ms"

# ---------------------------------------------------------------- images
"$here/build-images.sh" "$wd/images" >&2
# containerd 1.6's `ctr import` can lose a blob to the garbage collector between writing it and
# creating the image ("content digest …: not found"); the first collection is put off past the
# imports (above), and a failed import is removed and tried again.
for image in busybox:1 pause:1; do
  for attempt in 1 2 3; do
    ctr -a "$sock" -n k8s.io images import --index-name "statelet.local/$image" \
      "$wd/images/${image%%:*}.tar" >&2 && break
    (( attempt < 3 )) || die "could not import statelet.local/$image"
    log "importing statelet.local/$image failed (attempt $attempt); removing it and trying again"
    # An image left pointing at a lost blob makes every later import fail the same way.
    ctr -a "$sock" -n k8s.io images rm --sync "statelet.local/$image" >&2 || true
  done
done
# The CRI image store fills asynchronously from containerd's image events: wait until CRI itself
# sees both images before anyone starts a pod.
node "$here/cri.mjs" wait-images "unix://$sock" 30 statelet.local/busybox:1 statelet.local/pause:1 ||
  die "imported images did not show up in the CRI image store"
t_images=$(ms)
log "images built, imported and visible to CRI in $((t_images - t_ready)) ms (total $((t_images - t0)) ms)"

ok=1
echo "unix://$sock"
