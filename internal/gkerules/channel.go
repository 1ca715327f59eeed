package gkerules

import "fmt"

// NoReleaseChannel is the release channel name (google.container.v1.ReleaseChannel.Channel) of a
// cluster that is not enrolled in any channel.
const NoReleaseChannel = "UNSPECIFIED"

// MaintenanceExclusionsURL documents maintenance exclusions, the way to keep GKE from upgrading
// (and so recreating) nodes of a cluster on a release channel: the "no minor or node upgrades"
// scope lasts up to the end of support of the cluster's minor version.
const MaintenanceExclusionsURL = "https://cloud.google.com/kubernetes-engine/docs/concepts/maintenance-windows-and-exclusions"

// InReleaseChannel reports whether a cluster with this release channel (RAPID, REGULAR, STABLE,
// EXTENDED, or UNSPECIFIED / empty for none) is enrolled in one.
func InReleaseChannel(channel string) bool {
	return channel != "" && channel != NoReleaseChannel
}

// ReleaseChannelError says which node management setting a cluster's release channel requires.
type ReleaseChannelError struct {
	// Channel is the cluster's release channel ("REGULAR").
	Channel string
	// Setting is the node pool setting that must stay on ("auto_upgrade", "auto_repair").
	Setting string
}

func (e *ReleaseChannelError) Error() string {
	return fmt.Sprintf("%s cannot be false in a cluster enrolled in the %s release channel", e.Setting, e.Channel)
}

// AutoUpgradeAllowed returns nil when a node pool may turn node auto-upgrade off in a cluster on
// this release channel (only when the cluster is on none), else a *ReleaseChannelError.
//
// Source: https://cloud.google.com/kubernetes-engine/docs/concepts/release-channels ("Node
// auto-upgrade and auto-repair are enabled and cannot be disabled when using release channels");
// the API answers INVALID_ARGUMENT "Auto_upgrade cannot be false when release_channel REGULAR is
// set." (also quoted as "Auto_upgrade and auto_repair cannot be false ..." by
// terraform-google-modules/terraform-google-kubernetes-engine#682 and sassoftware/viya4-iac-gcp#46).
func AutoUpgradeAllowed(channel string) error { return managementOff(channel, "auto_upgrade") }

// AutoRepairAllowed is AutoUpgradeAllowed for node auto-repair (same source).
func AutoRepairAllowed(channel string) error { return managementOff(channel, "auto_repair") }

func managementOff(channel, setting string) error {
	if !InReleaseChannel(channel) {
		return nil
	}
	return &ReleaseChannelError{Channel: channel, Setting: setting}
}
