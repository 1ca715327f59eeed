#!/usr/bin/env bash
# Tests of vg-bootstrap.sh without disks or a cluster: its functions run against fake devices (a
# temporary by-id directory of symlinks) and PATH stubs for lvm, blkid, nsenter and curl that
# answer from fixture files and record every call. `make test-vg-bootstrap` runs it; it needs
# bash, jq and coreutils.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

failures=0
pass_count=0
check() { # check NAME WANT GOT
	if [[ "$2" == "$3" ]]; then
		pass_count=$((pass_count + 1))
	else
		failures=$((failures + 1))
		printf 'FAIL %s\n  want: %q\n  got:  %q\n' "$1" "$2" "$3" >&2
	fi
}

# Fake devices: nvme0n2..nvme0n4 behind GKE's by-id names, plus a partition link to ignore.
mkdir -p "$WORK/dev/by-id" "$WORK/bin" "$WORK/fixtures"
for n in 2 3 4; do : >"$WORK/dev/nvme0n$n"; done
ln -s ../nvme0n2 "$WORK/dev/by-id/google-local-nvme-ssd-0"
ln -s ../nvme0n3 "$WORK/dev/by-id/google-local-nvme-ssd-1"
ln -s ../nvme0n4 "$WORK/dev/by-id/google-local-nvme-ssd-2"
ln -s ../nvme0n4 "$WORK/dev/by-id/google-local-nvme-ssd-2-part1"
D="$WORK/dev"

# Stubs. lvm answers pvs/vgs from fixtures and records writes; blkid answers from a
# "device TYPE" list; nsenter fails (no host lvm: container mode); curl records the request and
# answers GETs with the Node fixture.
cat >"$WORK/bin/lvm" <<'EOF'
#!/usr/bin/env bash
echo "lvm $*" >>"$FIX/calls"
case "$1" in
pvs) cat "$FIX/pvs" ;;
vgs) cat "$FIX/vgs" ;;
pvcreate) ;;
vgcreate) printf "  %s|%s\n" "$6" "$5" >>"$FIX/vgs" ;; # the new VG is listed from now on
lvs) cat "$FIX/lvs" ;;
lvcreate) # --config C --type thin-pool -l N%VG -n NAME VG: the pool is listed from now on
	[[ -e "$FIX/lvcreate-fails" ]] && exit 5
	printf "  %s|thin,pool\n" "$9" >>"$FIX/lvs" ;;
esac
EOF
cat >"$WORK/bin/blkid" <<'EOF'
#!/usr/bin/env bash
dev="${!#}"
type=$(awk -v d="$dev" '$1 == d {print $2}' "$FIX/signatures")
[[ -n "$type" ]] || exit 2
echo "DEVNAME=$dev"
echo "TYPE=$type"
EOF
cat >"$WORK/bin/nsenter" <<'EOF'
#!/usr/bin/env bash
exit 1
EOF
cat >"$WORK/bin/curl" <<'EOF'
#!/usr/bin/env bash
method="" body="" url="${!#}"
while (($#)); do
	case "$1" in
	-X) method=$2; shift ;;
	--data-binary) body=$2; shift ;;
	esac
	shift
done
echo "$method $url $body" >>"$FIX/calls"
[[ "$method" == GET ]] && cat "$FIX/node.json"
exit 0
EOF
chmod +x "$WORK/bin/"*
export FIX="$WORK/fixtures" PATH="$WORK/bin:$PATH"

# shellcheck source=vg-bootstrap.sh
. "$HERE/vg-bootstrap.sh"
set +e # the sourced script sets -e; checks compare outputs instead
DEVICE_GLOB="$D/by-id/google-local-nvme-ssd-*"
LVM_MODE=container
NODE_NAME="node-1"
SA_DIR="$WORK/sa"
mkdir -p "$SA_DIR"
echo token >"$SA_DIR/token"
: >"$SA_DIR/ca.crt"

