#!/usr/bin/env bash
# Measures olapgke-sandbox start-to-ready time and peak RSS for worlds with one
# big node pool, and writes a Markdown table to RESULTS.md next to this script.
#
#   internal/sandbox/bench/startup.sh [NODES...]      (default: 50 500)
#
# Uses $OLAPGKE_SANDBOX_BIN or <repo>/.bin/olapgke-sandbox (build it first:
# cd internal/sandbox && go build -o ../../.bin/olapgke-sandbox ./cmd/olapgke-sandbox).
# "ready" is the moment DIR/ready appears (all nodes Ready, TopoLVM labels set).
# Peak RSS is the kernel's VmHWM of the process, read at ready and again after
# SETTLE seconds of idling (default 20) with all simulated nodes heartbeating.
# TOPOLVM=real measures `up --topolvm real` (the sandbox's default; world without
# Local SSDs, so no node agents); default sim, the control plane and KWOK alone.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
bin="${OLAPGKE_SANDBOX_BIN:-$repo/.bin/olapgke-sandbox}"
settle="${SETTLE:-20}"
runs="${RUNS:-1}"
[ -x "$bin" ] || { echo "no sandbox binary at $bin" >&2; exit 1; }
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(50 500)

now_ms() { date +%s%3N; }
hwm_mib() { awk '/VmHWM/ {printf "%d", $2/1024}' "/proc/$1/status"; }

rows=()
for n in "${sizes[@]}"; do
  for r in $(seq 1 "$runs"); do
    dir="$(mktemp -d /tmp/olapgke-bench-XXXXXX)"
    cat > "$dir/world.yaml" <<YAML
clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
    nodeCount: $n
YAML
    load_before="$(cut -d' ' -f1 /proc/loadavg)"
    t0="$(now_ms)"
    "$bin" up --topolvm "${TOPOLVM:-sim}" --state-dir "$dir/state" --config "$dir/world.yaml" > "$dir/out" 2>&1 &
    pid=$!
    while [ ! -f "$dir/state/ready" ]; do
      if ! kill -0 "$pid" 2>/dev/null; then
        echo "sandbox exited before ready; see $dir" >&2; cat "$dir/out" >&2; exit 1
      fi
      if [ $(( $(now_ms) - t0 )) -gt 300000 ]; then echo "not ready after 300s; see $dir" >&2; kill "$pid"; exit 1; fi
      sleep 0.05
    done
    t1="$(now_ms)"
    hwm_ready="$(hwm_mib "$pid")"
    cpu_ready="$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14+$15)/hz}' "/proc/$pid/stat")"
    nodes="$(KUBECONFIG="$dir/state/kubeconfig" kubectl get nodes --no-headers 2>/dev/null | grep -c ' Ready ' || true)"
    sleep "$settle"  # idle window on purpose: RSS under steady heartbeats
    hwm_settled="$(hwm_mib "$pid")"
    rss_settled="$(awk '/VmRSS/ {printf "%d", $2/1024}' "/proc/$pid/status")"
    kill -TERM "$pid"; wait "$pid" || true
    secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", (b-a)/1000}')"
    echo "nodes=$n run=$r ready_s=$secs cpu_s=$cpu_ready ready_nodes=$nodes peak_rss_ready_mib=$hwm_ready peak_rss_${settle}s_mib=$hwm_settled rss_${settle}s_mib=$rss_settled load1=$load_before"
    rows+=("| $n | $r | $secs | $cpu_ready | $nodes | $hwm_ready | $hwm_settled | $rss_settled | $load_before |")
    rm -rf "$dir"
  done
done

{
  echo "# olapgke-sandbox startup benchmark"
  echo
  echo "Written by \`internal/sandbox/bench/startup.sh\` on $(date -u +%Y-%m-%dT%H:%MZ)."
  echo "Machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)."
  echo "Binary: $("$bin" version | head -1); $("$bin" version | grep k8s.io/kubernetes | xargs)."
  echo "Targets (issue 3): start to ready < 10 s and RSS < 1 GiB with 500 simulated nodes."
  echo "CPU time (user+sys of the sandbox process until ready) is given because wall time depends"
  echo "on what else the machine runs: with C cores free, wall time is at least CPU time / C."
  echo
  echo "| nodes | run | start to ready (s) | CPU time to ready (s) | Ready nodes | peak RSS at ready (MiB) | peak RSS after ${settle}s (MiB) | RSS after ${settle}s (MiB) | 1-min load before start |"
  echo "|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} > "$here/RESULTS.md"
echo "wrote $here/RESULTS.md"
