package topolvm

import (
	"context"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"
)

// InstallOptions says what Install creates. Zero values take the defaults in the comments.
type InstallOptions struct {
	Namespace, ConfigMapName, Key string        // defaults topolvm-system, topolvm-lvmd-0, lvmd.yaml
	DeviceClasses                 []DeviceClass // default: [{Name: ssd, VolumeGroup: vg-ssd, Default: true}]
	StorageClassName              string        // default topolvm-provisioner (device class = the default class)
}

func (o *InstallOptions) defaults() {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.ConfigMapName == "" {
		o.ConfigMapName = DefaultConfigMapName
	}
	if o.Key == "" {
		o.Key = DefaultConfigKey
	}
	if len(o.DeviceClasses) == 0 {
		o.DeviceClasses = []DeviceClass{{Name: DefaultDeviceClass, VolumeGroup: DefaultVolumeGroup, Default: true}}
	}
	if o.StorageClassName == "" {
		o.StorageClassName = DefaultStorageClassName
	}
}

// lvmdSocket is what the TopoLVM chart writes as socket-name; kept for realism only.
const lvmdSocket = "/run/topolvm/lvmd.sock"

// Install creates (or brings back to the options) what a TopoLVM install leaves in the cluster:
// the namespace, the CSIDriver topolvm.io, the lvmd ConfigMap, the StorageClass and the lvmd
// DaemonSet object. It is idempotent; in an existing ConfigMap only the device-classes list of
// the lvmd.yaml key is replaced, other keys and fields stay.
func Install(ctx context.Context, kube kubernetes.Interface, o InstallOptions) error {
	o.defaults()
	if err := ValidateDeviceClasses(o.DeviceClasses); err != nil {
		return fmt.Errorf("topolvm install: invalid device classes: %w", err)
	}
	def, _ := defaultClass(o.DeviceClasses)
	steps := []struct {
		what string
		fn   func(context.Context, kubernetes.Interface, InstallOptions) error
	}{
		{"namespace " + o.Namespace, installNamespace},
		{"CSIDriver " + DriverName, installCSIDriver},
		{"ConfigMap " + o.Namespace + "/" + o.ConfigMapName, installConfigMap},
		{"StorageClass " + o.StorageClassName, func(ctx context.Context, k kubernetes.Interface, o InstallOptions) error {
			return installStorageClass(ctx, k, o.StorageClassName, def.Name)
		}},
		{"DaemonSet " + o.Namespace + "/" + o.ConfigMapName, installDaemonSet},
	}
	for _, s := range steps {
		if err := s.fn(ctx, kube, o); err != nil {
			return fmt.Errorf("topolvm install: %s: %w", s.what, err)
		}
	}
	return nil
}

func installNamespace(ctx context.Context, kube kubernetes.Interface, o InstallOptions) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func installCSIDriver(ctx context.Context, kube kubernetes.Interface, _ InstallOptions) error {
	want := storagev1.CSIDriverSpec{
		AttachRequired:       new(false),
		PodInfoOnMount:       new(true),
		StorageCapacity:      new(true),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
	}
	cur, err := kube.StorageV1().CSIDrivers().Get(ctx, DriverName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = kube.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: DriverName}, Spec: want}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if reflect.DeepEqual(cur.Spec.AttachRequired, want.AttachRequired) && reflect.DeepEqual(cur.Spec.PodInfoOnMount, want.PodInfoOnMount) &&
		reflect.DeepEqual(cur.Spec.StorageCapacity, want.StorageCapacity) && reflect.DeepEqual(cur.Spec.VolumeLifecycleModes, want.VolumeLifecycleModes) {
		return nil
	}
	// attachRequired and volumeLifecycleModes are immutable: recreate, as a chart upgrade would fail to.
	if err := kube.StorageV1().CSIDrivers().Delete(ctx, DriverName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	_, err = kube.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: DriverName}, Spec: want}, metav1.CreateOptions{})
	return err
}

