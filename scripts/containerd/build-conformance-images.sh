#!/usr/bin/env bash
# Builds the container images the upstream node conformance suite (e2e.test) runs, under the names
# and tags it uses, as OCI image-layout tarballs for `ctr -n k8s.io images import`. Nothing can be
# pulled on these machines, so each is made here from Debian packages and the test control plane's
# module graph:
#
#   busybox.tar  registry.k8s.io/e2e-test-images/busybox:1.37.0-2
#                busybox (static) with every applet (each also in /bin), Cmd ["sh"]. Rebuilt from Debian's own
#                busybox source package (the version of the installed busybox-static) with its
#                busybox-static configuration plus CONFIG_FEATURE_DI_ENV_HACK: Debian's binary's
#                `sh` drops environment variables whose names are not shell identifiers
#                (`data-1=value-1`), which upstream's busybox keeps and 4 conformance specs read.
#                BUSYBOX_FROM_SOURCE=0 uses the host's /bin/busybox as it is.
#   agnhost.tar  registry.k8s.io/e2e-test-images/agnhost:2.66.1 and :2.55
#                the busybox layer + a static /agnhost (k8s.io/kubernetes/test/images/agnhost from
#                test/controlplane's go.mod) and /agnhost-2, bash (Debian's bash-static),
#                /usr/bin/curl with the libraries it links, /uploads, porter's localhost.crt/.key,
#                user user-defined-in-image (1000) in group group-defined-in-image (50000),
#                /usr/local/bin/nsenter (busybox's, reaching the host's mount namespace through
#                the containerd shim where pid 1 refuses it: the storage specs' host-exec pods);
#                Entrypoint ["/agnhost"], Cmd ["pause"]. AGNHOST=/path uses a built agnhost.
#   pause.tar    registry.k8s.io/pause:3.10.2
#                upstream's build/pause/linux/pause.c built with `gcc -static` (a Go program that
#                does the same where gcc is missing), User 65535:65535, Entrypoint ["/pause"].
#   nginx.tar    registry.k8s.io/e2e-test-images/nginx:1.27.0-2 and :1.28.0-2
#                the busybox layer + Debian's nginx (`apt-get download`, never installed: the
#                package would start a service) with the libraries it links, serving
#                /usr/share/nginx/html on :80, logs to stdout/stderr, Cmd nginx -g 'daemon off;'
#                as in upstream's (nginx:alpine based) image.
#   nonewprivs.tar registry.k8s.io/e2e-test-images/nonewprivs:1.4
#                the busybox layer + upstream's test/images/nonewprivs built statically at
#                /usr/local/bin/nnp, setuid root (mode 4755); Cmd ["nnp"].
#
# The layers are deterministic (sorted entries, mtime 0, owner 0:0) and the busybox layer is the
# same in busybox, agnhost and nginx, so containerd stores it once.
#
# Everything is built once per machine and cached under ${XDG_CACHE_HOME:-~/.cache}/
# statelet-conformance-images (or $STATELET_IMAGE_CACHE): busybox/<source version>/ and
# agnhost/<hash of go.mod, go.sum, Go version>/ hold the slow-to-build binaries, images/<key>/ the
# archives (key: this script, lib.sh, the binaries and the Debian packages' versions) and
# images.txt ("FILE NAME..." per archive). Concurrent runs serialise on a lock; an import holds
# it shared, so a build never prunes archives being imported.
#
# Usage:
#   build-conformance-images.sh                    builds (or finds) the archives, prints their dir
#   build-conformance-images.sh --import ENDPOINT  and imports them into the containerd at
#                                                  ENDPOINT (unix:///…/containerd.sock or the
#                                                  socket's path), namespace k8s.io, waiting until
#                                                  CRI ImageStatus sees every image
#
# Needs: tar, gcc + make + libc6-dev + dpkg-dev (busybox from source; pause), Go in /usr/local/go
# or on PATH (agnhost), apt (apt-get download / source: bash-static, nginx, nginx-common,
# busybox's source), curl and busybox-static installed. Build time on 2 cores with a warm Go
# module cache: about 2 min busybox + 1–5 min agnhost the first time, seconds afterwards.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/containerd/lib.sh
source "$here/lib.sh"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

