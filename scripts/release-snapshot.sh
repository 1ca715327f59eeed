#!/usr/bin/env bash
# Builds the registry release layout locally with GoReleaser (a Go tool dependency of
# internal/tools; built from the Go module proxy, cached by Go's build cache) from .goreleaser.yml,
# as the release workflow does on a tag, but as a snapshot (nothing is published):
#
#   $DIST/terraform-provider-olapgke_<v>_<os>_<arch>.zip   one per OS/arch
#   $DIST/terraform-provider-olapgke_<v>_SHA256SUMS        sha256 of the zips and the manifest
#   $DIST/terraform-provider-olapgke_<v>_SHA256SUMS.sig    detached gpg signature of SHA256SUMS
#   $DIST/terraform-provider-olapgke_<v>_manifest.json     terraform-registry-manifest.json
#
# Environment:
#   VERSION          the version stamped into the binary and the file names (default: the first
#                    "## X.Y.Z" heading of CHANGELOG.md). Must be plain semver: Terraform installs
#                    it from a mirror only if it matches the configuration's constraint.
#   GPG_FINGERPRINT  the key that signs SHA256SUMS (gpg --local-user; GNUPGHOME is honoured).
#                    Unset: no .sig is written, and the script says so.
#   ALL=1            every OS/arch of .goreleaser.yml; otherwise the host's only (go env GOOS/GOARCH).
#   DIST             output directory (default dist/ in the checkout); emptied first.
#   REUSE_BUILD_CACHE=1  build the binary with `go build`'s own flags (no -trimpath, the
#                    environment's CGO_ENABLED) instead of the release's, so that it links from
#                    Go's build cache instead of compiling the provider's ~1,300 packages again
#                    (-trimpath and CGO_ENABLED=0 change every package's cache key). The archives,
#                    names, version stamp, checksums, signature and manifest are the release's.
#                    For tests (internal/installacc); a release never sets it.
#
# GoReleaser's `before` hook (go mod tidy) is skipped here: a snapshot must not rewrite go.mod
# in a shared checkout. The tag-triggered release runs it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VERSION="${VERSION:-$(sed -n 's/^## \([0-9][0-9.]*\) .*/\1/p' CHANGELOG.md | head -1)}"
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "ERROR: VERSION '$VERSION' is not X.Y.Z" >&2; exit 1; }
DIST="${DIST:-$ROOT/dist}"
case "$DIST" in /*) ;; *) DIST="$ROOT/$DIST" ;; esac

# The GoReleaser binary that `go tool goreleaser` runs (built once, then from the build cache).
GORELEASER="$(go -C "$ROOT/internal/tools" tool -n goreleaser)"

# A copy of .goreleaser.yml with the output directory and, unless ALL=1, the host's target only
# (`goreleaser release` has no --single-target).
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cfg="$work/goreleaser.yml"
if [[ "${ALL:-}" == 1 ]]; then
	cp .goreleaser.yml "$cfg"
else
	goos="$(go env GOOS)" goarch="$(go env GOARCH)"
	grep -q '^    goos: \[' .goreleaser.yml && grep -q '^    goarch: \[' .goreleaser.yml ||
		{ echo "ERROR: .goreleaser.yml's goos/goarch lists are not where this script filters them" >&2; exit 1; }
	sed -e "s/^    goos: \[.*\]/    goos: [$goos]/" -e "s/^    goarch: \[.*\]/    goarch: [\"$goarch\"]/" .goreleaser.yml > "$cfg"
fi
if [[ "${REUSE_BUILD_CACHE:-}" == 1 ]]; then
	grep -q '^      - -trimpath$' "$cfg" && grep -q '^      - CGO_ENABLED=0$' "$cfg" ||
		{ echo "ERROR: .goreleaser.yml's -trimpath / CGO_ENABLED=0 lines are not where this script drops them" >&2; exit 1; }
	sed -i -e '/^      - -trimpath$/d' -e '/^    flags:$/d' -e "s/^      - CGO_ENABLED=0$/      - CGO_ENABLED=$(go env CGO_ENABLED)/" "$cfg"
fi
printf '\ndist: %s\nsnapshot:\n  version_template: "%s"\n' "$DIST" "$VERSION" >> "$cfg"

skip=before
if [[ -z "${GPG_FINGERPRINT:-}" ]]; then
	echo "NOTE: GPG_FINGERPRINT is not set: SHA256SUMS is not signed (no .sig)" >&2
	skip="$skip,sign"
fi
export GPG_FINGERPRINT="${GPG_FINGERPRINT:-}"

"$GORELEASER" release --snapshot --clean --skip="$skip" --config "$cfg"

# The release uploads terraform-registry-manifest.json under this name (release.extra_files);
# a snapshot publishes nothing, so put the copy SHA256SUMS lists next to it.
cp terraform-registry-manifest.json "$DIST/terraform-provider-olapgke_${VERSION}_manifest.json"

# GoReleaser also leaves its own metadata, config copy and per-build directories in dist/;
# list what a registry or mirror takes.
echo "==> registry artefacts in $DIST (version $VERSION):"
(cd "$DIST" && ls -1 terraform-provider-olapgke_"$VERSION"_*)