fixtures() { # fixtures PVS VGS SIGNATURES NODE_JSON
	printf '%s' "$1" >"$FIX/pvs"
	printf '%s' "$2" >"$FIX/vgs"
	printf '%s' "$3" >"$FIX/signatures"
	printf '%s' "$4" >"$FIX/node.json"
	: >"$FIX/calls"
	: >"$FIX/lvs"
	rm -f "$FIX/lvcreate-fails"
	REPORTED=()
}

# --- device selection
check "local_ssds resolves links, drops partitions, sorts" \
	"$D/nvme0n2 $D/nvme0n3 $D/nvme0n4" "$(local_ssds | tr '\n' ' ' | sed 's/ $//')"
check "local_ssds with no devices" "" "$(DEVICE_GLOB="$D/by-id/none-*" local_ssds)"

# --- classification
fixtures "" "" "$D/nvme0n4 xfs" ""
table="$D/nvme0n2|vg-ssd|olapgke_vg_bootstrap
$D/nvme0n3|data|
/dev/other||"
check "classify: PV of our VG" ours "$(classify "$D/nvme0n2" "$table")"
check "classify: PV of another VG" foreign-pv:data "$(classify "$D/nvme0n3" "$table")"
check "classify: orphan PV" foreign-pv:- "$(classify /dev/other "$table")"
check "classify: filesystem signature" foreign:xfs "$(classify "$D/nvme0n4" "$table")"
fixtures "" "" "" ""
check "classify: empty device" empty "$(classify "$D/nvme0n4" "")"

# --- volume-group state
check "vg_state absent" absent "$(vg_state "data|")"
check "vg_state created (our tag)" created "$(vg_state "vg-ssd|x,olapgke_vg_bootstrap")"
check "vg_state adopted (someone else's)" adopted "$(vg_state "vg-ssd|")"

# --- decisions
check "decide: absent, two empty" "create $D/a $D/b" "$(decide absent <<<"$D/a empty
$D/x foreign:xfs
$D/b empty")"
check "decide: absent, nothing empty" "blocked no empty Local SSD matches $DEVICE_GLOB" "$(decide absent <<<"$D/x foreign-pv:data")"
check "decide: absent, no devices" "blocked no empty Local SSD matches $DEVICE_GLOB" "$(decide absent <<<"")"
check "decide: created" ready "$(decide created <<<"$D/a ours")"
check "decide: adopted VG is used, never changed" ready "$(decide adopted <<<"$D/a foreign-pv:x")"

# --- taint patch
node='{"metadata":{"uid":"u1","annotations":{}},"spec":{"taints":[{"key":"a","effect":"NoSchedule"},{"key":"olapgke.io/storage-not-ready","value":"true","effect":"NoSchedule"}]}}'
check "taint_index finds the startup taint" 1 "$(taint_index "$node" olapgke.io/storage-not-ready)"
check "taint_index without taints" "" "$(taint_index '{"spec":{}}' olapgke.io/storage-not-ready)"
check "remove_taint_patch tests before removing" \
	'[{"op":"test","path":"/spec/taints/1/key","value":"k"},{"op":"remove","path":"/spec/taints/1"}]' \
	"$(remove_taint_patch 1 k)"

# --- a whole pass on a fresh node: two empty Local SSDs and one with a filesystem
fixtures "" "" "$D/nvme0n4 xfs" "$node"
pass 2>"$WORK/log"
rc=$?
calls=$(cat "$FIX/calls")
check "fresh node: pass succeeds" 0 "$rc"
check "fresh node: pvcreate on the empty devices only" 1 "$(grep -c "^lvm pvcreate --config .* $D/nvme0n2 $D/nvme0n3$" <<<"$calls")"
check "fresh node: vgcreate tagged" 1 "$(grep -c "^lvm vgcreate --config .* --addtag olapgke_vg_bootstrap vg-ssd $D/nvme0n2 $D/nvme0n3$" <<<"$calls")"
check "fresh node: the foreign device is never written" 0 "$(grep -c "^lvm \(pvcreate\|vgcreate\|vgextend\).*nvme0n4" <<<"$calls")"
check "fresh node: a Warning Event for the foreign device" 1 "$(grep -c 'POST .*/events .*"reason":"LocalSSDSkipped".*nvme0n4' <<<"$calls")"
check "fresh node: taint removed by a tested JSON patch" 1 "$(grep -c 'PATCH .*/api/v1/nodes/node-1 \[{"op":"test","path":"/spec/taints/1/key"' <<<"$calls")"
check "fresh node: annotation written" 1 "$(grep -c 'PATCH .*/api/v1/nodes/node-1 {"metadata":{"annotations":{"olapgke.io/volume-group":"vg-ssd created .* on '"$D"'/nvme0n2,'"$D"'/nvme0n3"}}}' <<<"$calls")"
check "fresh node: logged" 1 "$(grep -c 'creating volume group vg-ssd' "$WORK/log")"

