package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// The timeline gives an ordinal's downtime (old Pod seen terminating -> successor seen Ready)
// and its copy (source copier first seen -> sink seen Succeeded), from the events as they come;
// a copier of an earlier round and a sink that failed are not this round's copy.
func TestTimelineDowntimeAndCopies(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	pod := func(name, uid string, phase corev1.PodPhase, conds []corev1.PodCondition, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}, Status: corev1.PodStatus{Phase: phase, Conditions: conds}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: t0}
		}
		return p
	}
	tl := newTimeline(func() {})
	ev := func(ms int, p *corev1.Pod, deleted bool) { tl.observeAt(p, deleted, at(ms)) }

	ev(0, pod("hist-0", "old", corev1.PodRunning, ready, false), false)
	ev(0, pod("hist-1", "old1", corev1.PodRunning, ready, false), false)
	ev(50, pod("hist-0-copy-source", "stale-src", corev1.PodRunning, nil, false), false) // an earlier round's
	ev(60, pod("hist-0-copy-sink", "stale-sink", corev1.PodSucceeded, nil, false), false)
	after := at(100)
	old := tl.Current()
	// This round: the copy of hist-0 (3.2 s), the cut-over, the new Pod Ready 2.5 s after the
	// old one was seen terminating.
	ev(1000, pod("hist-0-copy-source", "src", corev1.PodPending, nil, false), false)
	ev(1100, pod("hist-0-copy-sink", "sink", corev1.PodPending, nil, false), false)
	ev(1500, pod("hist-0-copy-source", "src", corev1.PodRunning, ready, false), false)
	ev(4200, pod("hist-0-copy-sink", "sink", corev1.PodSucceeded, nil, false), false)
	ev(4300, pod("hist-0-copy-sink", "sink", corev1.PodSucceeded, nil, false), false) // a later update
	ev(4500, pod("hist-0", "old", corev1.PodRunning, ready, true), false)
	ev(5500, pod("hist-0", "old", corev1.PodRunning, ready, true), true)
	ev(5600, pod("hist-0", "new", corev1.PodPending, nil, false), false)
	ev(6000, pod("hist-0", "new", corev1.PodRunning, nil, false), false)
	ev(7000, pod("hist-0", "new", corev1.PodRunning, ready, false), false)
	// hist-1's sink failed: no copy.
	ev(1200, pod("hist-1-copy-source", "src1", corev1.PodRunning, nil, false), false)
	ev(3000, pod("hist-1-copy-sink", "sink1", corev1.PodFailed, nil, false), false)

	moves, err := tl.Moves(map[string]types.UID{"hist-0": old["hist-0"]})
	if err != nil || len(moves) != 1 {
		t.Fatalf("moves %+v, %v", moves, err)
	}
	if got := moves[0].Latency(); got != 2500*time.Millisecond {
		t.Errorf("downtime %v, want 2.5s (terminating at 4.5 s -> Ready at 7 s)", got)
	}
	copies, err := tl.Copies([]string{"hist-0"}, after)
	if err != nil || len(copies) != 1 {
		t.Fatalf("copies %+v, %v", copies, err)
	}
	if got := copies[0].Duration(); got != 3200*time.Millisecond {
		t.Errorf("copy %v, want 3.2s (source seen at 1 s -> sink Succeeded at 4.2 s), not the earlier round's", got)
	}
	if c, err := tl.Copies([]string{"hist-0", "hist-1"}, after); err == nil || !strings.Contains(err.Error(), "hist-1") || len(c) != 1 {
		t.Errorf("a failed sink: copies %+v, error %v; want hist-1 named", c, err)
	}
	if _, err := tl.Moves(map[string]types.UID{"hist-1": old["hist-1"]}); err == nil {
		t.Error("hist-1 was never replaced, yet its move is complete")
	}
}

