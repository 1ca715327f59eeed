#!/usr/bin/env bash
# Runs the module's `terraform test` suites with the freshly built provider (dev_overrides; no
# registry, no init):
#   run.sh mock      fast suite in tests/ (mock_provider, no cluster)
#   run.sh sandbox   tests/sandbox/ applied on a fresh local sandbox (started and stopped here)
#   run.sh           both
# PROVIDER_BIN_DIR (default .bin) holds terraform-provider-olapgke; SANDBOX_BIN the sandbox.
set -euo pipefail

MODULE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$(cd "$MODULE/../.." && pwd)"
PROVIDER_BIN_DIR="${PROVIDER_BIN_DIR:-$ROOT/.bin}"
SANDBOX_BIN="${SANDBOX_BIN:-$ROOT/.bin/olapgke-sandbox}"
WORK="$ROOT/.cache/module-test"
what="${1:-all}"

command -v "${TERRAFORM:-terraform}" >/dev/null || { echo "ERROR: ${TERRAFORM:-terraform} is not on PATH (it is never downloaded)" >&2; exit 1; }
[[ -x "$PROVIDER_BIN_DIR/terraform-provider-olapgke" ]] || { echo "ERROR: no provider in $PROVIDER_BIN_DIR: run make build" >&2; exit 1; }

# shellcheck source=../../../examples/quickstart/sandbox.sh
. "$ROOT/examples/quickstart/sandbox.sh"
rm -rf "$WORK/tfdata"
mkdir -p "$WORK"
write_dev_tfrc "$WORK/dev.tfrc" "$PROVIDER_BIN_DIR"
export TF_CLI_CONFIG_FILE="$WORK/dev.tfrc" TF_DATA_DIR="$WORK/tfdata" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1

case "$what" in
mock | all)
	echo "==> terraform test (mock_provider): modules/olap-historical/tests"
	"$TERRAFORM" -chdir="$MODULE" test -no-color
	;;&
sandbox | all)
	echo "==> terraform test on a fresh sandbox: modules/olap-historical/tests/sandbox"
	# TopoLVM's own code (the sandbox's default) publishes capacity freed by deleted volumes at
	# external-provisioner's next poll (1 min by default, as on GKE); the suite reuses capacity
	# within seconds, so its sandbox polls every 2 s, as the acceptance harness's do.
	export OLAPGKE_SANDBOX_CAPACITY_POLL="${OLAPGKE_SANDBOX_CAPACITY_POLL:-2s}"
	sandbox_start "$SANDBOX_BIN" "$WORK/sandbox"
	"$TERRAFORM" -chdir="$MODULE" test -test-directory=tests/sandbox -no-color
	;;
mock) ;;
*)
	echo "usage: $0 [mock|sandbox|all]" >&2
	exit 2
	;;
esac
