package topolvmreal

import (
	"testing"

	epfeatures "github.com/kubernetes-csi/external-provisioner/v6/pkg/features"
	rzfeatures "github.com/kubernetes-csi/external-resizer/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// Both sidecars' gates are registered in the one process with their containers' defaults
// (csi-provisioner's VolumeAttributesClass on); an unregistered gate would panic on Enabled.
func TestFeatureGatesOfBothSidecars(t *testing.T) {
	for gate, want := range map[featuregate.Feature]bool{
		epfeatures.Topology:                       true,
		epfeatures.CrossNamespaceVolumeDataSource: false,
		epfeatures.VolumeAttributesClass:          true,
		epfeatures.ReleaseLeaderElectionOnExit:    false,
		rzfeatures.AnnotateFsResize:               false,
		rzfeatures.RecoverVolumeExpansionFailure:  true,
	} {
		if got := utilfeature.DefaultFeatureGate.Enabled(gate); got != want {
			t.Errorf("feature gate %s = %v, want %v", gate, got, want)
		}
	}
}
