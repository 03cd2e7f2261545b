#!/usr/bin/env bash
# Imports into the private containerd of WORKDIR (up.sh) an image of one layer holding BYTES of
# random data, named NAME: an image nothing uses, of a known size, for the image GC tests to fill
# the image filesystem with. Random, so that no two fillers share a blob.
#
# Usage: filler-image.sh WORKDIR NAME BYTES      (root only)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/containerd/lib.sh
source "$here/lib.sh"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

[[ $# -eq 3 ]] || { echo "usage: $0 WORKDIR NAME BYTES" >&2; exit 2; }
wd=$(realpath -m "$1")
name=$2
bytes=$3
[[ -f $wd/.statelet-containerd ]] || { echo "filler-image: $wd is not a private containerd of up.sh" >&2; exit 1; }

build=$(mktemp -d "$wd/filler.XXXXXX")
trap 'rm -rf "$build"' EXIT
mkdir -p "$build/rootfs"
head -c "$bytes" /dev/urandom >"$build/rootfs/filler"
chmod 0644 "$build/rootfs/filler"
det_tar -C "$build/rootfs" -cf "$build/layer.tar" filler
case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
oci_archive "$build/image.tar" "$arch" '"Cmd":["/filler"]' "$name" "$build/layer.tar" >/dev/null
import_archive "$wd/containerd.sock" "$build/image.tar" "$name"
