package fakelvmd

import (
	_ "unsafe" // go:linkname

	lvmdtypes "github.com/topolvm/topolvm/pkg/lvmd/types"
)

// validateDeviceClasses is lvmd's own check of lvmd.yaml's device-classes, the first thing lvmd
// does at start (topolvm v0.41.0 cmd/lvmd/app/root.go subMain): at least one class; names of
// 1-63 characters matching its qualified-name rule, each once; a volume group each; type thick
// or thin; for thin, a pool name and an overprovision ratio of at least 1; each volume group
// (thick) or volume-group/thin-pool pair (thin) used by one class only; the stripe-size format;
// not more than one default (none is accepted).
//
// It is TopoLVM's function itself, not a copy: ValidateDeviceClasses lives in
// github.com/topolvm/topolvm/internal/lvmd, which Go's internal-package rule keeps this module
// from importing, so the symbol is linked by name. The blank import of pkg/lvmd (fakelvmd.go)
// links that package into every binary using fakelvmd; the module's go.sum pins its version, and
// TestValidateIsLvmds fails if the symbol or its behaviour changes.
//
//go:linkname validateDeviceClasses github.com/topolvm/topolvm/internal/lvmd.ValidateDeviceClasses
func validateDeviceClasses(deviceClasses []*lvmdtypes.DeviceClass) error