// mergeLVMDConfig sets device-classes in an lvmd.yaml document, keeping every other field.
func mergeLVMDConfig(existing string, classes []DeviceClass) (string, error) {
	doc := map[string]any{}
	if existing != "" {
		if err := yaml.Unmarshal([]byte(existing), &doc); err != nil {
			return "", fmt.Errorf("existing lvmd config is not YAML: %w", err)
		}
		if doc == nil {
			doc = map[string]any{}
		}
	} else {
		doc["socket-name"] = lvmdSocket
	}
	// Round-trip the typed classes through JSON so the keys are lvmd's.
	raw, err := yaml.Marshal(lvmdConfig{DeviceClasses: classes})
	if err != nil {
		return "", err
	}
	var typed map[string]any
	if err := yaml.Unmarshal(raw, &typed); err != nil {
		return "", err
	}
	doc["device-classes"] = typed["device-classes"]
	out, err := yaml.Marshal(doc)
	return string(out), err
}

func installConfigMap(ctx context.Context, kube kubernetes.Interface, o InstallOptions) error {
	cms := kube.CoreV1().ConfigMaps(o.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cms.Get(ctx, o.ConfigMapName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			data, err := mergeLVMDConfig("", o.DeviceClasses)
			if err != nil {
				return err
			}
			_, err = cms.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: o.ConfigMapName, Namespace: o.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "topolvm"}},
				Data:       map[string]string{o.Key: data},
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		data, err := mergeLVMDConfig(cur.Data[o.Key], o.DeviceClasses)
		if err != nil {
			return err
		}
		if cur.Data[o.Key] == data {
			return nil
		}
		cur = cur.DeepCopy()
		if cur.Data == nil {
			cur.Data = map[string]string{}
		}
		cur.Data[o.Key] = data
		_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

func installStorageClass(ctx context.Context, kube kubernetes.Interface, name, class string) error {
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingWaitForFirstConsumer
	want := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: name},
		Provisioner:          DriverName,
		Parameters:           map[string]string{DeviceClassParam: class, FSTypeParam: "xfs"},
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &binding,
		AllowVolumeExpansion: new(true),
	}
	cur, err := kube.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = kube.StorageV1().StorageClasses().Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if cur.Provisioner == want.Provisioner && reflect.DeepEqual(cur.Parameters, want.Parameters) &&
		reflect.DeepEqual(cur.ReclaimPolicy, want.ReclaimPolicy) && reflect.DeepEqual(cur.VolumeBindingMode, want.VolumeBindingMode) &&
		reflect.DeepEqual(cur.AllowVolumeExpansion, want.AllowVolumeExpansion) {
		return nil
	}
	// Provisioner, parameters, reclaim policy and binding mode are immutable: recreate.
	if err := kube.StorageV1().StorageClasses().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	_, err = kube.StorageV1().StorageClasses().Create(ctx, want, metav1.CreateOptions{})
	return err
}

// installDaemonSet creates the lvmd DaemonSet object. Its pods need not run (KWOK nodes have no
// LVM); it exists so that "restart lvmd" can be expressed as a pod-template patch.
func installDaemonSet(ctx context.Context, kube kubernetes.Interface, o InstallOptions) error {
	labels := map[string]string{"app.kubernetes.io/name": "topolvm-lvmd", "app.kubernetes.io/instance": o.ConfigMapName}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: o.ConfigMapName, Namespace: o.Namespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"cloud.google.com/gke-local-nvme-ssd": "true"},
					// As examples/topolvm-gke/topolvm-values.yaml: every taint, so lvmd runs
					// wherever a historical may land (pools with taints of their own) and on a
					// node still carrying the startup taint (crash-looping until the bootstrap
					// created the volume group), so it is up when the taint goes. `up --topolvm
					// real` judges where the agents run by these tolerations.
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:    "lvmd",
						Image:   "sandbox.invalid/topolvm/topolvm-with-sidecar:placeholder",
						Command: []string{"/lvmd", "--container", "--config=/etc/topolvm/" + o.Key},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: "/etc/topolvm"},
						},
					}},
					Volumes: []corev1.Volume{{
						Name: "config",
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: o.ConfigMapName},
						}},
					}},
				},
			},
		},
	}
	_, err := kube.AppsV1().DaemonSets(o.Namespace).Create(ctx, ds, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
