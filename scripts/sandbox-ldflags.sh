#!/usr/bin/env bash
# Prints the go build -ldflags that stamp the sandbox's Kubernetes version the way a release
# build does (kubernetes hack/lib/version.sh kube::version::ldflags: -X on
# k8s.io/component-base/version's gitVersion, gitMajor, gitMinor, gitTreeState), so that the
# sandbox's API server answers /version (`kubectl version`) like a GKE cluster:
# gitVersion "v1.37.2-gke.1000" for the k8s.io/kubernetes module the sandbox is built from, the
# GKE emulator's master version (internal/sandbox/gke Version; sandboxtest's TestVersion holds
# the two together). Unstamped, the server says "v0.0.0-master+$Format:%H$".
# Used by `make sandbox-bin` and by the test harnesses that build the sandbox themselves.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
v="$(cd "$root/internal/sandbox" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
if [[ ! "$v" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]]; then
	echo "sandbox-ldflags.sh: k8s.io/kubernetes version $v is not a release" >&2
	exit 1
fi
pkg=k8s.io/component-base/version
echo "-X $pkg.gitVersion=$v-gke.1000 -X $pkg.gitMajor=${BASH_REMATCH[1]} -X $pkg.gitMinor=${BASH_REMATCH[2]} -X $pkg.gitTreeState=clean"