log() { echo "conformance-images: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

import_endpoint=
case $# in
  0) ;;
  2) [[ $1 == --import ]] || { echo "usage: $0 [--import ENDPOINT]" >&2; exit 2; }; import_endpoint=$2 ;;
  *) echo "usage: $0 [--import ENDPOINT]" >&2; exit 2 ;;
esac

# The images, by archive: "ARCHIVE NAME...".
BUSYBOX_NAMES="registry.k8s.io/e2e-test-images/busybox:1.37.0-2"
AGNHOST_NAMES="registry.k8s.io/e2e-test-images/agnhost:2.66.1 registry.k8s.io/e2e-test-images/agnhost:2.55"
PAUSE_NAMES="registry.k8s.io/pause:3.10.2"
NGINX_NAMES="registry.k8s.io/e2e-test-images/nginx:1.27.0-2 registry.k8s.io/e2e-test-images/nginx:1.28.0-2"
NONEWPRIVS_NAMES="registry.k8s.io/e2e-test-images/nonewprivs:1.4"
PAUSE_VERSION=3.10.2

case $(uname -m) in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) die "unsupported machine $(uname -m)" ;;
esac

moddir=$repo/test/controlplane
go=
for candidate in go /usr/local/go/bin/go; do
  if command -v "$candidate" >/dev/null 2>&1; then go=$(command -v "$candidate"); break; fi
done
export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-modcacherw CGO_ENABLED=0

cache_root=${STATELET_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/statelet-conformance-images}
mkdir -p "$cache_root"/{busybox,agnhost,images}
umask 022

hash16() { sha256sum | cut -c1-16; }

