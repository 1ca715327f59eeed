# Sourced by demo.sh and the module's test runner: start a sandbox in the background, wait for it,
# load its environment, and stop it on exit.
#
#   . examples/quickstart/sandbox.sh
#   sandbox_start "$SANDBOX_BIN" "$STATE_DIR"   # exports DIR/env; installs an EXIT trap
#
# sandbox_start removes STATE_DIR first: every run gets a fresh cluster.

# The CLI every script runs: terraform on PATH unless TERRAFORM names another binary (an
# OpenTofu `tofu`, or another terraform version; make testacc-tofu sets it).
TERRAFORM="${TERRAFORM:-terraform}"

# Generous: start-up takes seconds on an idle machine but minutes when builds compete for CPU.
SANDBOX_READY_TIMEOUT="${SANDBOX_READY_TIMEOUT:-600}"
_sandbox_pid=""
_sandbox_dir=""

sandbox_stop() {
	if [[ -n "$_sandbox_pid" ]] && kill -0 "$_sandbox_pid" 2>/dev/null; then
		echo "stopping the sandbox (pid $_sandbox_pid)"
		kill -TERM "$_sandbox_pid" 2>/dev/null || true
		local i
		for i in $(seq 1 60); do kill -0 "$_sandbox_pid" 2>/dev/null || break; sleep 0.5; done
		if kill -0 "$_sandbox_pid" 2>/dev/null; then kill -KILL "$_sandbox_pid" 2>/dev/null || true; fi
		wait "$_sandbox_pid" 2>/dev/null || true
	fi
	_sandbox_pid=""
}

sandbox_start() {
	local bin=$1 dir=$2
	[[ -x "$bin" ]] || { echo "ERROR: no sandbox binary at $bin: run make sandbox-bin" >&2; return 1; }
	rm -rf "$dir"
	mkdir -p "$dir"
	_sandbox_dir=$dir
	"$bin" up --state-dir "$dir" >"$dir/stdout.log" 2>&1 &
	_sandbox_pid=$!
	trap '_rc=$?; sandbox_stop; exit $_rc' EXIT
	# Poll with a deadline: the sandbox writes DIR/ready once every component is up.
	local deadline=$(($(date +%s) + SANDBOX_READY_TIMEOUT))
	until [[ -f "$dir/ready" ]]; do
		if ! kill -0 "$_sandbox_pid" 2>/dev/null; then
			tail -n 30 "$dir/stdout.log" >&2
			echo "ERROR: the sandbox exited before it was ready (log: $dir/sandbox.log)" >&2
			return 1
		fi
		if (($(date +%s) >= deadline)); then
			tail -n 30 "$dir/stdout.log" >&2
			echo "ERROR: the sandbox was not ready after ${SANDBOX_READY_TIMEOUT}s (log: $dir/sandbox.log)" >&2
			return 1
		fi
		sleep 0.2
	done
	set -a
	# shellcheck disable=SC1091
	. "$dir/env"
	set +a
}

# write_dev_tfrc FILE PROVIDER_DIR: a CLI config whose dev_overrides serve the built provider for
# both addresses examples use (olapgke/olapgke, and hashicorp/olapgke for configurations without
# required_providers), on both registries' hostnames (Terraform resolves `olapgke/olapgke` to
# registry.terraform.io, OpenTofu to registry.opentofu.org); no registry, no init.
write_dev_tfrc() {
	cat >"$1" <<TFRC
provider_installation {
  dev_overrides {
    "registry.terraform.io/olapgke/olapgke"   = "$2"
    "registry.terraform.io/hashicorp/olapgke" = "$2"
    "registry.opentofu.org/olapgke/olapgke"   = "$2"
    "registry.opentofu.org/hashicorp/olapgke" = "$2"
  }
  direct {}
}
TFRC
}
