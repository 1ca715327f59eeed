#!/usr/bin/env bash
# The olapgke demo (`make demo`): the incident refused at plan, then the safe migration, on the
# local sandbox. Steps:
#   1. start a fresh sandbox (state in .cache/demo/sandbox), stopped again on exit
#   2. apply examples/quickstart: node pools historical-a and historical-b, the TopoLVM device
#      class, a 3-replica StatefulSet on pool a (updateStrategy OnDelete) with Local SSD PVs
#   3. plan the incident's edit (pool a -> b under RollingUpdate): refused, per ordinal
#   4. plan and apply the safe move (active_pool = "b": OnDelete + olapgke_statefulset_migration),
#      with per-ordinal progress
#   5. print the final ordinal -> Pod -> node -> PV map
#   6. remove the old pool: the data-loss guard agrees, nothing is pinned to it any more
# Needs terraform (>= 1.9) on PATH and the binaries `make demo` builds. Nothing is downloaded:
# the provider comes from .bin/ through dev_overrides, the module from this checkout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PROVIDER_BIN_DIR="${PROVIDER_BIN_DIR:-$ROOT/.bin}"
SANDBOX_BIN="${SANDBOX_BIN:-$ROOT/.bin/olapgke-sandbox}"
# The working directory sits two levels below the repository root, like examples/quickstart, so
# the module source ../../modules/olap-historical resolves the same way.
DEMO_DIR="$ROOT/.cache/demo"
SANDBOX_DIR="$ROOT/.cache/demo-sandbox"

start=$(date +%s)
step() { printf '\n\033[1m==> [%3ds] %s\033[0m\n' "$(($(date +%s) - start))" "$*"; }
die() { echo "demo: ERROR: $*" >&2; exit 1; }

command -v "${TERRAFORM:-terraform}" >/dev/null || die "terraform is not on PATH. The demo runs the local terraform binary (>= 1.9) and never downloads it: install it (https://developer.hashicorp.com/terraform/install) and rerun make demo."
[[ -x "$PROVIDER_BIN_DIR/terraform-provider-olapgke" ]] || die "no provider binary in $PROVIDER_BIN_DIR: run make demo (it builds it) or make build."
[[ -x "$SANDBOX_BIN" ]] || die "no sandbox binary at $SANDBOX_BIN: run make demo (it builds it) or make sandbox-bin."

# shellcheck source=sandbox.sh
. "$ROOT/examples/quickstart/sandbox.sh"

# Terraform: the freshly built provider through dev_overrides, no registry, no init.
rm -rf "$DEMO_DIR"
mkdir -p "$DEMO_DIR"
write_dev_tfrc "$DEMO_DIR/dev.tfrc" "$PROVIDER_BIN_DIR"
export TF_CLI_CONFIG_FILE="$DEMO_DIR/dev.tfrc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
unset TF_LOG TF_LOG_PROVIDER TF_LOG_CORE
cp "$ROOT/examples/quickstart/main.tf" "$DEMO_DIR/"
tf() { "$TERRAFORM" -chdir="$DEMO_DIR" "$@" -no-color; }

# Drops terraform's "Provider development overrides are in effect" warning, printed by every
# command under dev_overrides.
quiet_overrides() {
	awk '/^(│ )?Warning: Provider development overrides are in effect/ { skip = 1 }
	     skip && /releases\.$/ { skip = 0; drop_blank = 1; next }
	     skip { next }
	     drop_blank && /^(│|╵)? *$/ { next }
	     { drop_blank = 0; print }'
}

# The migration logs one INFO line per step of each ordinal; keep just the message.
progress() {
	sed -u -n -E 's/^.*provider\.terraform-provider-olapgke: (ordinal .*|migrating .*): [@a-z_]+=.*$/    \1/p'
}

# tf_show PATTERN ARGS...: runs terraform, prints the output lines matching PATTERN (and every
# diagnostic in full when terraform fails), returns terraform's exit status.
tf_show() {
	local pattern=$1 rc log="$DEMO_DIR/last.log"
	shift
	set +e
	tf "$@" 2>&1 | tee "$log" | quiet_overrides | grep -E "$pattern"
	rc=${PIPESTATUS[0]}
	set -e
	if [[ $rc -ne 0 ]]; then
		quiet_overrides <"$log" | sed -n '/^Error: /,$p' >&2
	fi
	return "$rc"
}

