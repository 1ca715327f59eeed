#!/usr/bin/env bash
# olapgke volume-group bootstrap for GKE Local-SSD node pools (raw block, local_nvme_ssd_count).
#
# Runs in a privileged DaemonSet Pod on every node labelled cloud.google.com/gke-local-nvme-ssd=true
# (vg-bootstrap.yaml). On each pass it:
#   1. finds the raw-block Local SSDs the way GKE exposes them, /dev/disk/by-id/google-local-nvme-ssd-N
#      (partition links -partN are ignored);
#   2. classifies each one: in our volume group, in another volume group or an orphan LVM PV,
#      carrying any other signature (filesystem, RAID member, partition table), or empty;
#   3. creates the volume group $VG_NAME from the empty devices when it does not exist (also after
#      GKE recreated the VM: its Local SSDs come back empty), tagged $VG_TAG so later passes know
#      it is ours; devices holding anything else are never touched (a Warning Event and a log line);
#   4. creates each thin pool of $THIN_POOLS the volume group lacks (lvcreate --type thin-pool,
#      a share of the group's size): lvmd exits "Thin pool not found" at start when a thin device
#      class names a pool its volume group does not have, and TopoLVM creates none;
#   5. only when the volume group and its thin pools exist, removes the startup taint
#      $STARTUP_TAINT_KEY from its own Node and writes the annotations $ANNOTATION_KEY saying
#      what it did and $THIN_POOLS_ANNOTATION_KEY listing the group's thin pools;
#   6. sleeps $RECHECK_SECONDS and starts again (idempotent: a pass with nothing to do changes
#      nothing and emits no Event).
#
# Environment (defaults in brackets):
#   NODE_NAME            this Pod's node (downward API spec.nodeName) [required outside tests]
#   VG_NAME              volume group = the device class's volume_group [vg-ssd]
#   VG_TAG               LVM tag marking a volume group this script created [olapgke_vg_bootstrap]
#   DEVICE_GLOB          Local SSD device links [/dev/disk/by-id/google-local-nvme-ssd-*]
#   STARTUP_TAINT_KEY    taint removed once the VG exists [olapgke.io/storage-not-ready]
#   ANNOTATION_KEY       Node annotation written [olapgke.io/volume-group]
#   THIN_POOLS           thin pools to create in the group, "name:percent" comma-separated, each
#                        percent of the group's size (lvcreate -l N%VG) [none]
#   THIN_POOLS_ANNOTATION_KEY  Node annotation listing the group's thin pools, "name,name"
#                        (written when it changes) [olapgke.io/thin-pools]
#   LVM_MODE             auto | host | container [auto]: host runs the node's /sbin/lvm through
#                        nsenter into PID 1's namespaces, exactly as TopoLVM's lvmd does (shared lock
#                        directory and lvm.conf); container runs this image's lvm with udev sync off;
#                        auto picks host when the node has /sbin/lvm
#   RECHECK_SECONDS      seconds between passes [60]
#   KUBE_API             API server [https://kubernetes.default.svc]
#   SA_DIR               ServiceAccount token and CA [/var/run/secrets/kubernetes.io/serviceaccount]
#   EVENT_NAMESPACE      namespace of Events about the Node (cluster-scoped objects use default) [default]
#   ONCE=1               run one pass and exit with its status (debugging, tests)
#
# Source it to use the functions without running main (vg-bootstrap_test.sh does).
set -euo pipefail

