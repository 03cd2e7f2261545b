# Shared by up.sh and restart.sh (sourced): waiting for a just-started containerd to serve.

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