// warmRound is a round of n ordinals whose downtimes are down and copies cp.
func warmRound(mode, to string, wall time.Duration, down, cp []time.Duration) WarmRound {
	t0 := time.Unix(0, 0)
	rd := WarmRound{Mode: mode, To: to, Wall: wall}
	at := t0
	for i, d := range down {
		pod := stsutil.PodName(MigSet, int32(i))
		rd.Moves = append(rd.Moves, Move{Pod: pod, Deleting: at, Ready: at.Add(d)})
		at = at.Add(d + time.Second)
		if i < len(cp) {
			rd.Copies = append(rd.Copies, Copy{Pod: pod, Start: t0, Done: t0.Add(cp[i])})
		}
	}
	return rd
}

func secsOf(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, s := range v {
		out[i] = time.Duration(s * float64(time.Second))
	}
	return out
}

// The verdicts: the downtime ratio on the medians and the wall time against cold + copies are
// figures (reported once every round was measured), the checks a target; a cell that did not
// measure every round, or found a problem, does not pass.
func TestWarmVerdicts(t *testing.T) {
	s := time.Second
	cell := func(warmDown []time.Duration, warmWall time.Duration, problem string) WarmResult {
		r := WarmResult{Ordinals: 3, Replicas: 5, Rounds: []WarmRound{
			warmRound("warm", "pool-b", warmWall/2, warmDown, secsOf(3, 3, 3)),
			warmRound("cold", "pool-a", 20*s, secsOf(4, 4, 5), nil),
			warmRound("cold", "pool-b", 20*s, secsOf(4, 4, 4), nil),
			warmRound("warm", "pool-a", warmWall/2, warmDown, secsOf(3, 3, 4)),
		}}
		if problem != "" {
			r.Rounds[3].Problems = []string{problem}
		}
		return r
	}
	holds := func(r WarmResult) []string {
		var out []string
		for _, v := range r.verdicts() {
			out = append(out, v[2])
		}
		return out
	}
	// Cold median 4 s; warm 4.2 s: x1.05. Cold walls 40 s + copies 19 s = 59 s.
	good := cell(secsOf(4.2, 4.2, 9), 60*s, "")
	if got := good.DowntimeRatio(); got < 1.049 || got > 1.051 {
		t.Errorf("downtime ratio %.3f, want 1.05 (medians 4.2 s / 4 s)", got)
	}
	if d := good.Downtime("warm"); d.N != 6 || d.Max != 9*s {
		t.Errorf("warm downtime %+v, want 6 moves, max 9 s", d)
	}
	if c := good.CopyTime(); c.N != 6 || c.Median != 3*s || c.Max != 4*s {
		t.Errorf("copy time %+v, want 6 copies, median 3 s, max 4 s", c)
	}
	if wall, _, copies, n := good.Totals("warm"); wall != 60*s || copies != 19*s || n != 2 {
		t.Errorf("warm totals: wall %v, copies %v, %d rounds", wall, copies, n)
	}
	for name, tc := range map[string]struct {
		r    WarmResult
		want []string
	}{
		"holds":                                 {good, []string{"reported", "reported", "yes"}},
		"warm down longer: a figure, no target": {cell(secsOf(5, 5, 5), 60*s, ""), []string{"reported", "reported", "yes"}},
		"a bystander touched":                   {cell(secsOf(4, 4, 4), 60*s, "pvc/data-hist-4 of an ordinal not moved changed"), []string{"reported", "reported", "**NO**"}},
	} {
		if got := holds(tc.r); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
	short := good
	short.Rounds = short.Rounds[:3]
	failed := good
	failed.Err = "warm to pool-a: exit 1"
	missing := cell(secsOf(4, 4, 4), 60*s, "")
	missing.Rounds[0].Copies = missing.Rounds[0].Copies[:2]
	for name, r := range map[string]WarmResult{"three rounds": short, "failed": failed, "a copy not seen": missing} {
		if got := holds(r); !slices.Equal(got, []string{"**NO**", "**NO**", "**NO**"}) {
			t.Errorf("%s: %v, want nothing to hold", name, got)
		}
	}
	// A cell that stopped early still shows what it measured.
	if v := failed.verdicts(); !strings.Contains(v[0][1], "4.20s vs 4.00s (x1.050)") || !strings.Contains(v[0][1], "incomplete: 4 of 4 rounds, warm to pool-a: exit 1") {
		t.Errorf("failed cell's downtime row: %q", v[0][1])
	}
	if v := (WarmResult{Err: "creating StatefulSet: forbidden"}).verdicts(); v[0][1] != "failed: creating StatefulSet: forbidden" || v[0][2] != "**NO**" {
		t.Errorf("nothing measured: %v", v[0])
	}
}

// The section lists every moved ordinal with its downtime per round and, for warm rounds, its
// copy time in brackets.
func TestWarmMarkdown(t *testing.T) {
	r := WarmResult{Ordinals: 2, Replicas: 4, ReadyAfter: 2 * time.Second, CopyFor: 3 * time.Second, Rounds: []WarmRound{
		warmRound("warm", "pool-b", 30*time.Second, secsOf(4.25, 4.5), secsOf(3.5, 3.75)),
		warmRound("cold", "pool-a", 20*time.Second, secsOf(4, 4.75), nil),
	}}
	var b strings.Builder
	r.markdown(func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) })
	out := b.String()
	for _, want := range []string{"| 0 | 4.25 (3.50) | 4.00 |", "| 1 | 4.50 (3.75) | 4.75 |", "| warm | 2 | 4.50 | 4.50 | 3.75 | 3.75 | 30.00 / - |"} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q:\n%s", want, out)
		}
	}
}

