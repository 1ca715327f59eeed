package deviceclass_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/lvmdconf"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/deviceclass"
)

func TestMain(m *testing.M) { acctest.Main(m) }

const (
	gib = int64(1) << 30
	// The default world: pool-a nodes with 2 raw-block Local SSDs of 375 GiB -> vg-ssd of 750 GiB.
	vgBytes = 750 * gib
	ns      = deviceclass.DefaultNamespace
	cmName  = deviceclass.DefaultConfigMapName
)

// wrapped compiles a pattern whose spaces match any whitespace, because Terraform wraps long
// diagnostic lines.
func wrapped(pattern string) *regexp.Regexp {
	return regexp.MustCompile("(?s)" + strings.ReplaceAll(pattern, " ", `\s+`))
}

// thinCapacity is lvmd's free figure for an empty thin pool of poolGiB: pool x ratio (lvmd
// v0.41.0 ThinPoolUsage.FreeBytes; spare-gb does not enter what Watch publishes for thin).
func thinCapacity(poolGiB int64, ratio float64) int64 {
	return int64(float64(poolGiB*gib) * ratio)
}

func lvmdText(t *testing.T, kube kubernetes.Interface) string {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(context.Background(), cmName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ConfigMap %s/%s: %v", ns, cmName, err)
	}
	return cm.Data[deviceclass.DefaultConfigKey]
}

// waitCapacity polls until every lvmd node's capacity.topolvm.io/<class> annotation equals want.
func waitCapacity(kube kubernetes.Interface, class string, want int64) error {
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "cloud.google.com/gke-local-nvme-ssd=true"})
		if err != nil {
			return false, err
		}
		if len(nodes.Items) == 0 {
			last = "no Local SSD nodes"
			return false, nil
		}
		for _, n := range nodes.Items {
			got := n.Annotations[deviceclass.CapacityAnnPrefix+class]
			if got != strconv.FormatInt(want, 10) {
				last = fmt.Sprintf("node %s has %s%s=%q", n.Name, deviceclass.CapacityAnnPrefix, class, got)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("capacity of class %s never became %d on every node: %s (%w)", class, want, last, err)
	}
	return nil
}

func checkCapacity(kube kubernetes.Interface, class string, want int64) resource.TestCheckFunc {
	return func(*terraform.State) error { return waitCapacity(kube, class, want) }
}

// checkLVMD checks the ConfigMap holds the classes named (and ssd, the world's default), keeps
// socket-name, and that the lvmd DaemonSet's pod template carries the config's hash.
func checkLVMD(kube kubernetes.Interface, classes ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, cmName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		text := cm.Data[deviceclass.DefaultConfigKey]
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
			return err
		}
		if doc["socket-name"] == nil {
			return fmt.Errorf("socket-name was lost from lvmd.yaml:\n%s", text)
		}
		cfg, err := lvmdconf.Parse(text)
		if err != nil {
			return err
		}
		for _, c := range append([]string{"ssd"}, classes...) {
			if _, ok := cfg.Get(c); !ok {
				return fmt.Errorf("class %s missing from lvmd.yaml:\n%s", c, text)
			}
		}
		all, _ := cfg.Classes()
		if err := lvmdconf.Validate(all); err != nil {
			return fmt.Errorf("lvmd.yaml would not start lvmd: %v\n%s", err, text)
		}
		ds, err := kube.AppsV1().DaemonSets(ns).Get(ctx, cmName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		sum := sha256.Sum256([]byte(text))
		if got := ds.Spec.Template.Annotations[deviceclass.AnnLVMDConfigHash]; got != hex.EncodeToString(sum[:]) {
			return fmt.Errorf("lvmd DaemonSet %s was not rolled for the current config: pod-template annotation %s=%q, config hash %x", ds.Name, deviceclass.AnnLVMDConfigHash, got, sum)
		}
		return nil
	}
}

func configTwoClasses(fastSpare int) string { return configTwoClassesFS(fastSpare, "xfs") }

