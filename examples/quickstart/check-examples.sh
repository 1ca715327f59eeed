#!/usr/bin/env bash
# `terraform fmt -check` over examples/ and modules/, and `terraform validate` of every example
# configuration and of the module, against the freshly built provider's schema (dev_overrides;
# local modules are installed with `terraform get`, which needs no registry).
# PROVIDER_BIN_DIR (default .bin) holds terraform-provider-olapgke.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PROVIDER_BIN_DIR="${PROVIDER_BIN_DIR:-$ROOT/.bin}"
WORK="$ROOT/.cache/examples-check"

command -v "${TERRAFORM:-terraform}" >/dev/null || { echo "ERROR: ${TERRAFORM:-terraform} is not on PATH (it is never downloaded)" >&2; exit 1; }
[[ -x "$PROVIDER_BIN_DIR/terraform-provider-olapgke" ]] || { echo "ERROR: no provider in $PROVIDER_BIN_DIR: run make build" >&2; exit 1; }

# shellcheck source=sandbox.sh
. "$ROOT/examples/quickstart/sandbox.sh"
rm -rf "$WORK"
mkdir -p "$WORK"
write_dev_tfrc "$WORK/dev.tfrc" "$PROVIDER_BIN_DIR"
export TF_CLI_CONFIG_FILE="$WORK/dev.tfrc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1

failed=0
echo "==> $TERRAFORM fmt -check -recursive examples/ modules/"
if ! "$TERRAFORM" fmt -check -recursive -diff "$ROOT/examples" "$ROOT/modules"; then
	echo "ERROR: $TERRAFORM fmt needed (run $TERRAFORM fmt -recursive examples modules)" >&2
	failed=1
fi

# validate NAME DIR: terraform get + validate in DIR with its own data dir.
validate() {
	local name=$1 dir=$2 out
	if out=$(cd "$dir" && TF_DATA_DIR="$WORK/data/$(echo "$name" | tr / _)" "$TERRAFORM" get -no-color 2>&1 &&
		TF_DATA_DIR="$WORK/data/$(echo "$name" | tr / _)" "$TERRAFORM" validate -no-color 2>&1); then
		echo "ok    $name"
	else
		echo "FAIL  $name"
		echo "$out" | sed 's/^/      /' >&2
		failed=1
	fi
	count=$((count + 1))
}

count=0
mapfile -t dirs < <(cd "$ROOT" && find examples modules -name '*.tf' -not -path '*/.terraform/*' -printf '%h\n' | sort -u)
for d in "${dirs[@]}"; do
	case "$d" in
	examples/provider | examples/resources/* | examples/data-sources/*)
		# Documentation snippets: tfplugindocs renders each file on its own (provider.tf and
		# provider-sandbox.tf are alternatives), so each is validated on its own, next to the
		# non-.tf files it may read.
		for f in "$ROOT/$d"/*.tf; do
			tmp="$WORK/files/$d/$(basename "$f" .tf)"
			mkdir -p "$tmp"
			find "$ROOT/$d" -maxdepth 1 -type f ! -name '*.tf' -exec cp {} "$tmp/" \;
			cp "$f" "$tmp/"
			validate "$d/$(basename "$f")" "$tmp"
		done
		;;
	*) validate "$d" "$ROOT/$d" ;;
	esac
done
[[ $failed -eq 0 ]] || { echo "ERROR: some examples do not validate or are not formatted" >&2; exit 1; }
echo "all $count configurations validate"
