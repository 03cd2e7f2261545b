#!/usr/bin/env bash
# Builds the images the containerd tests use, as OCI image-layout tarballs, from the host's
# static busybox. Nothing can be pulled on the test machines (no registry access), so the images
# are made by hand:
#
#   OUTDIR/busybox.tar  statelet.local/busybox:1  rootfs = /bin/busybox + every applet, Cmd ["sh"]
#   OUTDIR/pause.tar    statelet.local/pause:1    same layer, Entrypoint busybox `sleep infinity`
#   OUTDIR/private-busybox.tar                    busybox with a label of its own, so another image
#                                                 ID: what the tests push to their registry
#                                                 (test/support/registry.ts), up.sh does not import it
#
# The tarballs are deterministic (sorted entries, mtime 0, owner 0:0, fixed modes, JSON written
# byte for byte here), so the same busybox binary always gives the same digests and containerd
# stores the shared layer once.
#
# The pause image only needs to hold the sandbox's namespaces open. `sleep infinity` never wakes
# up; containerd stops a sandbox with SIGKILL, so it does not need to handle SIGTERM.
#
# Usage: build-images.sh OUTDIR
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$1
busybox=${BUSYBOX:-/bin/busybox}

if [[ ! -x $busybox ]]; then
  echo "build-images: $busybox not found (apt-get install busybox-static)" >&2
  exit 1
fi
# A dynamically linked busybox would need the host's libc inside the image.
if ldd "$busybox" >/dev/null 2>&1; then
  echo "build-images: $busybox is dynamically linked; the static one (busybox-static) is needed" >&2
  exit 1
fi

# OCI names Go's architecture names.
case $(uname -m) in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) echo "build-images: unsupported machine $(uname -m)" >&2; exit 1 ;;
esac

umask 022
mkdir -p "$out"
work=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# GNU tar flags that make an archive depend only on the files' names, contents and modes.
det_tar() {
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu "$@"
}

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }

# ---------------------------------------------------------------- the rootfs layer
root=$work/rootfs
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,root,tmp,var}
install -m 0755 "$busybox" "$root/bin/busybox"
# Every applet this busybox offers, at the path busybox itself proposes (bin/sh, usr/bin/wget,
# sbin/ifconfig…), as an absolute symlink to /bin/busybox.
while read -r applet; do
  [[ -n $applet && $applet != bin/busybox ]] || continue
  # (`linuxrc` sits at the top, with no directory part.)
  if [[ $applet == */* && ! -d $root/${applet%/*} ]]; then mkdir -p "$root/${applet%/*}"; fi
  ln -s /bin/busybox "$root/$applet"
done < <("$busybox" --list-full)
for a in sh sleep echo touch rm test cat true false httpd nc wget ls mkdir; do
  if [[ ! -e $root/bin/$a && ! -e $root/usr/bin/$a && ! -e $root/sbin/$a && ! -e $root/usr/sbin/$a ]]; then
    echo "build-images: $busybox lacks the applet '$a'" >&2
    exit 1
  fi
done
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' \
  >"$root/etc/passwd"
printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$root/etc/group"
chmod 0644 "$root/etc/passwd" "$root/etc/group"
chmod 0755 "$root" "$root"/{bin,sbin,usr,usr/bin,usr/sbin,etc,var}
chmod 0700 "$root/root"
chmod 1777 "$root/tmp"

layer=$work/layer.tar
# Entries are relative (./bin/busybox…), as in the layers registries serve.
det_tar -C "$root" -cf "$layer" .
# Uncompressed layer: digest and diff_id are the same, and nothing depends on gzip's version.
layer_digest=$(sha "$layer")
layer_size=$(size "$layer")

# ---------------------------------------------------------------- one image per layout
# make_image NAME CONFIG_FRAGMENT OUTFILE: writes an OCI layout holding NAME and tars it.
make_image() {
  local name=$1 exec_json=$2 outfile=$3
  local layout=$work/layout-${outfile%.tar}
  mkdir -p "$layout/blobs/sha256"
  cp "$layer" "$layout/blobs/sha256/$layer_digest"

  local config=$work/config.json
  printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"statelet scripts/containerd/build-images.sh"}]}' \
    "$arch" "$exec_json" "$layer_digest" >"$config"
  local config_digest config_size
  config_digest=$(sha "$config")
  config_size=$(size "$config")
  mv "$config" "$layout/blobs/sha256/$config_digest"

  local manifest=$work/manifest.json
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$config_digest" "$config_size" "$layer_digest" "$layer_size" >"$manifest"
  local manifest_digest manifest_size
  manifest_digest=$(sha "$manifest")
  manifest_size=$(size "$manifest")
  mv "$manifest" "$layout/blobs/sha256/$manifest_digest"

  # io.containerd.image.name is what `ctr images import` names the image after;
  # org.opencontainers.image.ref.name is the OCI spelling other tools read.
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest_digest" "$manifest_size" "$arch" "$name" "$name" >"$layout/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
  find "$layout" -type d -exec chmod 0755 {} + && find "$layout" -type f -exec chmod 0644 {} +

  det_tar -C "$layout" -cf "$out/$outfile.tmp" oci-layout index.json blobs
  mv "$out/$outfile.tmp" "$out/$outfile"
  echo "$name $out/$outfile sha256:$manifest_digest"
}

make_image statelet.local/busybox:1 '"Cmd":["sh"]' busybox.tar
make_image statelet.local/pause:1 '"Entrypoint":["/bin/busybox","sleep","infinity"]' pause.tar
# A pulled image that shared busybox's ID would be one CRI image with both names: removing it
# would remove statelet.local/busybox:1 too.
make_image statelet.local/private-busybox:1 '"Cmd":["sh"],"Labels":{"statelet.test/image":"private"}' private-busybox.tar