on_exit() {
	local rc=$?
	sandbox_stop
	if [[ $rc -ne 0 ]]; then
		echo "demo: FAILED (exit $rc). Sandbox log: $SANDBOX_DIR/sandbox.log; terraform files: $DEMO_DIR" >&2
	fi
	exit $rc
}
trap 'exit 130' INT TERM

step "starting the sandbox (Kubernetes control plane, KWOK nodes, TopoLVM's own code, GKE emulator)"
sandbox_start "$SANDBOX_BIN" "$SANDBOX_DIR" || die "could not start the sandbox"
trap on_exit EXIT
echo "    ready: cluster $OLAPGKE_CLUSTER in $OLAPGKE_LOCATION (project $GOOGLE_PROJECT), GKE API at $OLAPGKE_CONTAINER_ENDPOINT"

step "1/5 apply examples/quickstart: pools a and b, TopoLVM device class, StatefulSet historical on pool a"
tf get >/dev/null
apply_pattern='(Creating|Creation complete|Importing|Import complete|Read complete)|^Apply complete|^(Error|Warning):'
if ! tf_show "$apply_pattern" apply -auto-approve -input=false; then
	# Seen once on a loaded machine right after start-up: "Kubernetes Client Unavailable". Terraform
	# converges, so one more apply is safe; a second failure is real.
	grep -q 'Error: Kubernetes Client Unavailable' "$DEMO_DIR/last.log" || die "terraform apply of the quickstart failed"
	echo "    the API server did not answer yet; applying once more"
	tf_show "$apply_pattern" apply -auto-approve -input=false || die "terraform apply of the quickstart failed (rerun it in $DEMO_DIR to see why)"
fi
tf output -raw ordinal_table
echo

step "2/5 the incident's edit: pool a -> b with updateStrategy RollingUpdate. olapgke refuses it at plan:"
set +e
tf plan -input=false -var active_pool=b -var 'spec_overrides={updateStrategy={type="RollingUpdate"}}' >"$DEMO_DIR/incident.txt" 2>&1
rc=$?
set -e
quiet_overrides <"$DEMO_DIR/incident.txt" | sed -n '/^\(Warning\|Error\): /,$p'
[[ $rc -ne 0 ]] || die "the incident's plan was expected to fail with \"Ordinals Would Stay Pending\" but succeeded"
grep -q 'Error: Ordinals Would Stay Pending' "$DEMO_DIR/incident.txt" || die "the incident's plan failed, but not with \"Ordinals Would Stay Pending\" (see $DEMO_DIR/incident.txt)"
echo "    -> plan refused (exit $rc): nothing was changed."

step "3/5 the safe move: active_pool = \"b\" (template switched under OnDelete + olapgke_statefulset_migration). Planned moves:"
tf plan -input=false -var active_pool=b -out=move.tfplan >"$DEMO_DIR/move-plan.txt" 2>&1 || { quiet_overrides <"$DEMO_DIR/move-plan.txt"; die "the move's plan failed"; }
awk '/# module.historical.olapgke_statefulset_migration.this will be/,/^    }$/' "$DEMO_DIR/move-plan.txt" |
	grep -E 'ordinal|from_node|reason|to_pool_or_selector' || true
grep -E '^Plan:' "$DEMO_DIR/move-plan.txt"

step "4/5 apply the move, one ordinal at a time (delete PVC, delete Pod, wait Ready on pool b):"
set +e
# The provider's log goes to stderr: keep the migration's lines, on the demo's own stdout (fd 3),
# not into the pipe below.
exec 3>&1
TF_LOG_PROVIDER=INFO tf apply -input=false move.tfplan 2> >(progress >&3) | quiet_overrides |
	grep -E '(Modifying|Modifications complete|Read complete)|^Apply complete|^(Error|Warning):'
rc=${PIPESTATUS[0]}
set -e
exec 3>&-
[[ $rc -eq 0 ]] || die "applying the move failed; rerun terraform apply -var active_pool=b in $DEMO_DIR: the migration resumes where it stopped"

step "5/5 final map, read back from the cluster (olapgke_statefulset_ordinals):"
tf output -raw ordinal_table
echo
if tf output -raw ordinal_table | grep -q -e historical-a -e 'NOT READY'; then
	die "an ordinal is still on pool a or not Ready after the move"
fi

step "removing pool a: the data-loss guard agrees (no PV is pinned to its nodes any more)"
tf_show '(Destroying|Destruction complete)|^Apply complete|^(Error|Warning):' \
	apply -auto-approve -input=false -var active_pool=b -var 'pools={b={}}' || die "removing pool a failed"

step "demo complete"
