#!/usr/bin/env bash
# `terraform fmt -check` over examples/ and modules/, and `terraform validate` of every example
# configuration and of the module, against the freshly built provider's schema (dev_overrides;
# local modules are installed with `terraform get`, which needs no registry).
# PROVIDER_BIN_DIR (default .bin) holds terraform-provider-olapgke; EXAMPLES_CHECK_WORK (default
# .cache/examples-check) is its scratch directory.
# Docs show configurations from examples/ with tfplugindocs' tffile (examples/guides/<guide>/ for
# the guides), so what a page shows is what is validated here. HCL written inline in a page is
# extracted, fmt-checked and validated too (alone, or with the files a comment before it names;
# only blocks that need a provider this offline check cannot install are fmt-checked alone).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PROVIDER_BIN_DIR="${PROVIDER_BIN_DIR:-$ROOT/.bin}"
WORK="${EXAMPLES_CHECK_WORK:-$ROOT/.cache/examples-check}"

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

# Inline ```terraform blocks of the hand-written pages (```hcl marks CLI configuration, whose
# HCL 1 syntax terraform fmt does not read): each must be `terraform fmt` clean, and each is
# validated like the examples below (issue 43: every docs example validates in a test). An HTML
# comment on the line before the fence (invisible where the page renders) says how:
#   (none)                              the block validates on its own;
#   <!-- check: with FILE... -->        together with these repository files (and the non-.tf
#                                       files beside them, e.g. a manifest the block reads);
#   <!-- check: beside modules/ -->     in a directory where ./modules/ is the repository's;
#   <!-- check: fmt only: REASON -->    not validated, and the reason is printed (a provider
#                                       this offline check cannot install, such as hashicorp/helm).
echo "==> $TERRAFORM fmt -check and validate of the HCL written inline in templates/, README.md and the modules' and examples' READMEs"
mkdir -p "$WORK/inline"
inline=0 inline_validated=0
# inline_blocks PAGE: each block as "DIRECTIVE<US>HCL<NUL>" (US = \037).
inline_blocks() {
	awk 'inb && /^ *```/ { printf "%c", 0; inb = 0; next }
		inb { sub("^" ind, ""); print; next }
		/^ *```terraform$/ { inb = 1; match($0, /^ */); ind = substr($0, 1, RLENGTH); printf "%s%c", dir, 31; dir = ""; next }
		{ dir = "" }
		/^ *<!-- check: .* -->$/ { dir = $0; sub(/^ *<!-- check: /, "", dir); sub(/ -->$/, "", dir) }' "$1"
}
while IFS= read -r page; do
	n=0
	while IFS= read -r -d '' entry; do
		n=$((n + 1))
		directive=${entry%%$'\037'*} block=${entry#*$'\037'}
		name="$page inline block $n"
		dir="$WORK/inline/$(echo "$page" | tr / _)-$n"
		mkdir -p "$dir"
		printf '%s' "$block" >"$dir/inline.tf"
		inline=$((inline + 1))
		if ! out=$("$TERRAFORM" fmt -check -diff "$dir/inline.tf" 2>&1); then
			echo "FAIL  $name does not parse or is not terraform fmt clean:" >&2
			echo "$out" | sed 's/^/      /' >&2
			failed=1
			continue
		fi
		case "$directive" in
		"") ;;
		"fmt only: "*)
			echo "fmt   $name (${directive#fmt only: })"
			continue
			;;
		"beside modules/") ln -s "$ROOT/modules" "$dir/modules" ;;
		"with "*)
			for f in ${directive#with }; do
				[[ -f "$ROOT/$f" ]] || { echo "FAIL  $name: its check names $f, which does not exist" >&2; failed=1; continue 2; }
				find "$(dirname "$ROOT/$f")" -maxdepth 1 -type f ! -name '*.tf' -exec cp {} "$dir/" \;
				cp "$ROOT/$f" "$dir/with-$(echo "$f" | tr / _)"
			done
			;;
		*)
			echo "FAIL  $name: unknown check directive \"$directive\" (see check-examples.sh)" >&2
			failed=1
			continue
			;;
		esac
		validate "$name" "$dir"
		inline_validated=$((inline_validated + 1))
	done < <(inline_blocks "$ROOT/$page")
done < <(cd "$ROOT" && { find templates -name '*.tmpl'; echo README.md; find modules -name README.md; find examples -name README.md; } | sort)
echo "      $inline inline blocks: all fmt-checked, $inline_validated validated"


cli_version=$("$TERRAFORM" version 2>/dev/null | sed -n '1s/^[^v]*v//p')
identity_cli() { [[ "$(printf '%s\n' 1.12.0 "$cli_version" | sort -V | head -n 1)" == 1.12.0 ]]; }
# Actions (and `terraform query`) came with Terraform 1.14; OpenTofu has neither.
actions_cli() { "$TERRAFORM" version 2>/dev/null | grep -q '^Terraform' && [[ "$(printf '%s\n' 1.14.0 "$cli_version" | sort -V | head -n 1)" == 1.14.0 ]]; }

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
			# An import by identity needs its target's configuration and a CLI with resource
			# identity (Terraform or OpenTofu 1.12+; older ones reject the identity argument).
			if [[ "$(basename "$f")" == import-identity.tf ]]; then
				if ! identity_cli; then
					echo "skip  $d/import-identity.tf (import by identity needs 1.12+; $TERRAFORM is $cli_version)"
					continue
				fi
				cp "$ROOT/$d/resource.tf" "$tmp/"
			fi
			validate "$d/$(basename "$f")" "$tmp"
		done
		;;
	examples/actions/*)
		if actions_cli; then
			validate "$d" "$ROOT/$d"
		else
			echo "skip  $d (actions need Terraform 1.14+; $TERRAFORM is $cli_version)"
		fi
		;;
	*) validate "$d" "$ROOT/$d" ;;
	esac
done

# Repository paths the pages name are links (a page on the Registry has no repository beside it);
# each link into this repository must name a path that exists, as a tree (directory) or a blob
# (file).
echo "==> links into the repository from templates/, docs/ (schema descriptions), README.md and the READMEs"
links=0
while IFS=: read -r page kind path; do
	links=$((links + 1))
	if [[ "$kind" == tree && ! -d "$ROOT/$path" ]] || [[ "$kind" == blob && ! -f "$ROOT/$path" ]]; then
		echo "FAIL  $page links to $kind/main/$path, which is not a $([[ $kind == tree ]] && echo directory || echo file) here"
		failed=1
	fi
done < <(cd "$ROOT" && grep -rhoE --with-filename 'https://github.com/olapgke/terraform-provider-olapgke/(tree|blob)/main/[^) #]*' \
	templates docs README.md modules/*/README.md examples/*/README.md 2>/dev/null |
	sed -E 's#^([^:]*):https://github.com/olapgke/terraform-provider-olapgke/(tree|blob)/main/#\1:\2:#; s#/$##')
echo "$links links checked"
[[ $failed -eq 0 ]] || { echo "ERROR: some examples do not validate or are not formatted, or a link is broken" >&2; exit 1; }
echo "all $count configurations validate"