# ---------------------------------------------------------------- busybox
# busybox_binary: prints the path of the busybox to put in the images, building it if need be.
busybox_binary() {
  if [[ ${BUSYBOX_FROM_SOURCE:-1} == 0 ]]; then
    echo /bin/busybox
    return
  fi
  local version
  version=$(dpkg-query -W -f '${source:Version}' busybox-static 2>/dev/null) ||
    die "busybox-static is not installed (apt-get install busybox-static)"
  local out=$cache_root/busybox/${version//:/_}-di-env-hack
  if [[ -x $out/busybox ]]; then
    echo "$out/busybox"
    return
  fi
  for tool in gcc make dpkg-source apt-get strip; do
    command -v "$tool" >/dev/null || die "'$tool' not found, needed to build busybox (apt-get install build-essential dpkg-dev)"
  done
  log "building busybox $version from Debian's source package with CONFIG_FEATURE_DI_ENV_HACK"
  local w
  w=$(mktemp -d "$cache_root/busybox/.build.XXXXXX")
  # The system's Debian sources, as deb-src, in lists of our own: the system's apt is not touched.
  local codename
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [[ -n $codename ]] || die "no VERSION_CODENAME in /etc/os-release"
  mkdir -p "$w/apt/lists/partial" "$w/apt/parts" "$w/apt/cache/archives/partial"
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    # deb822: keep the paragraphs of this release's suites, as deb-src.
    awk -v cn="$codename" 'BEGIN { RS = ""; ORS = "\n\n" }
      {
        keep = 0; out = ""
        n = split($0, lines, "\n")
        for (i = 1; i <= n; i++) {
          line = lines[i]
          if (line ~ /^Types:/) { if (line ~ /[ \t]deb([ \t]|$)/) keep++; line = "Types: deb-src" }
          if (line ~ /^Suites:/) { s = line; sub(/^Suites:[ \t]*/, "", s); m = split(s, suites, /[ \t]+/)
            for (j = 1; j <= m; j++) if (suites[j] !~ ("^" cn "(-|$)")) keep = -99
            keep++ }
          out = out line "\n"
        }
        if (keep >= 2) printf "%s\n", out
      }' "$f" >"$w/apt/parts/$(basename "$f")"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f $f ]] || continue
    awk -v cn="$codename" '$1 == "deb" {
        for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/ && $i !~ /=/) break
        if ($(i + 1) ~ ("^" cn "(-|$)")) { $1 = "deb-src"; print }
      }' "$f" >"$w/apt/parts/$(basename "$f")"
  done
  local apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$w/apt/parts"
    -o "Dir::State::Lists=$w/apt/lists" -o "Dir::Cache=$w/apt/cache" -o "APT::Sandbox::User=root")
  # A failing source among several only warns; the download below tells whether it worked.
  apt-get "${apt_opts[@]}" -q update >&2 || log "apt-get update of the deb-src lists reported errors"
  # The installed version's source; if the archive no longer has it (superseded), the current one.
  (cd "$w" && { apt-get "${apt_opts[@]}" -q source --download-only "busybox=$version" >&2 ||
    apt-get "${apt_opts[@]}" -q source --download-only busybox >&2; }) ||
    die "could not download busybox's source package (BUSYBOX_FROM_SOURCE=0 uses Debian's binary, which drops env vars like data-1)"
  (cd "$w" && dpkg-source -x ./*.dsc src >&2) || die "could not unpack busybox's source"
  local src=$w/src b=$w/src/b/static
  mkdir -p "$b"
  # As debian/rules does for its "static" flavour, with the hack turned on.
  cat "$src/debian/config/os/linux" >"$b/.config"
  sed 's/^# CONFIG_FEATURE_DI_ENV_HACK is not set$/CONFIG_FEATURE_DI_ENV_HACK=y/' \
    "$src/debian/config/pkg/static" >>"$b/.config"
  grep -qx 'CONFIG_FEATURE_DI_ENV_HACK=y' "$b/.config" || die "busybox's static config has no FEATURE_DI_ENV_HACK"
  export KCONFIG_NOTIMESTAMP=1
  (set +o pipefail; yes "" | make -C "$b" -f "$src/Makefile" KBUILD_SRC="$src" silentoldconfig >"$w/config.log" 2>&1) ||
    { tail -20 "$w/config.log" >&2; die "busybox oldconfig failed"; }
  grep -qx 'CONFIG_FEATURE_DI_ENV_HACK=y' "$b/.config" || die "busybox's oldconfig dropped FEATURE_DI_ENV_HACK"
  make -C "$b" -j"$(nproc)" all SKIP_STRIP=y BB_EXTRA_VERSION="Debian $version statelet" \
    CONFIG_EXTRA_CFLAGS="-fstack-protector-strong -Wformat -Werror=format-security -D_FORTIFY_SOURCE=2" \
    CONFIG_EXTRA_LDFLAGS="-Wl,-z,relro" >"$w/build.log" 2>&1 ||
    { tail -30 "$w/build.log" >&2; die "busybox build failed (log: $w/build.log)"; }
  strip "$b/busybox"
  ! ldd "$b/busybox" >/dev/null 2>&1 || die "the busybox built is not static"
  [[ $(env 'data-1=value-1' "$b/busybox" sh -c env | grep -cx 'data-1=value-1') -eq 1 ]] ||
    die "the busybox built drops the variable data-1 from the environment"
  mkdir -p "$out.tmp"
  install -m 0755 "$b/busybox" "$out.tmp/busybox"
  rm -rf "$out"
  mv "$out.tmp" "$out"
  rm -rf "$w"
  # Builds of other versions are stale.
  find "$cache_root/busybox" -mindepth 1 -maxdepth 1 -type d ! -name "$(basename "$out")" -exec rm -rf {} +
  log "busybox built: $out/busybox"
  echo "$out/busybox"
}

# ---------------------------------------------------------------- the Go module
# kube_module_copy DIR: a copy of the test control plane's module (go.mod, go.sum) to build and
# look up k8s.io/kubernetes in, so that test/controlplane itself is never modified.
kube_module_copy() {
  cp "$moddir/go.mod" "$moddir/go.sum" "$1/"
}

agnhost_binary() {
  if [[ -n ${AGNHOST:-} ]]; then
    [[ -x $AGNHOST ]] || die "AGNHOST=$AGNHOST is not an executable"
    echo "$AGNHOST"
    return
  fi
  [[ -n $go ]] || die "Go not found (on PATH or in /usr/local/go), needed to build agnhost"
  local key out
  key=$({ cat "$moddir/go.mod" "$moddir/go.sum"; "$go" version; echo "$arch"; } | hash16)
  out=$cache_root/agnhost/$key
  if [[ -x $out/agnhost ]]; then
    echo "$out/agnhost"
    return
  fi
  log "building agnhost from test/controlplane's module graph"
  local w
  w=$(mktemp -d "$cache_root/agnhost/.build.XXXXXX")
  kube_module_copy "$w"
  (cd "$w" && "$go" build -mod=mod -trimpath -ldflags '-s -w' -o "$w/agnhost" k8s.io/kubernetes/test/images/agnhost >&2) ||
    die "agnhost build failed"
  ! ldd "$w/agnhost" >/dev/null 2>&1 || die "the agnhost built is not static"
  mkdir -p "$out.tmp"
  mv "$w/agnhost" "$out.tmp/agnhost"
  rm -rf "$out"
  mv "$out.tmp" "$out"
  rm -rf "$w"
  # Builds from other module graphs are stale.
  find "$cache_root/agnhost" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
  echo "$out/agnhost"
}

# ---------------------------------------------------------------- the lock
# Builders take it exclusively, importers shared (a build prunes archives of other keys).
exec 9>"$cache_root/.lock"
flock -x 9

busybox=$(busybox_binary)
agnhost=$(agnhost_binary)
ldd "$busybox" >/dev/null 2>&1 && die "$busybox is dynamically linked; the static one (busybox-static) is needed"

# Versions that change what goes into the images.
deb_versions=$(apt-cache policy bash-static nginx nginx-common | grep -E '^[a-z]|Candidate' | tr -s ' \n' ' ')
[[ $deb_versions != *"Candidate: (none)"* ]] ||
  die "bash-static, nginx or nginx-common has no candidate version (apt-get update first): $deb_versions"
host_versions=$(dpkg-query -W curl libc6 2>/dev/null | tr '\t\n' '= ') || die "curl is not installed (apt-get install curl)"
key=$({
  cat "${BASH_SOURCE[0]}" "$here/lib.sh"
  sha256sum "$busybox" "$agnhost" | cut -d' ' -f1
  echo "$deb_versions $host_versions $arch"
  command -v gcc || echo "no gcc"
} | hash16)
images=$cache_root/images/$key

if [[ ! -f $images/images.txt ]]; then
  t0=$(date +%s)
  log "building the images into $images"
  w=$(mktemp -d "$cache_root/images/.build.XXXXXX")
  trap 'rm -rf "$w"' EXIT
  mkdir -p "$w/mod"
  kube_module_copy "$w/mod"
  [[ -n $go ]] || die "Go not found, needed to find k8s.io/kubernetes's sources"
  kube=$(cd "$w/mod" && "$go" list -mod=mod -m -f '{{.Dir}}' k8s.io/kubernetes) ||
    die "could not locate k8s.io/kubernetes in the module cache"
  [[ -f $kube/build/pause/linux/pause.c ]] || die "$kube/build/pause/linux/pause.c not found"

  # Debian packages, downloaded and unpacked here, never installed.
  mkdir -p "$w/debs" "$w/deb"
  (cd "$w/debs" && apt-get -q -o APT::Sandbox::User=root download bash-static nginx nginx-common >&2) ||
    die "apt-get download bash-static nginx nginx-common failed"
  for deb in "$w"/debs/*.deb; do dpkg-deb -x "$deb" "$w/deb"; done

  # copy_linked ROOT BINARY DEST: BINARY at ROOT/DEST, with every library it links (and the
  # dynamic loader) at the path the host resolves it to, as plain files.
  copy_linked() {
    local root=$1 bin=$2 dest=$3 lib
    install -D -m 0755 "$bin" "$root$dest"
    while read -r lib; do
      # (With its mode: the dynamic loader must stay executable.)
      [[ -e $root$lib ]] || install -D -m "$(stat -c %a "$(readlink -f "$lib")")" "$(readlink -f "$lib")" "$root$lib"
    done < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
    if ldd "$bin" | grep -q 'not found'; then die "$bin links a library the host lacks: $(ldd "$bin" | grep 'not found')"; fi
  }

  # The users and groups of upstream's busybox image; the images add theirs.
  base_passwd='root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false'
  base_group='root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
kmem:x:9:
wheel:x:10:root
cdrom:x:11:
dialout:x:18:
floppy:x:19:
video:x:28:
audio:x:29:
tape:x:32:
www-data:x:33:
operator:x:37:
utmp:x:43:
plugdev:x:46:
staff:x:50:
lock:x:54:
netdev:x:82:
users:x:100:
nogroup:x:65534:'
  # users ROOT EXTRA_PASSWD EXTRA_GROUP: ROOT/etc/passwd and /etc/group.
  users() {
    mkdir -p "$1/etc"
    printf '%s\n' "$base_passwd" ${2:+"$2"} >"$1/etc/passwd"
    printf '%s\n' "$base_group" ${3:+"$3"} >"$1/etc/group"
    chmod 0644 "$1/etc/passwd" "$1/etc/group"
  }
  # layer ROOT OUT: ROOT's tree as a deterministic layer tar.
  layer() {
    chmod 0755 "$1"
    det_tar -C "$1" -cf "$2" .
  }
  path_env='"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]'

  # ---- busybox: the layer under busybox, agnhost and nginx
  r=$w/busybox
  mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc,home,root,tmp,var/spool/mail,var/www}
  install -m 0755 "$busybox" "$r/bin/busybox"
  # Every applet at its usual path and in /bin, as in upstream's busybox image (the Sysctls spec
  # runs /bin/sysctl, which busybox itself installs in /sbin).
  while read -r applet; do
    [[ -n $applet && $applet != bin/busybox ]] || continue
    if [[ $applet == */* && ! -d $r/${applet%/*} ]]; then mkdir -p "$r/${applet%/*}"; fi
    ln -s /bin/busybox "$r/$applet"
    [[ -e $r/bin/${applet##*/} || -L $r/bin/${applet##*/} ]] || ln -s /bin/busybox "$r/bin/${applet##*/}"
  done < <("$busybox" --list-full)
  users "$r"
  chmod 0700 "$r/root"
  chmod 1777 "$r/tmp"
  layer "$r" "$w/busybox.layer"
  oci_archive "$w/busybox.tar" "$arch" "$path_env,\"Cmd\":[\"sh\"],\"WorkingDir\":\"/\"" "$BUSYBOX_NAMES" \
    "$w/busybox.layer" >/dev/null

  # ---- agnhost
  r=$w/agnhost
  mkdir -p "$r"/{bin,usr/bin,uploads,home/user-defined-in-image}
  install -m 0755 "$agnhost" "$r/agnhost"
  ln -s agnhost "$r/agnhost-2"
  install -m 0755 "$w/deb/bin/bash-static" "$r/bin/bash"
  copy_linked "$r" /usr/bin/curl /usr/bin/curl
  install -m 0644 "$kube/test/images/agnhost/porter/localhost.crt" "$r/localhost.crt"
  install -m 0644 "$kube/test/images/agnhost/porter/localhost.key" "$r/localhost.key"
  users "$r" 'user-defined-in-image:x:1000:1000:Linux User,,,:/home/user-defined-in-image:/bin/sh' \
    'user-defined-in-image:x:1000:
group-defined-in-image:x:50000:user-defined-in-image'
  # /usr/local/bin/nsenter, before busybox's on PATH: the storage specs' host-exec pods run
  # `nsenter --mount=/rootfs/proc/1/ns/mnt -- sh -c CMD` to reach the host's mount namespace, and
  # on these machines pid 1 (the VM's init) refuses its namespaces even to root.
  mkdir -p "$r/usr/local/bin"
  cat > "$r/usr/local/bin/nsenter" <<'NSENTER'
#!/bin/sh
# busybox's nsenter, except for the host-exec pods of the storage specs
# (test/e2e/storage/utils/host_exec.go: a privileged pod on the host's network, the host's / at
# /rootfs, running `nsenter --mount=/rootfs/proc/1/ns/mnt -- sh -c CMD`): where the host's pid 1
# refuses its namespaces even to root (these machines' pid 1 is the VM's init), the host's mount
# namespace is taken from this container's containerd shim, the nearest ancestor of this shell
# named containerd-shim* (a nearer one, `runc exec`, is gone a moment later). The host's /proc
# numbers the processes as the host does; it is read by this shell itself (no subshell whose pid
# would be gone).
status() { # PID KEY: $value = KEY's value in the host's /proc/PID/status; fails when PID is gone
  value=
  [ -r "/rootfs/proc/$1/status" ] || return 1
  while read -r key rest; do
    if [ "$key" = "$2:" ]; then value=$rest; break; fi
  done 2>/dev/null < "/rootfs/proc/$1/status"
  [ -n "$value" ]
}
shim() { # $shim = the pid of the nearest ancestor named containerd-shim*, or empty
  shim=
  status self Pid || return
  pid=$value
  while [ "$pid" -gt 1 ]; do
    status "$pid" Name || return
    case $value in containerd-shim*) shim=$pid; return ;; esac
    status "$pid" PPid || return
    pid=$value
  done
}
if [ "$1" = --mount=/rootfs/proc/1/ns/mnt ] && ! readlink /rootfs/proc/1/ns/mnt >/dev/null 2>&1; then
  shift
  [ "$1" = -- ] && shift
  # An ancestor exiting under the walk (runc exec) makes it start again.
  for attempt in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    shim
    # The command through the host's env: busybox would run its own applets (sh, losetup,
    # mount…) for names without a slash, not the host's programs.
    [ -n "$shim" ] && exec /bin/busybox nsenter "--mount=/rootfs/proc/$shim/ns/mnt" -- /usr/bin/env "$@"
    sleep 0.2
  done
  echo "nsenter: /rootfs/proc/1/ns/mnt cannot be opened and no ancestor of this shell is a containerd shim" >&2
  exit 1
fi
if [ "${1#--mount=}" != "$1" ] && [ "$2" = -- ]; then
  mount=$1
  shift 2
  exec /bin/busybox nsenter "$mount" -- /usr/bin/env "$@"
fi
exec /bin/busybox nsenter "$@"
NSENTER
  chmod 0755 "$r/usr/local/bin/nsenter"
  layer "$r" "$w/agnhost.layer"
  oci_archive "$w/agnhost.tar" "$arch" \
    "$path_env,\"Entrypoint\":[\"/agnhost\"],\"Cmd\":[\"pause\"],\"WorkingDir\":\"/\",\"ExposedPorts\":{\"80/tcp\":{},\"8080/tcp\":{},\"8081/tcp\":{},\"9376/tcp\":{},\"5000/tcp\":{}}" \
    "$AGNHOST_NAMES" "$w/busybox.layer" "$w/agnhost.layer" >/dev/null

  # ---- pause
  r=$w/pause
  mkdir -p "$r"
  if command -v gcc >/dev/null && [[ ${PAUSE_WITH_GO:-0} != 1 ]]; then
    gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION-statelet" -o "$r/pause" "$kube/build/pause/linux/pause.c" ||
      die "gcc -static of pause.c failed (is libc6-dev installed?)"
    strip "$r/pause"
  else
    # pause.c's behaviour: sleep until SIGINT or SIGTERM (then exit 0), reaping children.
    mkdir -p "$w/pause-go"
    cat >"$w/pause-go/main.go" <<'EOF'
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	for _, arg := range os.Args[1:] {
		if arg == "-v" || arg == "-V" {
			fmt.Println("pause (statelet, Go)")
			return
		}
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", s)
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
EOF
    printf 'module pause\n\ngo 1.21\n' >"$w/pause-go/go.mod"
    (cd "$w/pause-go" && "$go" build -trimpath -ldflags '-s -w' -o "$r/pause" .) || die "Go build of pause failed"
  fi
  chmod 0755 "$r/pause"
  ! ldd "$r/pause" >/dev/null 2>&1 || die "pause is not static"
  layer "$r" "$w/pause.layer"
  oci_archive "$w/pause.tar" "$arch" "\"User\":\"65535:65535\",$path_env,\"Entrypoint\":[\"/pause\"],\"WorkingDir\":\"/\"" \
    "$PAUSE_NAMES" "$w/pause.layer" >/dev/null

  # ---- nginx
  r=$w/nginx
  mkdir -p "$r"/{etc/nginx/conf.d,usr/share/nginx/html,var/log/nginx,var/lib/nginx,var/cache/nginx,run}
  copy_linked "$r" "$w/deb/usr/sbin/nginx" /usr/sbin/nginx
  install -m 0644 "$w/deb/etc/nginx/mime.types" "$r/etc/nginx/mime.types"
  install -m 0644 "$w/deb/usr/share/nginx/html/index.html" "$r/usr/share/nginx/html/index.html"
  printf '%s\n' '<!DOCTYPE html><html><head><title>Error</title></head><body><h1>An error occurred.</h1></body></html>' \
    >"$r/usr/share/nginx/html/50x.html"
  # The configuration of upstream's nginx image (nginx:alpine), IPv4 only.
  cat >"$r/etc/nginx/nginx.conf" <<'EOF'
user  nginx;
worker_processes  auto;

error_log  /var/log/nginx/error.log notice;
pid        /run/nginx.pid;

events {
    worker_connections  1024;
}

http {
    include       /etc/nginx/mime.types;
    default_type  application/octet-stream;

    log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" '
                      '"$http_user_agent" "$http_x_forwarded_for"';

    access_log  /var/log/nginx/access.log  main;

    sendfile        on;
    keepalive_timeout  65;

    include /etc/nginx/conf.d/*.conf;
}
EOF
  cat >"$r/etc/nginx/conf.d/default.conf" <<'EOF'
server {
    listen       80;
    server_name  localhost;

    location / {
        root   /usr/share/nginx/html;
        index  index.html index.htm;
    }

    error_page   500 502 503 504  /50x.html;
    location = /50x.html {
        root   /usr/share/nginx/html;
    }
}
EOF
  chmod 0644 "$r/etc/nginx/nginx.conf" "$r/etc/nginx/conf.d/default.conf"
  ln -s /dev/stdout "$r/var/log/nginx/access.log"
  ln -s /dev/stderr "$r/var/log/nginx/error.log"
  printf '#!/bin/sh\nexec "$@"\n' >"$r/docker-entrypoint.sh"
  chmod 0755 "$r/docker-entrypoint.sh"
  users "$r" 'nginx:x:101:101:nginx:/var/cache/nginx:/sbin/nologin' 'nginx:x:101:nginx'
  layer "$r" "$w/nginx.layer"
  oci_archive "$w/nginx.tar" "$arch" \
    "$path_env,\"Entrypoint\":[\"/docker-entrypoint.sh\"],\"Cmd\":[\"nginx\",\"-g\",\"daemon off;\"],\"WorkingDir\":\"/\",\"ExposedPorts\":{\"80/tcp\":{}},\"StopSignal\":\"SIGQUIT\"" \
    "$NGINX_NAMES" "$w/busybox.layer" "$w/nginx.layer" >/dev/null

  # ---- nonewprivs: upstream's test/images/nonewprivs (prints its effective uid), setuid root
  r=$w/nonewprivs
  mkdir -p "$r/usr/local/bin"
  (cd "$w/mod" && "$go" build -mod=mod -trimpath -ldflags '-s -w' -o "$r/usr/local/bin/nnp" k8s.io/kubernetes/test/images/nonewprivs >&2) ||
    die "nonewprivs build failed"
  ! ldd "$r/usr/local/bin/nnp" >/dev/null 2>&1 || die "the nnp built is not static"
  chmod 4755 "$r/usr/local/bin/nnp"
  layer "$r" "$w/nonewprivs.layer"
  oci_archive "$w/nonewprivs.tar" "$arch" "$path_env,\"Cmd\":[\"nnp\"],\"WorkingDir\":\"/\"" \
    "$NONEWPRIVS_NAMES" "$w/busybox.layer" "$w/nonewprivs.layer" >/dev/null

  mkdir -p "$w/out"
  mv "$w"/{busybox,agnhost,pause,nginx,nonewprivs}.tar "$w/out/"
  {
    echo "busybox.tar $BUSYBOX_NAMES"
    echo "agnhost.tar $AGNHOST_NAMES"
    echo "pause.tar $PAUSE_NAMES"
    echo "nginx.tar $NGINX_NAMES"
    echo "nonewprivs.tar $NONEWPRIVS_NAMES"
  } >"$w/out/images.txt"
  {
    echo "busybox $busybox $("$busybox" 2>&1 | head -1)"
    echo "agnhost $agnhost"
    echo "debs $deb_versions"
    echo "host $host_versions"
  } >"$w/out/BUILDINFO"
  rm -rf "$images"
  mv "$w/out" "$images"
  rm -rf "$w"
  trap - EXIT
  # Archives of other keys are stale: this machine builds from one checkout's scripts at a time.
  find "$cache_root/images" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
  log "images built in $(($(date +%s) - t0)) s: $images"
fi

if [[ -z $import_endpoint ]]; then
  echo "$images"
  exit 0
fi

# ---------------------------------------------------------------- import
flock -s 9
sock=${import_endpoint#unix://}
[[ -S $sock ]] || die "no socket at $sock"
names=()
while read -r file rest; do
  # shellcheck disable=SC2086
  import_archive "$sock" "$images/$file" $rest || die "could not import $images/$file"
  # shellcheck disable=SC2206
  names+=($rest)
done <"$images/images.txt"
# The CRI image store fills asynchronously from containerd's image events.
node "$here/cri.mjs" wait-images "unix://$sock" 60 "${names[@]}" ||
  die "imported images did not show up in the CRI image store"
log "imported ${names[*]}"
echo "$images"
