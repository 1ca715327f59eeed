package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/fixture"
)

// Restart scenario (issue 15): a template-only change (image bump) rolled through restarts in
// place, one ordinal at a time, by olapgke_statefulset_migration, against the StatefulSet
// controller's own RollingUpdate (maxUnavailable 1) of the same change, ABBA in one session.
// Both keep every PVC; the report checks it.
const (
	RestartNS  = "restart"
	RestartSet = "roll"
)

// RestartResult compares the two ways of rolling a template change.
type RestartResult struct {
	Ordinals   int
	Provider   MoveStats
	Controller MoveStats
	Rounds     []MigrationRound
	// PVCsReplaced counts PVCs whose UID changed over all rounds (must be 0).
	PVCsReplaced int
	Err          string
}

// Ratio is the provider's span over the controller's.
func (r RestartResult) Ratio() float64 {
	if r.Controller.Span <= 0 {
		return 0
	}
	return float64(r.Provider.Span) / float64(r.Controller.Span)
}

func bumpImage(ctx context.Context, kube kubernetes.Interface, image string, rolling bool, replicas int) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := kube.AppsV1().StatefulSets(RestartNS).Get(ctx, RestartSet, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s = s.DeepCopy()
		s.Spec.Template.Spec.Containers[0].Image = image
		if rolling {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Partition: ptr.To[int32](0)}}
		} else {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
		}
		_, err = kube.AppsV1().StatefulSets(RestartNS).Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	if rolling {
		return waitSetReady(ctx, kube, RestartNS, RestartSet, replicas, 10*time.Minute, false)
	}
	return waitSetReady(ctx, kube, RestartNS, RestartSet, replicas, 2*time.Minute, true)
}

func pvcUIDs(ctx context.Context, kube kubernetes.Interface) (map[string]string, error) {
	l, err := kube.CoreV1().PersistentVolumeClaims(RestartNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, c := range l.Items {
		out[c.Name] = string(c.UID)
	}
	return out, nil
}

// RestartScenario rolls an image bump over n ordinals four times: controller, provider, provider,
// controller.
func RestartScenario(ctx context.Context, sb *Sandbox, providerDir, dir string, n int, logf func(string, ...any)) RestartResult {
	r := RestartResult{Ordinals: n}
	fail := func(format string, a ...any) RestartResult {
		r.Err = fmt.Sprintf(format, a...)
		logf("restart: %s", r.Err)
		return r
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("%v", err)
	}
	set := fixture.Historical{Namespace: RestartNS, Name: RestartSet, Replicas: int32(n), Pool: "pool-a",
		Claim: Claim, StorageClass: StorageClass, Size: "1Gi"}.StatefulSet()
	if err := createReadySet(ctx, sb, set); err != nil {
		return fail("%v", err)
	}
	before, err := pvcUIDs(ctx, sb.Kube)
	if err != nil {
		return fail("%v", err)
	}
	tl, err := WatchPods(ctx, sb.Kube, RestartNS)
	if err != nil {
		return fail("%v", err)
	}
	defer tl.Stop()
	for i, tool := range []string{"controller", "provider", "provider", "controller"} {
		image := fmt.Sprintf("olap/historical:%d", i+2)
		old := tl.Current()
		var wall, cpu time.Duration
		t0 := time.Now()
		if tool == "controller" {
			if err := bumpImage(ctx, sb.Kube, image, true, n); err != nil {
				return fail("RollingUpdate to %s: %v", image, err)
			}
			wall = time.Since(t0)
		} else {
			if err := bumpImage(ctx, sb.Kube, image, false, n); err != nil {
				return fail("template change to %s: %v", image, err)
			}
			rdir := filepath.Join(dir, fmt.Sprintf("%d-provider", i+1))
			if err := os.MkdirAll(rdir, 0o755); err != nil {
				return fail("%v", err)
			}
			main := fmt.Sprintf(tfHeader, ProviderSource, directKube(sb)) + fmt.Sprintf(`
resource "olapgke_statefulset_migration" "roll" {
  namespace       = %q
  statefulset     = %q
  ordinal_timeout = "5m"
}
`, RestartNS, RestartSet)
			if err := writeFile(filepath.Join(rdir, "main.tf"), main); err != nil {
				return fail("%v", err)
			}
			tf := &Terraform{Dir: rdir, ProviderDir: providerDir, Env: sb.Env}
			ap, err := tf.Exec(ctx, "apply.log", "apply", "-auto-approve", "-input=false", "-no-color")
			if err != nil || ap.ExitCode != 0 {
				return fail("terraform apply of olapgke_statefulset_migration (restart to %s): exit %d, %v\n%s", image, ap.ExitCode, err, tail(ap.Output, 40))
			}
			wall, cpu = ap.Wall, ap.CPU
		}
		moves, err := tl.Moves(old)
		if err != nil {
			return fail("%s round %d: %v", tool, i+1, err)
		}
		st := Stats(moves)
		r.Rounds = append(r.Rounds, MigrationRound{Tool: tool, To: image, Stats: st, Wall: wall, CPU: cpu})
		if tool == "provider" {
			r.Provider = r.Provider.Add(st)
		} else {
			r.Controller = r.Controller.Add(st)
		}
		logf("restart round %d, %s to %s: span %s, cluster latency sum %s", i+1, tool, image, st.Span.Round(time.Millisecond), st.Sum.Round(time.Millisecond))
	}
	after, err := pvcUIDs(ctx, sb.Kube)
	if err != nil {
		return fail("%v", err)
	}
	for name, uid := range before {
		if after[name] != uid {
			r.PVCsReplaced++
		}
	}
	return r
}
