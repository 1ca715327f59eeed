#!/usr/bin/env bash
# DESIGN.md's package table must name every package of the provider module that `go list` finds,
# and only those (issue 44: DESIGN.md kept true to the code, checked in CI). A row names its
# package in backticks in the first column; `internal/resources/<name>` stands for each resource
# package without a row of its own.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

module=$(go list -m)
listed=$(go list ./... | sed "s#^$module/\{0,1\}##" | grep -v '^$' | sort)
# The rows of the "## Packages (provider module)" table: first cell, backticks stripped.
table=$(awk '/^## Packages \(provider module\)/{on=1; next} /^## /{on=0} on && /^\| `/' DESIGN.md |
	sed -E 's/^\| `([^`]*)`.*/\1/' | sort)

missing=() extra=()
while read -r pkg; do
	grep -qxF "$pkg" <<<"$table" && continue
	[[ $pkg == internal/resources/* ]] && grep -qxF 'internal/resources/<name>' <<<"$table" && continue
	missing+=("$pkg")
done <<<"$listed"
while read -r row; do
	[[ $row == 'internal/resources/<name>' ]] && continue
	grep -qxF "$row" <<<"$listed" || extra+=("$row")
done <<<"$table"

if ((${#missing[@]} + ${#extra[@]})); then
	((${#missing[@]})) && printf 'DESIGN.md: package without a row in "Packages (provider module)": %s\n' "${missing[@]}" >&2
	((${#extra[@]})) && printf 'DESIGN.md: row for a package go list does not find: %s\n' "${extra[@]}" >&2
	exit 1
fi
echo "DESIGN.md's package table matches go list ($(wc -l <<<"$listed") packages)"
