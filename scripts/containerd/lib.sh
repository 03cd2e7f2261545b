# Shared by up.sh and restart.sh (sourced): waiting for a just-started containerd to serve; and by
# build-conformance-images.sh: writing and importing OCI image archives.

# wait_serving SOCK PID: until `ctr version` answers on SOCK and then the CRI plugin does too;
# fails (die) if PID exits first or either takes more than 30 s.
wait_serving() {
  local sock=$1 pid=$2 deadline
  deadline=$(( $(date +%s) + 30 ))
  until ctr -a "$sock" version >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || die "containerd exited during startup"
    (( $(date +%s) < deadline )) || die "containerd socket did not answer within 30s"
    sleep 0.1
  done
  # The CRI plugin initialises after the socket opens; until then CRI calls fail.
  node "$here/cri.mjs" wait-ready "unix://$sock" 30 || die "CRI plugin did not become ready"
}

# ---------------------------------------------------------------- OCI image archives

# det_tar TAR_ARGS...: GNU tar whose archive depends only on the files' names, contents and modes.
det_tar() {
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu "$@"
}

# store_blob LAYOUT FILE: moves FILE into LAYOUT's blobs under its digest; prints "DIGEST SIZE".
store_blob() {
  local digest size
  digest=$(sha256sum "$2" | cut -d' ' -f1)
  size=$(stat -c %s "$2")
  mv "$2" "$1/blobs/sha256/$digest"
  echo "$digest $size"
}

# oci_archive OUTFILE ARCH CONFIG_FRAGMENT NAMES LAYER...: writes OUTFILE, an OCI image-layout
# tarball of one image made of the uncompressed layer tars LAYER... (bottom first), whose config's
# "config" object is {CONFIG_FRAGMENT} (JSON members: Env, Entrypoint, Cmd, User…), named by every
# name of the space-separated NAMES: index.json has one entry per name, all pointing at the same
# manifest, each annotated with io.containerd.image.name (what `ctr images import` names it by).
# Deterministic: the same layers and fragment give the same digests. Prints the manifest digest.
oci_archive() {
  local outfile=$1 arch=$2 fragment=$3 names=$4
  shift 4
  local layout
  layout=$(mktemp -d "$outfile.layout.XXXXXX")
  mkdir -p "$layout/blobs/sha256"
  local layer digest diff_ids="" layers_json="" sep=""
  for layer in "$@"; do
    digest=$(sha256sum "$layer" | cut -d' ' -f1)
    [[ -e $layout/blobs/sha256/$digest ]] || cp "$layer" "$layout/blobs/sha256/$digest"
    # Uncompressed layers: digest and diff_id are the same.
    diff_ids+="$sep\"sha256:$digest\""
    layers_json+="$sep{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"sha256:$digest\",\"size\":$(stat -c %s "$layer")}"
    sep=,
  done
  local blob=$layout/blob.json config_digest config_size manifest_digest manifest_size
  printf '{"architecture":"%s","os":"linux","config":{%s},"rootfs":{"type":"layers","diff_ids":[%s]},"history":[{"created_by":"statelet scripts/containerd"}]}' \
    "$arch" "$fragment" "$diff_ids" >"$blob"
  read -r config_digest config_size < <(store_blob "$layout" "$blob")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' \
    "$config_digest" "$config_size" "$layers_json" >"$blob"
  read -r manifest_digest manifest_size < <(store_blob "$layout" "$blob")
  local name entries="" sep=""
  for name in $names; do
    entries+="$sep{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:$manifest_digest\",\"size\":$manifest_size,\"platform\":{\"architecture\":\"$arch\",\"os\":\"linux\"},\"annotations\":{\"io.containerd.image.name\":\"$name\",\"org.opencontainers.image.ref.name\":\"$name\"}}"
    sep=,
  done
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' "$entries" >"$layout/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
  find "$layout" -type d -exec chmod 0755 {} + && find "$layout" -type f -exec chmod 0644 {} +
  det_tar -C "$layout" -cf "$outfile.tmp" oci-layout index.json blobs
  mv "$outfile.tmp" "$outfile"
  rm -rf "$layout"
  echo "sha256:$manifest_digest"
}

# import_archive SOCK FILE NAME...: `ctr images import` of FILE into namespace k8s.io at SOCK,
# which must create the images NAME... (named by the archive's annotations). containerd 1.6 can
# lose a blob to its garbage collector between writing it and creating the image ("content
# digest …: not found"): a failed import is undone and tried again, 3 times in all.
import_archive() {
  local sock=$1 file=$2 attempt
  shift 2
  for attempt in 1 2 3; do
    if ctr -a "$sock" -n k8s.io images import "$file" >&2 &&
       [[ $(ctr -a "$sock" -n k8s.io images ls -q | grep -cxF -f <(printf '%s\n' "$@")) -eq $# ]]; then
      return 0
    fi
    echo "import of $file failed (attempt $attempt); removing $* and trying again" >&2
    # An image left pointing at a lost blob makes every later import fail the same way.
    ctr -a "$sock" -n k8s.io images rm --sync "$@" >&2 || true
  done
  return 1
}
