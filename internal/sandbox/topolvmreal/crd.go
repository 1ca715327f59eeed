package topolvmreal

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// logicalVolumeCRD is TopoLVM v0.41.0's config/crd/bases/topolvm.io_logicalvolumes.yaml,
// unchanged (Apache-2.0, github.com/topolvm/topolvm).
//
//go:embed crd/topolvm.io_logicalvolumes.yaml
var logicalVolumeCRD []byte

// InstallCRD creates or updates the LogicalVolume CRD (topolvm.io/v1) and waits until it is
// established and served by discovery.
func InstallCRD(ctx context.Context, cfg *rest.Config) error {
	var want apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(logicalVolumeCRD, &want); err != nil {
		return fmt.Errorf("embedded LogicalVolume CRD: %w", err)
	}
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := cs.ApiextensionsV1().CustomResourceDefinitions()
	cur, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = crds.Create(ctx, &want, metav1.CreateOptions{})
	case err == nil:
		want.ResourceVersion = cur.ResourceVersion
		_, err = crds.Update(ctx, &want, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("CRD %s: %w", want.Name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cur, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", want.Name, err)
	}
	// Established is not yet discoverable: the API server's discovery documents catch up a
	// moment later, and controller-runtime's REST mapper, which reads them when TopoLVM's
	// reconcilers are set up, then fails with `no matches for kind "LogicalVolume"` (seen on a
	// loaded machine at 500 nodes; on a cluster the chart installs the CRD long before the
	// controller starts, and a crash-looping Pod would retry). Wait until discovery serves it.
	gv := want.Spec.Group + "/" + want.Spec.Versions[0].Name
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		// The mapper finds groups in /apis (aggregated discovery), then the group's resources.
		groups, err := cs.Discovery().ServerGroups()
		if err != nil || !slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool {
			return slices.ContainsFunc(g.Versions, func(v metav1.GroupVersionForDiscovery) bool { return v.GroupVersion == gv })
		}) {
			return false, nil
		}
		list, err := cs.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			return false, nil
		}
		for _, r := range list.APIResources {
			if r.Name == want.Spec.Names.Plural {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s established but %s/%s not discoverable: %w", want.Name, gv, want.Spec.Names.Plural, err)
	}
	// Discoverable is not yet watchable: until the resource's watch cache is initialized the API
	// server answers its watches with 429 and Retry-After: 1 ("storage is (re)initializing"), and
	// client-go waits that whole second before it retries. Every informer of a TopoLVM manager
	// started here lost it (about 1.1 s before the controller served its CSI socket, in every
	// real-TopoLVM sandbox start). Wait until a watch opens; a watch opened is closed at once.
	// MaxRetries(0): client-go's own Retry-After wait is the second this avoids.
	rc := cs.Discovery().RESTClient()
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		body, err := rc.Get().AbsPath("/apis", gv, want.Spec.Names.Plural).
			Param("watch", "true").Param("timeoutSeconds", "1").MaxRetries(0).Stream(ctx)
		if err != nil {
			return false, nil
		}
		return true, body.Close()
	})
	if err != nil {
		return fmt.Errorf("CRD %s discoverable but %s/%s not watchable: %w", want.Name, gv, want.Spec.Names.Plural, err)
	}
	return nil
}