VG_NAME="${VG_NAME:-vg-ssd}"
VG_TAG="${VG_TAG:-olapgke_vg_bootstrap}"
DEVICE_GLOB="${DEVICE_GLOB:-/dev/disk/by-id/google-local-nvme-ssd-*}"
STARTUP_TAINT_KEY="${STARTUP_TAINT_KEY:-olapgke.io/storage-not-ready}"
ANNOTATION_KEY="${ANNOTATION_KEY:-olapgke.io/volume-group}"
THIN_POOLS="${THIN_POOLS:-}"
THIN_POOLS_ANNOTATION_KEY="${THIN_POOLS_ANNOTATION_KEY:-olapgke.io/thin-pools}"
LVM_MODE="${LVM_MODE:-auto}"
RECHECK_SECONDS="${RECHECK_SECONDS:-60}"
KUBE_API="${KUBE_API:-https://kubernetes.default.svc}"
SA_DIR="${SA_DIR:-/var/run/secrets/kubernetes.io/serviceaccount}"
EVENT_NAMESPACE="${EVENT_NAMESPACE:-default}"
COMPONENT="olapgke-vg-bootstrap"

# lvm in a container has no udev: waiting for udev cookies would hang vgcreate.
LVM_CONTAINER_CONFIG='activation { udev_sync = 0 udev_rules = 0 } devices { obtain_device_list_from_udev = 0 }'

log() { printf '%s %s node=%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$COMPONENT" "${NODE_NAME:-?}" "$*" >&2; }

# ---------------------------------------------------------------------------------------------
# LVM and device probing (the only commands that read the disks; stubbed by the tests).

# lvm_cmd SUBCOMMAND ARGS...: runs lvm in the mode chosen by LVM_MODE.
lvm_cmd() {
	local sub=$1
	shift
	case "$(lvm_mode)" in
	host) nsenter -m -u -i -n -p -t 1 /sbin/lvm "$sub" "$@" ;;
	*) lvm "$sub" --config "$LVM_CONTAINER_CONFIG" "$@" ;;
	esac
}

lvm_mode() {
	case "$LVM_MODE" in
	host | container) echo "$LVM_MODE" ;;
	*)
		if nsenter -m -t 1 test -x /sbin/lvm 2>/dev/null; then echo host; else echo container; fi
		;;
	esac
}

# pv_table: "pv_name|vg_name|vg_tags" per PV, spaces trimmed.
pv_table() {
	lvm_cmd pvs --noheadings --separator '|' -o pv_name,vg_name,vg_tags 2>/dev/null | sed 's/^[[:space:]]*//; s/[[:space:]]*$//'
}

# vg_table: "vg_name|vg_tags" per VG.
vg_table() {
	lvm_cmd vgs --noheadings --separator '|' -o vg_name,vg_tags 2>/dev/null | sed 's/^[[:space:]]*//; s/[[:space:]]*$//'
}

# thin_pool_table: the thin pools of $VG_NAME, one name per line (lv_layout "thin,pool").
thin_pool_table() {
	lvm_cmd lvs --noheadings --separator '|' -o lv_name,lv_layout "$VG_NAME" 2>/dev/null |
		sed 's/^[[:space:]]*//; s/[[:space:]]*$//' | awk -F'|' '$2 == "thin,pool" {print $1}' | sort
}

# signature DEV: the first signature blkid's low-level probe finds (TYPE or PTTYPE), or nothing.
signature() {
	local out
	out=$(blkid -p -o export "$1" 2>/dev/null) || true
	printf '%s\n' "$out" | sed -n 's/^TYPE=//p; s/^PTTYPE=//p' | head -n 1
}

# ---------------------------------------------------------------------------------------------
# Pure decisions: text in, verdict out (no writes).

# local_ssds: the Local SSD devices, resolved to their kernel names, sorted and unique.
local_ssds() {
	local link
	for link in $DEVICE_GLOB; do
		[[ -e "$link" ]] || continue
		[[ "$link" =~ -part[0-9]+$ ]] && continue
		readlink -f "$link"
	done | sort -u
}

# classify DEV PV_TABLE: one of
#   ours           a PV of $VG_NAME
#   foreign-pv:VG  a PV of another volume group ("-" for an orphan PV)
#   foreign:TYPE   any other signature blkid finds (filesystem, RAID member, partition table)
#   empty          nothing on it
classify() {
	local dev=$1 table=$2 name vg _tags sig
	while IFS='|' read -r name vg _tags; do
		[[ -n "$name" && "$name" == "$dev" ]] || continue
		if [[ "$vg" == "$VG_NAME" ]]; then echo ours; else echo "foreign-pv:${vg:--}"; fi
		return 0
	done <<<"$table"
	sig=$(signature "$dev")
	if [[ -n "$sig" ]]; then echo "foreign:$sig"; else echo empty; fi
}

