package planner

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// placement is a Pod's compiled placement constraints plus a per-node cache
// of verdicts, shared by every Pod with the same constraints.
type placement struct {
	key          string
	required     nodeaffinity.RequiredNodeAffinity
	nodeSelector []string // sorted keys
	selector     map[string]string
	terms        [][]singleReq
	tolerations  []corev1.Toleration
	fails        []string // per node: "" unknown, "-" ok, else reason
	// durable: judge only what stays true between a plan and its apply (the node exists, the
	// template's nodeSelector and required affinity, NoExecute taints, PV pins), not cordons,
	// NoSchedule taints or free capacity.
	durable bool
}

type singleReq struct {
	sel  *nodeaffinity.NodeSelector
	desc string
}

func (ix *Index) placementFor(pod *corev1.Pod, durable bool) *placement {
	var required *corev1.NodeSelector
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	keyBytes, _ := json.Marshal([]interface{}{pod.Spec.NodeSelector, required, pod.Spec.Tolerations, durable})
	key := string(keyBytes)
	if p, ok := ix.placeCache[key]; ok {
		return p
	}
	p := &placement{
		key:         key,
		required:    nodeaffinity.GetRequiredNodeAffinity(pod),
		selector:    pod.Spec.NodeSelector,
		tolerations: pod.Spec.Tolerations,
		fails:       make([]string, len(ix.Nodes)),
		durable:     durable,
	}
	for k := range pod.Spec.NodeSelector {
		p.nodeSelector = append(p.nodeSelector, k)
	}
	sort.Strings(p.nodeSelector)
	if required != nil {
		for _, t := range required.NodeSelectorTerms {
			var reqs []singleReq
			for _, e := range t.MatchExpressions {
				sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{e}}}})
				if err == nil {
					reqs = append(reqs, singleReq{sel: sel, desc: describeRequirement(e)})
				}
			}
			for _, e := range t.MatchFields {
				sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{e}}}})
				if err == nil {
					reqs = append(reqs, singleReq{sel: sel, desc: "field " + describeRequirement(e)})
				}
			}
			p.terms = append(p.terms, reqs)
		}
	}
	ix.placeCache[key] = p
	return p
}

// nodeFails returns "" when the Pod's own constraints admit node i, else a
// verb phrase naming the failing term ("fails the pod's ...", "is cordoned").
func (ix *Index) nodeFails(p *placement, i int) string {
	if r := p.fails[i]; r != "" {
		if r == "-" {
			return ""
		}
		return r
	}
	r := ix.explainNode(p, ix.Nodes[i])
	if r == "" {
		p.fails[i] = "-"
	} else {
		p.fails[i] = r
	}
	return r
}

// explainNode phrases judgeNode's verdict for the plan: which nodeSelector
// key or affinity term fails, the cordon, or the untolerated taint.
func (ix *Index) explainNode(p *placement, n *corev1.Node) string {
	check := CheckNow
	if p.durable {
		check = checkDurable
	}
	switch f, t := JudgeNode(p.required, p.tolerations, n, check); f {
	case failCordon:
		return "is cordoned (spec.unschedulable)"
	case failAffinity:
		for _, k := range p.nodeSelector {
			if v, has := n.Labels[k]; !has || v != p.selector[k] {
				return fmt.Sprintf("fails the pod's nodeSelector %s=%s", k, p.selector[k])
			}
		}
		var failing []string
		for _, term := range p.terms {
			for _, r := range term {
				if !r.sel.Match(n) {
					failing = append(failing, r.desc)
					break
				}
			}
		}
		if len(failing) == 0 {
			failing = []string{"(invalid term)"}
		}
		return "fails the pod's required node affinity " + strings.Join(failing, " and ")
	case failTaint:
		return fmt.Sprintf("has taint %s the pod does not tolerate", t.ToString())
	}
	return ""
}

// PodCanSchedule asks kube-scheduler's Filter plugins (scheduling.go) whether pod (spec from the
// template it will be created from) can be placed with the claims it mounts, against the Pods
// the same plan placed before it. The reason is the scheduler's own message
// ("0/6 nodes are available: 3 Insufficient cpu, ...").
func PodCanSchedule(pod *corev1.Pod, claims []ClaimState, ix *Index) Verdict {
	return ix.Placer().Place(ix, pod, claims, false)
}