# The stubbed vgcreate recorded the new VG: make it the live state. The next pass (same Pod, or
# a restarted one) finds the VG, the taint gone and the annotation written: it writes nothing.
done_node='{"metadata":{"uid":"u1","annotations":{"olapgke.io/volume-group":"vg-ssd created 2026-01-01T00:00:00Z on x"}},"spec":{"taints":[{"key":"a","effect":"NoSchedule"}]}}'
fixtures "$D/nvme0n2|vg-ssd|olapgke_vg_bootstrap
$D/nvme0n3|vg-ssd|olapgke_vg_bootstrap" "vg-ssd|olapgke_vg_bootstrap" "$D/nvme0n4 xfs" "$done_node"
pass 2>/dev/null
rc=$?
calls=$(cat "$FIX/calls")
check "second pass: succeeds" 0 "$rc"
check "second pass: no LVM writes" 0 "$(grep -c '^lvm \(pvcreate\|vgcreate\)' <<<"$calls")"
check "second pass: no Node patch" 0 "$(grep -c '^PATCH' <<<"$calls")"

# After a VM recreation the disks are empty again and the startup taint is back: same as fresh.
fixtures "" "" "" "$node"
pass 2>/dev/null
check "recreated VM: the volume group is created again" 1 "$(grep -c "^lvm vgcreate .* vg-ssd $D/nvme0n2 $D/nvme0n3 $D/nvme0n4$" "$FIX/calls")"

# A VM recreated under the same name: the Node keeps the old annotation (and no startup taint),
# the disks are empty. The group is created again and the annotation rewritten.
fixtures "" "" "" "$done_node"
pass 2>/dev/null
check "recreated VM, same Node: the volume group is created again" 1 "$(grep -c "^lvm vgcreate .* vg-ssd $D/nvme0n2 $D/nvme0n3 $D/nvme0n4$" "$FIX/calls")"
check "recreated VM, same Node: the annotation is rewritten" 1 "$(grep -c 'PATCH .*/api/v1/nodes/node-1 {"metadata":{"annotations":{"olapgke.io/volume-group":"vg-ssd created .* on '"$D"'/nvme0n2,'"$D"'/nvme0n3,'"$D"'/nvme0n4"}}}' "$FIX/calls")"
check "recreated VM, same Node: no taint patch (none to remove)" 0 "$(grep -c 'PATCH .*\[{"op":"test"' "$FIX/calls")"

# A node whose every Local SSD holds someone else's VG: nothing written, taint kept, non-zero.
fixtures "$D/nvme0n2|data|
$D/nvme0n3|data|
$D/nvme0n4|data|" "data|" "" "$node"
pass 2>/dev/null
rc=$?
check "all foreign: pass fails" 1 "$rc"
check "all foreign: no LVM writes" 0 "$(grep -c '^lvm \(pvcreate\|vgcreate\)' "$FIX/calls")"
check "all foreign: no Node patch" 0 "$(grep -c '^PATCH' "$FIX/calls")"
check "all foreign: Warning Event" 1 "$(grep -c '"reason":"VolumeGroupNotCreated"' "$FIX/calls")"