// applyError quotes the stopped ordinal's sentence from terraform's wrapped output.
func TestApplyError(t *testing.T) {
	out := `Error: Migration Step Failed

Restarting or moving ordinal(s) 9, 8, 7, 6, 5, 4, 3, 2, 1, 0 of StatefulSet
warm/hist.

Ordinal 4 (Pod hist-4) stopped: PV pvc-da35 of PVC data-hist-4 is pinned to "node-a", not to the
Pod's node node-b. Ordinals that were not being moved were not touched.
`
	if got, want := applyError(out), `Ordinal 4 (Pod hist-4) stopped: PV pvc-da35 of PVC data-hist-4 is pinned to "node-a", not to the Pod's node node-b.`; got != want {
		t.Errorf("applyError = %q, want %q", got, want)
	}
	if got := applyError("Error: Invalid provider configuration\n\n  no host\n"); got != "no host" {
		t.Errorf("no ordinal stopped: %q, want the last line", got)
	}
}

// A Pod on another node than its TopoLVM volume's is caught.
func TestVolumeFitsNode(t *testing.T) {
	pinned := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "topology.topolvm.io/node", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}}}}}}}}}
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"topology.topolvm.io/node": name}}}
	}
	if !volumeFitsNode(pinned, node("node-a")) || volumeFitsNode(pinned, node("node-b")) {
		t.Error("a PV pinned to node-a: want it to fit node-a only")
	}
	if !volumeFitsNode(&corev1.PersistentVolume{}, node("node-b")) {
		t.Error("a PV without node affinity fits every node")
	}
}

func TestPodDeletes(t *testing.T) {
	r := Requests{"DELETE /api/v1/namespaces/warm/pods/hist-9-copy-source": 40, "DELETE /api/v1/namespaces/warm/pods/hist-9": 1,
		"DELETE /api/v1/namespaces/warm/persistentvolumeclaims/data-hist-9": 1, "GET /api/v1/namespaces/warm/pods/hist-9": 7}
	if got := podDeletes(r); got != 41 {
		t.Errorf("podDeletes = %d, want 41", got)
	}
}

// changed names the objects whose UID or resourceVersion moved, and the ones gone.
func TestChanged(t *testing.T) {
	before := map[string]string{"pod/hist-4": "a@1", "pvc/data-hist-4": "b@2", "pod/hist-5": "c@3"}
	after := map[string]string{"pod/hist-4": "a@1", "pvc/data-hist-4": "b@7"}
	if got := changed(before, after); !slices.Equal(got, []string{"pod/hist-5", "pvc/data-hist-4"}) {
		t.Errorf("changed %v", got)
	}
	if got := changed(before, before); len(got) != 0 {
		t.Errorf("nothing changed, got %v", got)
	}
}