func configTwoClassesFS(fastSpare int, fsType string) string {
	return fmt.Sprintf(`
resource "olapgke_topolvm_device_class" "fast" {
  name         = "fast"
  volume_group = "vg-ssd"
  type         = "thin"
  spare_gb     = %d
  thin_pool = {
    name                = "pool-fast"
    overprovision_ratio = 2
  }
  storage_class = {
    name    = "topolvm-fast"
    fs_type = %q
    labels  = { "olapgke.io/test" = "two-classes" }
  }
}

resource "olapgke_topolvm_device_class" "bulk" {
  name             = "bulk"
  volume_group     = "vg-ssd"
  type             = "thin"
  lvcreate_options = ["--zero=n"]
  thin_pool = {
    name                = "pool-bulk"
    overprovision_ratio = 4.5
  }
}
`, fastSpare, fsType)
}

// TestAccTopoLVMDeviceClass_TwoClassesOneConfigMap creates two thin classes in the default lvmd
// ConfigMap next to the world's ssd class, sees the TopoLVM simulator publish their
// (overprovisioned) capacity, changes spare_gb, and imports one back.
func TestAccTopoLVMDeviceClass_TwoClassesOneConfigMap(t *testing.T) {
	env := acctest.Sandbox(t)
	kube := env.Kube
	acctest.ThinPools(t, kube, map[string]int64{"pool-fast": 200, "pool-bulk": 100})
	fast := "olapgke_topolvm_device_class.fast"
	var scUID k8stypes.UID
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkClassesGone(kube, "topolvm-fast", "fast", "bulk"),
		Steps: []resource.TestStep{
			{
				Config: configTwoClasses(10),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fast, plancheck.ResourceActionCreate),
					// Recorded at apply: the cluster can change before it (a migration in the same run).
					plancheck.ExpectUnknownValue(fast, tfjsonpath.New("volumes")),
					plancheck.ExpectUnknownValue(fast, tfjsonpath.New("capacity")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkLVMD(kube, "fast", "bulk"),
					checkCapacity(kube, "fast", thinCapacity(200, 2)),
					checkCapacity(kube, "bulk", thinCapacity(100, 4.5)),
					// The pools are logical volumes of the group.
					checkCapacity(kube, "ssd", vgBytes-300*gib-10*gib),
					checkStorageClass(kube, "topolvm-fast", "fast"),
				),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(fast, tfjsonpath.New("id"), knownvalue.StringExact("topolvm-system/topolvm-lvmd-0/fast")),
					statecheck.ExpectKnownValue(fast, tfjsonpath.New("lvmd_config_map").AtMapKey("key"), knownvalue.StringExact("lvmd.yaml")),
					statecheck.ExpectKnownValue(fast, tfjsonpath.New("storage_class").AtMapKey("volume_binding_mode"), knownvalue.StringExact("WaitForFirstConsumer")),
				},
			},
			{
				// A refresh sees the published capacity.
				RefreshState: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(fast, "capacity.%", "3"),
					resource.TestCheckResourceAttr("olapgke_topolvm_device_class.bulk", "capacity."+firstNode(t, kube), strconv.FormatInt(thinCapacity(100, 4.5), 10)),
				),
			},
			{
				Config: configTwoClasses(50),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fast, plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("olapgke_topolvm_device_class.bulk", plancheck.ResourceActionNoop),
					plancheck.ExpectUnknownValue(fast, tfjsonpath.New("capacity")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkLVMD(kube, "fast", "bulk"),
					// A thin class's spare-gb reaches GetFreeBytes, not the published capacity.
					checkCapacity(kube, "fast", thinCapacity(200, 2)),
					checkCapacity(kube, "bulk", thinCapacity(100, 4.5)),
				),
			},
			{
				// fs_type is an immutable StorageClass parameter: the object is replaced, lvmd untouched.
				PreConfig: func() { scUID = storageClassUID(t, kube, "topolvm-fast") },
				Config:    configTwoClassesFS(50, "ext4"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fast, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					sc, err := kube.StorageV1().StorageClasses().Get(context.Background(), "topolvm-fast", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if sc.UID == scUID || sc.Parameters["csi.storage.k8s.io/fstype"] != "ext4" || sc.Labels["olapgke.io/test"] != "two-classes" {
						return fmt.Errorf("StorageClass not replaced as expected: uid %s (was %s), parameters %v, labels %v", sc.UID, scUID, sc.Parameters, sc.Labels)
					}
					return nil
				},
			},
			{
				ResourceName:            fast,
				ImportState:             true,
				ImportStateId:           "topolvm-system/topolvm-lvmd-0/fast",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"capacity", "volumes"},
			},
			{
				ResourceName:            "olapgke_topolvm_device_class.bulk",
				ImportState:             true,
				ImportStateId:           "bulk",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"capacity", "volumes"},
			},
		},
	})
}

