#!/usr/bin/env bash
# build-terraform.sh VERSION [DIR]: builds Terraform VERSION (e.g. 1.16.4) from the Go module proxy
# into DIR/terraform-VERSION once (DIR defaults to .cache/terraform of this checkout), and prints
# the binary's path as its last line. Nothing else is downloaded: the module and its dependencies
# come through GOPROXY. A test build, not a HashiCorp release:
#
# THE NINE REMOTE-STATE BACKENDS azurerm, consul, cos, gcs, kubernetes, oss, pg, s3 and oci ARE
# MISSING from this binary. Terraform's go.mod replaces them (and internal/legacy, which only
# they import) with nested modules the proxy's zip does not contain, so `go install` refuses the
# module and a plain build cannot resolve them. The script copies the module, deletes those ten
# replace directives and their requires, and removes the nine backends from
# internal/backend/init/init.go; local, remote, http, inmem and cloud stay. Good for provider
# tests (local state); a configuration with `backend "s3"` etc. fails init with "Unsupported
# backend type". Recipe verified on Terraform 1.15.9 and 1.16.4 (../shared/SANDBOX-NOTES.md).
set -euo pipefail

usage="usage: build-terraform.sh VERSION [DIR]"
version=${1:?$usage}
dir=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.cache/terraform}
module=github.com/hashicorp/terraform
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
bin="$dir/terraform-$version"
reports() { CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=/dev/null "$1" version 2>/dev/null | sed -n 1p; }
if [[ -x "$bin" && "$(reports "$bin")" == "Terraform v$version" ]]; then
	echo "$bin"
	exit 0
fi

src=$(go mod download -json "$module@v$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n "$src" && -d "$src" ]] || { echo "ERROR: go mod download of $module@v$version gave no directory" >&2; exit 1; }

# The module cache is read-only: patch a writable copy (kept next to the binary, removed on success).
work="$dir/src-$version"
rm -rf "$work"
cp -r "$src" "$work"
chmod -R u+w "$work"

backends=(azure consul cos gcs kubernetes oss pg s3 oci)
# go.mod: the replace lines `=> ./internal/...` (the nine backends and internal/legacy) and the
# require lines of the same module paths.
mapfile -t replaced < <(sed -n 's/^[[:space:]]*\(replace[[:space:]]\+\)\?\([^[:space:]]\+\)[[:space:]]*=>[[:space:]]*\.\/internal\/.*$/\2/p' "$work/go.mod")
[[ ${#replaced[@]} -eq 10 ]] || { echo "ERROR: expected 10 '=> ./internal/...' replace directives in $module@v$version go.mod, found ${#replaced[@]}: ${replaced[*]}" >&2; exit 1; }
for m in "${replaced[@]}"; do
	q=$(printf '%s' "$m" | sed 's/[.[\*^$/]/\\&/g')
	sed -i -e "/^[[:space:]]*\(replace[[:space:]]\+\)\?$q[[:space:]]*=>/d" \
		-e "/^[[:space:]]*\(require[[:space:]]\+\)\?$q[[:space:]]\+v[^[:space:]]*\([[:space:]]*\/\/.*\)\?$/d" "$work/go.mod"
done
if grep -q '=> \./internal/' "$work/go.mod"; then
	echo "ERROR: replace directives to ./internal/ left in $work/go.mod" >&2
	exit 1
fi

# internal/backend/init/init.go: each backend's import line and its map entry, e.g.
#   backendS3 "github.com/hashicorp/terraform/internal/backend/remote-state/s3"
#   "s3": func() backend.Backend { return backendS3.New() },
init="$work/internal/backend/init/init.go"
for b in "${backends[@]}"; do
	pkg="\"$module/internal/backend/remote-state/$b\""
	alias=$(sed -n "s|^[[:space:]]*\([A-Za-z0-9_]\+\)[[:space:]]\+$pkg\$|\1|p" "$init")
	[[ -n "$alias" ]] || { echo "ERROR: no import of remote-state/$b in $init" >&2; exit 1; }
	sed -i -e "\|$pkg|d" -e "/[[:space:]]$alias\.New/d" "$init"
	if grep -q "\b$alias\." "$init"; then
		echo "ERROR: $init still uses $alias after removing the $b backend" >&2
		exit 1
	fi
done

echo "building Terraform v$version from $work without the remote-state backends ${backends[*]} (~10 min the first time on 2 cores)" >&2
(cd "$work" && go build -mod=mod -ldflags "-X $module/version.dev=no" -o "$bin.tmp" .)
mv "$bin.tmp" "$bin"
rm -rf "$work"
got=$(reports "$bin")
[[ "$got" == "Terraform v$version" ]] || { echo "ERROR: $bin reports \"$got\", want Terraform v$version" >&2; exit 1; }
echo "$bin"
