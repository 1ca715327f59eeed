// Package installacc installs the provider the way users do, without dev_overrides: from the
// release artefacts GoReleaser builds from .goreleaser.yml (scripts/release-snapshot.sh, the
// script behind `make release-snapshot`), laid out as a filesystem mirror and served as a
// provider network mirror over loopback HTTPS, with `terraform init` checking the lock file's
// hashes and `terraform plan` against the package's sandbox. A corrupted archive must fail
// `terraform init` with the CLI's own checksum error. Tests only (install_acc_test.go).
//
// Artefacts: by default the test builds them itself into a temporary directory, with a
// throwaway GPG key in a temporary GNUPGHOME, through the same script as `make
// release-snapshot` (host OS/arch only). The release build (-trimpath, CGO_ENABLED=0) has its own
// entries in Go's build cache: the first run on a machine compiles the provider once more
// (minutes on two cores), later runs link and zip (well under a minute). OLAPGKE_RELEASE_DIST
// names a directory `make release-snapshot` already filled instead (its .sig is then verified
// only if the signing key is in the default GNUPGHOME).
//
// The CLI is TF_ACC_TERRAFORM_PATH (else terraform on PATH); OLAPGKE_TOFU_PATH adds an OpenTofu
// binary (scripts/build-tofu.sh builds them into .cache/tofu/), installed from the same mirrors
// under registry.opentofu.org.
package installacc