func storageClassUID(t *testing.T, kube kubernetes.Interface, name string) k8stypes.UID {
	t.Helper()
	sc, err := kube.StorageV1().StorageClasses().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading StorageClass %s: %v", name, err)
	}
	return sc.UID
}

func firstNode(t *testing.T, kube kubernetes.Interface) string {
	t.Helper()
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "cloud.google.com/gke-local-nvme-ssd=true"})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("listing Local SSD nodes: %v (%d)", err, len(nodes.Items))
	}
	return nodes.Items[0].Name
}

func checkStorageClass(kube kubernetes.Interface, name, class string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		sc, err := kube.StorageV1().StorageClasses().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sc.Provisioner != "topolvm.io" || sc.Parameters["topolvm.io/device-class"] != class || sc.Parameters["csi.storage.k8s.io/fstype"] != "xfs" ||
			sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != "WaitForFirstConsumer" {
			return fmt.Errorf("StorageClass %s is not the expected TopoLVM class: provisioner %s, parameters %v, binding %v", name, sc.Provisioner, sc.Parameters, sc.VolumeBindingMode)
		}
		return nil
	}
}

// checkClassesGone verifies destroy removed the classes (ssd stays) and the StorageClass.
func checkClassesGone(kube kubernetes.Interface, sc string, classes ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, cmName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cfg, err := lvmdconf.Parse(cm.Data[deviceclass.DefaultConfigKey])
		if err != nil {
			return err
		}
		for _, c := range classes {
			if _, ok := cfg.Get(c); ok {
				return fmt.Errorf("class %s still in lvmd.yaml after destroy", c)
			}
		}
		if _, ok := cfg.Get("ssd"); !ok {
			return fmt.Errorf("destroy removed the world's ssd class too")
		}
		if sc != "" {
			if _, err := kube.StorageV1().StorageClasses().Get(ctx, sc, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("StorageClass %s still exists after destroy (err %v)", sc, err)
			}
		}
		return nil
	}
}