# --- thin pools (THIN_POOLS): lvmd exits "Thin pool not found" without them
THIN_POOLS="pool0:50, pool1:20"
check "missing_pools: those the table lacks, with their percent" "pool0 50" "$(missing_pools "pool1")"
check "missing_pools: none missing" "" "$(missing_pools "pool0
pool1")"
check "thin_pool_table: pools only, sorted" "a
b" "$(printf '  b|thin,pool\n  t|thin,sparse\n  a|thin,pool\n  x|linear\n' >"$FIX/lvs"; thin_pool_table)"

# Our volume group without its pools: both created (a share of the group each), the annotation
# lists them, and a pass with them in place writes nothing.
THIN_POOLS="pool0:50"
ours="$D/nvme0n2|vg-ssd|olapgke_vg_bootstrap"
fixtures "$ours" "vg-ssd|olapgke_vg_bootstrap" "" "$node"
pass 2>/dev/null
rc=$?
calls=$(cat "$FIX/calls")
check "thin pool: pass succeeds" 0 "$rc"
check "thin pool: lvcreate of the pool" 1 "$(grep -c "^lvm lvcreate --config .* --type thin-pool -l 50%VG -n pool0 vg-ssd$" <<<"$calls")"
check "thin pool: ThinPoolCreated Event" 1 "$(grep -c '"reason":"ThinPoolCreated"' <<<"$calls")"
check "thin pool: the pools annotation" 1 "$(grep -c 'PATCH .*/api/v1/nodes/node-1 {"metadata":{"annotations":{"olapgke.io/thin-pools":"pool0"}}}' <<<"$calls")"
check "thin pool: taint removed after the pool exists" 1 "$(grep -c 'PATCH .*\[{"op":"test"' <<<"$calls")"
pooled='{"metadata":{"uid":"u1","annotations":{"olapgke.io/volume-group":"vg-ssd created 2026-01-01T00:00:00Z on x","olapgke.io/thin-pools":"pool0"}},"spec":{}}'
fixtures "$ours" "vg-ssd|olapgke_vg_bootstrap" "" "$pooled"
echo "  pool0|thin,pool" >"$FIX/lvs"
pass 2>/dev/null
check "thin pool present: no lvcreate" 0 "$(grep -c '^lvm lvcreate' "$FIX/calls")"
check "thin pool present: no Node patch" 0 "$(grep -c '^PATCH' "$FIX/calls")"

# lvcreate fails (the group lacks the free space): the taint stays and the pass fails.
fixtures "$ours" "vg-ssd|olapgke_vg_bootstrap" "" "$node"
: >"$FIX/lvcreate-fails"
pass 2>/dev/null
rc=$?
check "thin pool not created: pass fails" 1 "$rc"
check "thin pool not created: Warning Event" 1 "$(grep -c '"reason":"ThinPoolNotCreated"' "$FIX/calls")"
check "thin pool not created: taint kept" 0 "$(grep -c '^PATCH' "$FIX/calls")"

# An adopted volume group (not ours) is never changed: no pool made, the node stays tainted.
fixtures "$D/nvme0n2|vg-ssd|" "vg-ssd|" "" "$node"
pass 2>/dev/null
rc=$?
check "adopted group without the pool: pass fails" 1 "$rc"
check "adopted group without the pool: no lvcreate" 0 "$(grep -c '^lvm lvcreate' "$FIX/calls")"
check "adopted group without the pool: Warning Event" 1 "$(grep -c '"reason":"ThinPoolNotCreated".*adopted' "$FIX/calls")"
check "adopted group without the pool: taint kept" 0 "$(grep -c '^PATCH' "$FIX/calls")"
fixtures "$D/nvme0n2|vg-ssd|" "vg-ssd|" "" "$node"
echo "  pool0|thin,pool" >"$FIX/lvs"
pass 2>/dev/null
check "adopted group with the pool: ready" 1 "$(grep -c 'PATCH .*\[{"op":"test"' "$FIX/calls")"
THIN_POOLS=""

echo "vg-bootstrap_test.sh: $pass_count passed, $failures failed"
((failures == 0))
