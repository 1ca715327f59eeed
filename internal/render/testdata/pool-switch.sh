#!/usr/bin/env bash
# Re-records testdata/pool-switch.plan.json: the plan JSON of the demo's pool switch
# (examples/quickstart/demo.sh steps 1 and 3). It starts a sandbox, applies examples/quickstart,
# plans active_pool = "b" to a plan file and writes `terraform show -json` of it. Then run
# `go test ./internal/render/ -update` and review the golden diff.
# Usage: internal/render/testdata/pool-switch.sh PROVIDER_BIN_DIR SANDBOX_BIN
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
PROVIDER_BIN_DIR=$1 SANDBOX_BIN=$2
SANDBOX_READY_TIMEOUT=${SANDBOX_READY_TIMEOUT:-300}
WORK="$ROOT/.cache/render-plan" # two levels below ROOT, like examples/quickstart (module source)
# shellcheck source=../../../examples/quickstart/sandbox.sh
. "$ROOT/examples/quickstart/sandbox.sh"
rm -rf "$WORK" && mkdir -p "$WORK"
write_dev_tfrc "$WORK/dev.tfrc" "$PROVIDER_BIN_DIR"
export TF_CLI_CONFIG_FILE="$WORK/dev.tfrc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
cp "$ROOT/examples/quickstart/main.tf" "$WORK/"
sandbox_start "$SANDBOX_BIN" "$ROOT/.cache/render-plan-sandbox"
tf() { terraform -chdir="$WORK" "$@" -no-color; }
tf get >/dev/null
tf apply -auto-approve -input=false >"$WORK/apply.log" 2>&1 || tf apply -auto-approve -input=false >"$WORK/apply.log" 2>&1
tf plan -input=false -var active_pool=b -out=move.tfplan >"$WORK/plan.log" 2>&1
tf show -json move.tfplan | python3 -m json.tool --indent 1 >"$ROOT/internal/render/testdata/pool-switch.plan.json"
echo "wrote internal/render/testdata/pool-switch.plan.json"