// TestAccTopoLVMDeviceClass_ImportDefaultWorld imports the sandbox's ssd class with its
// StorageClass topolvm-provisioner, plans no changes, and forgets it without destroying it.
func TestAccTopoLVMDeviceClass_ImportDefaultWorld(t *testing.T) {
	env := acctest.Sandbox(t)
	before := lvmdText(t, env.Kube)
	cfg := `
resource "olapgke_topolvm_device_class" "ssd" {
  name         = "ssd"
  volume_group = "vg-ssd"
  default      = true
  storage_class = {
    name = "topolvm-provisioner"
  }
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:             cfg,
				ResourceName:       "olapgke_topolvm_device_class.ssd",
				ImportState:        true,
				ImportStateId:      "ssd",
				ImportStatePersist: true,
				ImportStateCheck: func(s []*terraform.InstanceState) error {
					if len(s) != 1 || s[0].Attributes["storage_class.name"] != "topolvm-provisioner" || s[0].Attributes["default"] != "true" {
						return fmt.Errorf("imported state: %v", s)
					}
					return nil
				},
			},
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("olapgke_topolvm_device_class.ssd", tfjsonpath.New("capacity"), knownvalue.MapSizeExact(3)),
				},
			},
			{
				// Adopting must not rewrite the file when nothing changed.
				Config: cfg,
				Check: func(*terraform.State) error {
					if after := lvmdText(t, env.Kube); after != before {
						return fmt.Errorf("importing ssd changed lvmd.yaml:\n--- before\n%s\n--- after\n%s", before, after)
					}
					return nil
				},
			},
			{
				Config: `
removed {
  from = olapgke_topolvm_device_class.ssd
  lifecycle {
    destroy = false
  }
}
`,
			},
		},
	})
	if _, err := env.Kube.StorageV1().StorageClasses().Get(context.Background(), "topolvm-provisioner", metav1.GetOptions{}); err != nil {
		t.Errorf("StorageClass topolvm-provisioner gone after forgetting the imported class: %v", err)
	}
}

// TestAccTopoLVMDeviceClass_RefuseDestroyInUse creates a class and a StatefulSet (client-go)
// whose PVCs use it; destroy and rename are refused with the PVCs and ordinals listed until the
// StatefulSet and its PVCs are gone.
func TestAccTopoLVMDeviceClass_RefuseDestroyInUse(t *testing.T) {
	env := acctest.Sandbox(t)
	kube := env.Kube
	acctest.ThinPools(t, kube, map[string]int64{"pool-guard": 200})
	const setNS = "guard"
	cfg := func(name string) string {
		return fmt.Sprintf(`
resource "olapgke_topolvm_device_class" "guarded" {
  name         = %q
  volume_group = "vg-ssd"
  type         = "thin"
  thin_pool = {
    name                = "pool-guard"
    overprovision_ratio = 3
  }
  storage_class = {
    name = "topolvm-guarded"
  }
}
`, name)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkClassesGone(kube, "topolvm-guarded", "guarded"),
		Steps: []resource.TestStep{
			{Config: cfg("guarded")},
			{
				PreConfig: func() { createSet(t, kube, setNS, "topolvm-guarded", 2) },
				Config:    cfg("guarded"),
				// The refresh finds the PVCs; the plan lists them.
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("olapgke_topolvm_device_class.guarded", tfjsonpath.New("volumes"), knownvalue.ListSizeExact(2)),
					statecheck.ExpectKnownValue("olapgke_topolvm_device_class.guarded", tfjsonpath.New("volumes").AtSliceIndex(1).AtMapKey("ordinal"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue("olapgke_topolvm_device_class.guarded", tfjsonpath.New("volumes").AtSliceIndex(1).AtMapKey("statefulset"), knownvalue.StringExact("guard/db")),
				},
			},
			{
				Config:      cfg("renamed"),
				ExpectError: wrapped(`Device Class In Use.*renames the class from "guarded" to "renamed".*guard/data-db-0 \(StatefulSet guard/db ordinal 0, PV pvc-.*guard/data-db-1.*guard/db ordinals 0,1.*force_destroy`),
			},
			{
				Config:      `# nothing: destroy`,
				ExpectError: wrapped(`Device Class In Use.*destroys the class, but 2 PVC\(s\) use it.*guard/data-db-1 \(StatefulSet guard/db ordinal 1`),
			},
			{
				// Still there, nothing changed by the refused plans.
				Config:             cfg("guarded"),
				PlanOnly:           true,
				Check:              checkLVMD(kube, "guarded"),
				ExpectNonEmptyPlan: false,
			},
			{
				PreConfig: func() { deleteSet(t, kube, setNS) },
				Config:    `# nothing: destroy now allowed`,
			},
		},
	})
}

