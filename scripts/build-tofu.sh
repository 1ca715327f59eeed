#!/usr/bin/env bash
# build-tofu.sh VERSION DIR: builds OpenTofu VERSION (e.g. 1.12.6) from the Go module proxy into
# DIR/tofu-VERSION once, and prints the binary's path. Nothing else is downloaded: the module and
# its dependencies come through GOPROXY. `go install` refuses OpenTofu's replace directives, so
# the module is downloaded and built inside its own directory, with the flag its release build
# sets (without it the binary calls itself VERSION-dev).
#
# Terraform cannot be built this way: its go.mod replaces nested modules
# (internal/backend/remote-state/*, internal/legacy) with directories the module zip on the proxy
# does not contain. scripts/build-terraform.sh builds it without those backends.
set -euo pipefail

usage="usage: build-tofu.sh VERSION DIR"
version=${1:?$usage}
dir=${2:?$usage}
module=github.com/opentofu/opentofu
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
bin="$dir/tofu-$version"
reports() { TF_CLI_CONFIG_FILE=/dev/null "$1" version 2>/dev/null | sed -n 1p; }
if [[ -x "$bin" && "$(reports "$bin")" == "OpenTofu v$version" ]]; then
	echo "$bin"
	exit 0
fi
src=$(go mod download -json "$module@v$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n "$src" && -d "$src" ]] || { echo "ERROR: go mod download of $module@v$version gave no directory" >&2; exit 1; }
echo "building OpenTofu v$version from $src (a few minutes the first time)" >&2
(cd "$src" && go build -ldflags "-X $module/version.dev=no" -o "$bin.tmp" ./cmd/tofu)
mv "$bin.tmp" "$bin"
got=$(reports "$bin")
[[ "$got" == "OpenTofu v$version" ]] || { echo "ERROR: $bin reports \"$got\", want OpenTofu v$version" >&2; exit 1; }
echo "$bin"
