package topolvmreal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The lvmd DaemonSet's rolling update. The sandbox runs no DaemonSet controller; the provider's
// restart_lvmd (internal/resources/deviceclass/effects.go restartLVMD) patches the DaemonSet's pod
// template annotation olapgke.io/lvmd-config-hash, on which the DaemonSet controller replaces
// the Pods: TopoLVM's chart leaves updateStrategy empty (charts/topolvm/values.yaml
// lvmd.updateStrategy: {}), so it is the DaemonSet default RollingUpdate with maxUnavailable 1
// (kubernetes pkg/controller/daemon/update.go rollingUpdate): one node at a time, old Pods that
// are not available first, and the next node only once the new Pod is available. A new Pod that
// never becomes available (lvmd crash-looping on a volume group the node lacks) stalls the
// rollout there, until the template changes again. lvmd reads its configuration only at start
// (TopoLVM cmd/lvmd/app/root.go), so a ConfigMap edit reaches running nodes through this
// rollout only. When lvmd goes, topolvm-node's metrics exporter loses its Watch stream and
// returns (internal/runners/metrics_exporter.go Start), so topolvm-node restarts too: the
// sandbox restarts the whole node agent.

// templateHash is the hash of a DaemonSet's pod template (the DaemonSet controller compares
// ControllerRevisions of the template; any change of it is a new revision).
func templateHash(ds *appsv1.DaemonSet) string {
	b, _ := json.Marshal(ds.Spec.Template)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// daemonSetHandler follows the lvmd DaemonSet (named like the lvmd ConfigMap): a new pod
// template (re)starts the rollout.
func (s *nodeAgents) daemonSetHandler() cache.ResourceEventHandler {
	changed := func(obj any) {
		ds, ok := obj.(*appsv1.DaemonSet)
		if !ok || ds.Name != s.o.ConfigMapName {
			return
		}
		h := templateHash(ds)
		s.mu.Lock()
		tolerationsChanged := !equality.Semantic.DeepEqual(s.tolerations, ds.Spec.Template.Spec.Tolerations)
		s.tolerations = ds.Spec.Template.Spec.Tolerations
		if s.template == "" {
			// First sight (the informer's initial list): the Pods running are this template's.
			s.template = h
			for _, a := range s.agents {
				a.template = h
			}
		}
		moved := s.template != h
		s.template = h
		s.mu.Unlock()
		if tolerationsChanged {
			s.enqueueAll() // the nodes the DaemonSet's Pods may run on changed
		}
		if moved {
			klog.InfoS("lvmd DaemonSet pod template changed: rolling the node agents", "daemonSet", ds.Namespace+"/"+ds.Name, "template", h)
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, n any) { changed(n) },
	}
}

// rollout replaces the agents of an older template, one node at a time, until ctx ends.
func (s *nodeAgents) rollout(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		for {
			a := s.rollOne(ctx)
			if a == nil {
				break
			}
			// Wait until the new Pod is available, it is gone (node deleted, VM recreated), or
			// the template changed again (the next pass starts from the nodes still behind).
			select {
			case <-ctx.Done():
				return
			case <-a.ready:
			case <-a.done:
			case <-s.kick:
			}
		}
	}
}

// rollOne replaces the agent of one node still on an older template, preferring one that is
// not ready, and returns the new agent; nil when every agent runs the current template.
func (s *nodeAgents) rollOne(ctx context.Context) *agent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var stale []string
	for name, a := range s.agents {
		if a.template != s.template {
			stale = append(stale, name)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	slices.SortFunc(stale, func(x, y string) int {
		rx, ry := isClosed(s.agents[x].ready), isClosed(s.agents[y].ready)
		switch {
		case rx == ry:
			return strings.Compare(x, y)
		case !rx:
			return -1
		default:
			return 1
		}
	})
	name := stale[0]
	old := s.agents[name]
	s.stopLocked(name, old)
	n, err := s.nodes.Get(name)
	if err != nil {
		return nil
	}
	vg, ok := nodeVolumeGroup(n)
	if !ok {
		return nil
	}
	klog.InfoS("lvmd DaemonSet rollout: replacing the node's Pod", "node", name, "from", old.template, "to", s.template)
	return s.startLocked(ctx, name, old.disks, vg)
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// configHash is AnnLVMDConfigHash's value for the lvmd.yaml text an lvmd loaded: its sha256
// (the same hash restart_lvmd computes from the ConfigMap).
func configHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}