// PodCanComeBack is PodCanSchedule judged only on what stays true between a plan and its apply:
// whether the template's nodeSelector, required node affinity and NoExecute tolerations still
// admit the node every PV pins the Pod to (or some node, for a Pod without pinned PVs). A cordon,
// a NoSchedule taint or free capacity can change before the apply; they are judged when the Pod
// is actually recreated (the migration's placement checks, at plan and again at apply).
func PodCanComeBack(pod *corev1.Pod, claims []ClaimState, ix *Index) Verdict {
	prefix := pod.Name + ": "
	if o := stsutil.OrdinalOf(pod.Name); o >= 0 {
		prefix = fmt.Sprintf("ordinal %d: ", o)
	}
	p := ix.placementFor(pod, true)

	type pinned struct {
		c   ClaimState
		pin *pvPin
	}
	var pins []pinned
	for _, c := range claims {
		if c.PV == nil {
			continue
		}
		pin := ix.Pin(c.PV)
		if pin.Unconstrained {
			continue
		}
		if len(pin.Nodes) == 0 {
			what, short := fmt.Sprintf("PV %s has node affinity %s that matches no node", c.PV.Name, pin.Desc),
				fmt.Sprintf("PV %s of PVC %s has node affinity %s that matches no node", c.PV.Name, c.PVC, pin.Desc)
			if pin.value != "" {
				what = fmt.Sprintf("PV %s is pinned to node %s (%s), which does not exist", c.PV.Name, pin.value, pin.key)
				short = fmt.Sprintf("PV %s of PVC %s is pinned to node %s (%s), which does not exist", c.PV.Name, c.PVC, pin.value, pin.key)
			}
			const anywhere = "; the Pod cannot run anywhere while it keeps this volume"
			return Verdict{Node: pin.value, Reason: fmt.Sprintf("%s%s%s (Pod %s, PVC %s)", prefix, what, anywhere, pod.Name, c.PVC), Short: short + anywhere}
		}
		pins = append(pins, pinned{c, pin})
	}

	if len(pins) > 0 {
		cands := pins[0].pin.Nodes
		for _, pn := range pins[1:] {
			in := make(map[int]bool, len(pn.pin.Nodes))
			for _, i := range pn.pin.Nodes {
				in[i] = true
			}
			var keep []int
			for _, i := range cands {
				if in[i] {
					keep = append(keep, i)
				}
			}
			cands = keep
		}
		if len(cands) == 0 {
			var parts []string
			for _, pn := range pins {
				parts = append(parts, fmt.Sprintf("PV %s (PVC %s) admits %s", pn.c.PV.Name, pn.c.PVC, ix.nodeList(pn.pin.Nodes)))
			}
			short := "the Pod's PVs are pinned to different nodes, no node satisfies them all: " + strings.Join(parts, "; ")
			return Verdict{Reason: fmt.Sprintf("%s%s (Pod %s)", prefix, short, pod.Name), Short: short}
		}
		var fails []string
		for _, i := range cands {
			r := ix.nodeFails(p, i)
			if r == "" {
				return Verdict{OK: true, Node: ix.Nodes[i].Name}
			}
			if len(fails) < 3 {
				fails = append(fails, ix.Nodes[i].Name+" "+r)
			}
		}
		first := pins[0]
		if len(cands) == 1 {
			n := ix.Nodes[cands[0]].Name
			key := first.pin.key
			if key == "" {
				key = first.pin.Desc
			}
			fail := strings.TrimPrefix(fails[0], n+" ")
			return Verdict{Node: n, Reason: fmt.Sprintf("%sPV %s is pinned to node %s (%s); that node %s (Pod %s, PVC %s)",
				prefix, first.c.PV.Name, n, key, fail, pod.Name, first.c.PVC),
				Short: fmt.Sprintf("PV %s of PVC %s is pinned to node %s (%s), which %s", first.c.PV.Name, first.c.PVC, n, key, fail)}
		}
		return Verdict{Reason: fmt.Sprintf("%sPV %s (PVC %s) admits nodes %s; none can run Pod %s: %s",
			prefix, first.c.PV.Name, first.c.PVC, first.pin.Desc, pod.Name, strings.Join(fails, "; ")),
			Short: fmt.Sprintf("PV %s of PVC %s admits nodes %s; none can run the Pod: %s",
				first.c.PV.Name, first.c.PVC, first.pin.Desc, strings.Join(fails, "; "))}
	}

	// Without a pinned PV the Pod can come back wherever its template's placement admits a node.
	for i := range ix.Nodes {
		if ix.nodeFails(p, i) == "" {
			return Verdict{OK: true, Node: ix.Nodes[i].Name}
		}
	}
	return Verdict{Reason: fmt.Sprintf("%sno node matches the placement of Pod %s", prefix, pod.Name), Short: "no node matches the Pod's placement"}
}

func (ix *Index) nodeList(idx []int) string {
	var names []string
	for i, n := range idx {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(idx)-3))
			break
		}
		names = append(names, ix.Nodes[n].Name)
	}
	return "[" + strings.Join(names, ", ") + "]"
}