func createSet(t *testing.T, kube kubernetes.Interface, namespace, sc string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", namespace, err)
	}
	labels := map[string]string{"app": "db"}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         "db",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers:                    []corev1.Container{{Name: "db", Image: "olap/db:1", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(sc),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("5Gi")}},
				},
			}},
		},
	}
	if _, err := kube.AppsV1().StatefulSets(namespace).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pvcs, err := kube.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		bound := 0
		for _, c := range pvcs.Items {
			if c.Status.Phase == corev1.ClaimBound {
				bound++
			}
		}
		return bound == int(replicas), nil
	})
	if err != nil {
		t.Fatalf("PVCs of StatefulSet %s/db never all bound: %v", namespace, err)
	}
}

// deleteSet deletes the StatefulSet, its Pods and PVCs and waits until their PVs are gone.
func deleteSet(t *testing.T, kube kubernetes.Interface, namespace string) {
	t.Helper()
	ctx := context.Background()
	if err := kube.AppsV1().StatefulSets(namespace).Delete(ctx, "db", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting StatefulSet: %v", err)
	}
	_ = kube.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	if err := kube.CoreV1().PersistentVolumeClaims(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deleting PVCs: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pvcs, err := kube.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(pvcs.Items) > 0 {
			return false, err
		}
		pvs, err := kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, pv := range pvs.Items {
			if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == namespace {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("PVCs/PVs of %s never went away: %v", namespace, err)
	}
}

// TestAccTopoLVMDeviceClass_InvalidInputs checks that every invalid input is refused at plan
// with a clear message and that nothing was created afterwards.
func TestAccTopoLVMDeviceClass_InvalidInputs(t *testing.T) {
	env := acctest.Sandbox(t)
	before := lvmdText(t, env.Kube)
	body := func(lines string) string {
		return `resource "olapgke_topolvm_device_class" "bad" {
` + lines + `
}`
	}
	thin := `type = "thin"
thin_pool = { name = "pool-x", overprovision_ratio = 2 }`
	cases := []struct {
		name, config, want string
	}{
		{"name rule", body(`name = "-bad_"
volume_group = "vg-ssd"`), `Invalid Device Class Name.*start and end with an alphanumeric`},
		{"name too long", body(`name = "` + strings.Repeat("a", 64) + `"
volume_group = "vg-ssd"`), `Invalid Device Class Name.*at most 63`},
		{"volume group rule", body(`name = "x"
volume_group = "-vg"`), `Invalid Volume Group Name.*not a valid LVM name`},
		{"negative spare", body(`name = "x"
volume_group = "vg-ssd"
` + thin + `
spare_gb = -1`), `spare_gb.*must be at least 0`},
		{"thin needs pool", body(`name = "x"
volume_group = "vg-ssd"
type = "thin"`), `Thin Pool Required`},
		{"pool needs thin", body(`name = "x"
volume_group = "vg-ssd"
thin_pool = { name = "p", overprovision_ratio = 2 }`), `Thin Pool Without Thin Type`},
		{"ratio not above 1", body(`name = "x"
volume_group = "vg-ssd"
type = "thin"
thin_pool = { name = "p", overprovision_ratio = 1 }`), `Overprovision Ratio Too Low.*It is 1; it must be greater than 1`},
		{"stripe size", body(`name = "x"
volume_group = "vg-ssd"
` + thin + `
stripe = 2
stripe_size = "4gib"`), `Invalid Stripe Size.*"4gib" is not lvcreate size syntax`},
		{"unknown type", body(`name = "x"
volume_group = "vg-ssd"
type = "raid"`), `type.*value must be one of`},
		{"binding mode", body(`name = "x"
volume_group = "vg-ssd"
` + thin + `
storage_class = {
  name = "topolvm-x"
  volume_binding_mode = "Immediate"
}`), `Volume Binding Mode Not Supported.*provisioned on the node the scheduler picked`},
		{"fs type", body(`name = "x"
volume_group = "vg-ssd"
` + thin + `
storage_class = {
  name = "topolvm-x"
  fs_type = "zfs"
}`), `fs_type.*value must be one of`},
		{"storage class name", body(`name = "x"
volume_group = "vg-ssd"
` + thin + `
storage_class = { name = "Topolvm_X" }`), `Invalid StorageClass Name`},
		{"second default", body(`name = "x"
volume_group = "vg-ssd"
` + thin + `
default = true`), `Default Device Class Count.*2 device-classes are marked default \(ssd, x\)`},
		{"volume group taken", body(`name = "x"
volume_group = "vg-ssd"`), `Device Class Conflicts With Another.*"ssd" and "x" both use volume group "vg-ssd"`},
	}
	steps := make([]resource.TestStep, 0, len(cases))
	for _, c := range cases {
		steps = append(steps, resource.TestStep{Config: c.config, PlanOnly: true, ExpectError: wrapped(c.want)})
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps:                    steps,
		CheckDestroy: func(*terraform.State) error {
			if after := lvmdText(t, env.Kube); after != before {
				return fmt.Errorf("a rejected plan changed lvmd.yaml:\n--- before\n%s\n--- after\n%s", before, after)
			}
			if _, err := env.Kube.StorageV1().StorageClasses().Get(context.Background(), "topolvm-x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("StorageClass topolvm-x exists after rejected plans (err %v)", err)
			}
			return nil
		},
	})
}

// TestAccTopoLVMDeviceClass_MoveDefault moves lvmd's default from the world's ssd class to a new
// class and back: two defaults at once are refused at plan, so each move takes two applies.
func TestAccTopoLVMDeviceClass_MoveDefault(t *testing.T) {
	env := acctest.Sandbox(t)
	kube := env.Kube
	acctest.ThinPools(t, kube, map[string]int64{"pool-alt": 200})
	cfg := func(ssdDefault, altDefault bool) string {
		return fmt.Sprintf(`
resource "olapgke_topolvm_device_class" "ssd" {
  name         = "ssd"
  volume_group = "vg-ssd"
  default      = %t
  storage_class = {
    name = "topolvm-provisioner"
  }
}

resource "olapgke_topolvm_device_class" "alt" {
  name         = "alt"
  volume_group = "vg-ssd"
  default      = %t
  type         = "thin"
  thin_pool = {
    name                = "pool-alt"
    overprovision_ratio = 1.5
  }
}
`, ssdDefault, altDefault)
	}
	defaults := func(want ...string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			cfg, err := lvmdconf.Parse(lvmdText(t, kube))
			if err != nil {
				return err
			}
			classes, _ := cfg.Classes()
			var got []string
			for _, c := range classes {
				if c.Default {
					got = append(got, c.Name)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("default classes %v, want %v", got, want)
			}
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:             cfg(true, false),
				ResourceName:       "olapgke_topolvm_device_class.ssd",
				ImportState:        true,
				ImportStateId:      "ssd",
				ImportStatePersist: true,
			},
			{Config: cfg(true, false), Check: defaults("ssd")},
			{
				Config:      cfg(true, true),
				ExpectError: wrapped(`Default Device Class Count.*2 device-classes are marked default \(ssd, alt\).*Set default = false on the other class`),
			},
			{Config: cfg(false, false), Check: defaults()},
			{
				Config: cfg(false, true),
				Check: resource.ComposeAggregateTestCheckFunc(defaults("alt"),
					// The simulator publishes 00default for the new default.
					func(*terraform.State) error { return waitCapacity(kube, "00default", thinCapacity(200, 1.5)) }),
			},
			{Config: cfg(false, false), Check: defaults()},
			{
				Config: cfg(true, false),
				Check: resource.ComposeAggregateTestCheckFunc(defaults("ssd"),
					func(*terraform.State) error { return waitCapacity(kube, "00default", vgBytes-200*gib-10*gib) }),
			},
			{
				// Forget ssd without destroying it; alt is destroyed.
				Config: `
removed {
  from = olapgke_topolvm_device_class.ssd
  lifecycle {
    destroy = false
  }
}
`,
				Check: resource.ComposeAggregateTestCheckFunc(defaults("ssd"), checkClassesGone(kube, "", "alt")),
			},
		},
	})
}