# vg_state VG_TABLE: "absent", "created" (exists with our tag) or "adopted" (exists, made by
# someone else: used as it is, never changed).
vg_state() {
	local name tags
	while IFS='|' read -r name tags; do
		[[ "$name" == "$VG_NAME" ]] || continue
		if [[ ",$tags," == *",$VG_TAG,"* ]]; then echo created; else echo adopted; fi
		return 0
	done <<<"$1"
	echo absent
}

# decide VG_STATE then lines "DEV VERDICT" on stdin: prints the action, one of
#   ready                  the volume group exists: remove the taint
#   create DEV...          create the volume group from these empty devices
#   blocked REASON         nothing usable: keep the taint
decide() {
	local state=$1 dev verdict empties=()
	while read -r dev verdict; do
		[[ -n "$dev" ]] || continue
		[[ "$verdict" == empty ]] && empties+=("$dev")
	done
	if [[ "$state" != absent ]]; then
		echo ready
	elif ((${#empties[@]} > 0)); then
		echo "create ${empties[*]}"
	else
		echo "blocked no empty Local SSD matches $DEVICE_GLOB"
	fi
}

# missing_pools POOL_TABLE: the "name percent" of each $THIN_POOLS entry not in POOL_TABLE.
missing_pools() {
	local entry name pct
	local IFS=,
	for entry in $THIN_POOLS; do
		entry="${entry// /}"
		[[ -n "$entry" ]] || continue
		name=${entry%%:*} pct=${entry#*:}
		grep -qxF -- "$name" <<<"$1" || echo "$name $pct"
	done
}

# taint_index NODE_JSON KEY: index of the taint with KEY in spec.taints, or nothing.
taint_index() {
	jq -r --arg k "$2" '(.spec.taints // []) | to_entries[] | select(.value.key == $k) | .key' <<<"$1" | head -n 1
}

# remove_taint_patch INDEX KEY: a JSON patch that removes the taint only if it is still at INDEX.
remove_taint_patch() {
	jq -cn --argjson i "$1" --arg k "$2" \
		'[{op: "test", path: "/spec/taints/\($i)/key", value: $k}, {op: "remove", path: "/spec/taints/\($i)"}]'
}

# annotation_value STATE DEVICES...: what the Node annotation says.
annotation_value() {
	local state=$1
	shift
	local devs="${*:-none}"
	printf '%s %s %s on %s' "$VG_NAME" "$state" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${devs// /,}"
}

# ---------------------------------------------------------------------------------------------
# Kubernetes API (curl with the ServiceAccount token).

kube() {
	local method=$1 path=$2 type=${3:-} body=${4:-}
	local args=(-sS --fail-with-body -X "$method" --cacert "$SA_DIR/ca.crt"
		-H "Authorization: Bearer $(cat "$SA_DIR/token")" -H "Accept: application/json")
	if [[ -n "$type" ]]; then args+=(-H "Content-Type: $type" --data-binary "$body"); fi
	curl "${args[@]}" "$KUBE_API$path"
}

# event TYPE REASON MESSAGE: a core/v1 Event about this Node.
event() {
	local type=$1 reason=$2 message=$3 now uid body
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	uid=$(kube GET "/api/v1/nodes/$NODE_NAME" | jq -r .metadata.uid) || uid=""
	body=$(jq -cn --arg node "$NODE_NAME" --arg uid "$uid" --arg type "$type" --arg reason "$reason" \
		--arg msg "$message" --arg now "$now" --arg comp "$COMPONENT" --arg ns "$EVENT_NAMESPACE" '{
		apiVersion: "v1", kind: "Event",
		metadata: {generateName: "\($node).vg-bootstrap.", namespace: $ns},
		involvedObject: {apiVersion: "v1", kind: "Node", name: $node, uid: $uid},
		type: $type, reason: $reason, message: $msg, count: 1,
		firstTimestamp: $now, lastTimestamp: $now,
		source: {component: $comp, host: $node}, reportingComponent: $comp, reportingInstance: $node}')
	kube POST "/api/v1/namespaces/$EVENT_NAMESPACE/events" application/json "$body" >/dev/null ||
		log "could not record Event $reason (continuing)"
}

# Events and log lines are emitted when what a pass found changes, not on every pass.
declare -A REPORTED=()
report() {
	local type=$1 reason=$2 message=$3 key="$1/$2/$3"
	[[ -n "${REPORTED[$key]:-}" ]] && return 0
	REPORTED[$key]=1
	log "$type $reason: $message"
	event "$type" "$reason" "$message"
}

# ensure_thin_pools STATE: creates the thin pools $THIN_POOLS lists that the group lacks, in a
# group this script created (an adopted one is never changed: a missing pool is reported).
# Returns non-zero when one is still missing (the node is not ready for a thin device class).
ensure_thin_pools() {
	local state=$1 name pct rc=0
	while read -r name pct; do
		[[ -n "$name" ]] || continue
		if [[ "$state" == adopted ]]; then
			report Warning ThinPoolNotCreated "volume group $VG_NAME was not created by $COMPONENT (adopted, never changed) and has no thin pool $name; taint $STARTUP_TAINT_KEY kept"
			rc=1
			continue
		fi
		if [[ ! "$pct" =~ ^[0-9]+$ ]] || ((pct < 1 || pct > 100)); then
			report Warning ThinPoolNotCreated "THIN_POOLS entry $name:$pct: the size must be a percent of the volume group (1-100)"
			rc=1
			continue
		fi
		log "creating thin pool $VG_NAME/$name ($pct% of the volume group)"
		if lvm_cmd lvcreate --type thin-pool -l "${pct}%VG" -n "$name" "$VG_NAME"; then
			report Normal ThinPoolCreated "created thin pool $VG_NAME/$name ($pct% of the volume group)"
		else
			report Warning ThinPoolNotCreated "lvcreate --type thin-pool -l ${pct}%VG -n $name $VG_NAME failed (see the Pod log; the group may lack free space); taint $STARTUP_TAINT_KEY kept"
			rc=1
		fi
	done < <(missing_pools "$(thin_pool_table)")
	return "$rc"
}

# untaint_and_annotate STATE FRESH DEVICES... (FRESH non-empty: this pass created the group)
untaint_and_annotate() {
	local state=$1 fresh=$2 node idx patch value pools
	shift 2
	node=$(kube GET "/api/v1/nodes/$NODE_NAME") || {
		log "reading Node $NODE_NAME failed; taint and annotation left for the next pass"
		return 1
	}
	idx=$(taint_index "$node" "$STARTUP_TAINT_KEY")
	if [[ -n "$idx" ]]; then
		patch=$(remove_taint_patch "$idx" "$STARTUP_TAINT_KEY")
		kube PATCH "/api/v1/nodes/$NODE_NAME" application/json-patch+json "$patch" >/dev/null || {
			log "removing taint $STARTUP_TAINT_KEY failed (changed meanwhile?); next pass retries"
			return 1
		}
		report Normal StartupTaintRemoved "volume group $VG_NAME is ready: removed taint $STARTUP_TAINT_KEY"
	fi
	# A volume group created by this pass is always recorded (after a VM recreation the Node
	# still carries the annotation of the group that went with the old disks).
	if [[ -n "$fresh" || "$(jq -r --arg k "$ANNOTATION_KEY" '.metadata.annotations[$k] // ""' <<<"$node")" != "$VG_NAME $state "* ]]; then
		value=$(annotation_value "$state" "$@")
		kube PATCH "/api/v1/nodes/$NODE_NAME" application/merge-patch+json \
			"$(jq -cn --arg k "$ANNOTATION_KEY" --arg v "$value" '{metadata: {annotations: {($k): $v}}}')" >/dev/null ||
			log "writing annotation $ANNOTATION_KEY failed; next pass retries"
	fi
	# The group's thin pools, whoever made them: what a thin device class may name here.
	pools=$(thin_pool_table | paste -sd, -)
	if [[ "$(jq -r --arg k "$THIN_POOLS_ANNOTATION_KEY" '.metadata.annotations[$k] // ""' <<<"$node")" != "$pools" ]]; then
		kube PATCH "/api/v1/nodes/$NODE_NAME" application/merge-patch+json \
			"$(jq -cn --arg k "$THIN_POOLS_ANNOTATION_KEY" --arg v "$pools" '{metadata: {annotations: {($k): $v}}}')" >/dev/null ||
			log "writing annotation $THIN_POOLS_ANNOTATION_KEY failed; next pass retries"
	fi
}

# ---------------------------------------------------------------------------------------------

# pass: one look at the disks and one action. Returns non-zero when the node is not ready.
pass() {
	local devs pvs vgs state verdicts="" dev verdict action devs_to_use
	devs=$(local_ssds)
	pvs=$(pv_table)
	vgs=$(vg_table)
	state=$(vg_state "$vgs")
	for dev in $devs; do
		verdict=$(classify "$dev" "$pvs")
		verdicts+="$dev $verdict"$'\n'
		case "$verdict" in
		foreign*)
			report Warning LocalSSDSkipped "$dev holds ${verdict#*:} (${verdict%%:*}), not created by $COMPONENT: left untouched"
			;;
		empty)
			[[ "$state" == absent ]] ||
				report Normal LocalSSDUnused "$dev is empty and not in volume group $VG_NAME (the script never extends a volume group)"
			;;
		esac
	done
	action=$(decide "$state" <<<"$verdicts")
	case "$action" in
	ready)
		ensure_thin_pools "$state" || return 1
		# shellcheck disable=SC2046 # one word per device
		untaint_and_annotate "$state" "" $(awk '$2 == "ours" {print $1}' <<<"$verdicts")
		;;
	create\ *)
		read -ra devs_to_use <<<"${action#create }"
		log "creating volume group $VG_NAME on ${devs_to_use[*]}"
		if ! lvm_cmd pvcreate "${devs_to_use[@]}" || ! lvm_cmd vgcreate --addtag "$VG_TAG" "$VG_NAME" "${devs_to_use[@]}"; then
			report Warning VolumeGroupNotCreated "pvcreate/vgcreate $VG_NAME on ${devs_to_use[*]} failed (see the Pod log); taint $STARTUP_TAINT_KEY kept"
			return 1
		fi
		if [[ "$(vg_state "$(vg_table)")" != created ]]; then
			report Warning VolumeGroupMissing "vgcreate $VG_NAME returned but the volume group is not listed"
			return 1
		fi
		report Normal VolumeGroupCreated "created volume group $VG_NAME on ${devs_to_use[*]}"
		ensure_thin_pools created || return 1
		untaint_and_annotate created fresh "${devs_to_use[@]}"
		;;
	blocked\ *)
		report Warning VolumeGroupNotCreated "${action#blocked }; taint $STARTUP_TAINT_KEY kept"
		return 1
		;;
	esac
}

main() {
	[[ -n "${NODE_NAME:-}" ]] || {
		log "NODE_NAME is not set (downward API spec.nodeName)"
		exit 2
	}
	log "start: volume group $VG_NAME, thin pools ${THIN_POOLS:-none}, devices $DEVICE_GLOB, lvm mode $(lvm_mode)"
	while true; do
		if [[ -n "${ONCE:-}" ]]; then
			pass
			return
		fi
		pass || log "node not ready; next pass in ${RECHECK_SECONDS}s"
		sleep "$RECHECK_SECONDS"
	done
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	main "$@"
fi
