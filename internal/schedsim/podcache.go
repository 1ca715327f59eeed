package schedsim

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// PodCache memoizes, across Sims built one after another over snapshots of the same cluster,
// the normalized copy and framework.PodInfo of every bound pod version (UID and
// resourceVersion), as kube-scheduler's own cache keeps one PodInfo per pod between scheduling
// cycles and shares it with every snapshot it takes. A Sim never changes a bound pod or its
// PodInfo, so sharing them cannot change an answer: it only saves the copy and the request
// arithmetic (PodInfo.CalculateResource) of pods that did not change between two looks, which is
// most of a Sim's construction on a busy cluster. Pods without a UID or resourceVersion (test
// fixtures) are never cached. Entries for pods absent from the latest Sim are dropped.
//
// Safe for use by one Sim construction at a time (a mutex guards it).
type PodCache struct {
	mu      sync.Mutex
	entries map[types.UID]*cachedPod
	gen     uint64
	// Hits and Misses count lookups (for tests and benchmarks).
	Hits, Misses int
}

type cachedPod struct {
	rv   string
	pod  *corev1.Pod
	info *framework.PodInfo
	gen  uint64
}

// NewPodCache returns an empty cache.
func NewPodCache() *PodCache { return &PodCache{entries: map[types.UID]*cachedPod{}} }

// begin starts one Sim's construction: lookups mark what it used.
func (c *PodCache) begin() {
	c.mu.Lock()
	c.gen++
}

// end drops the entries the construction did not use and releases the cache.
func (c *PodCache) end() {
	for uid, e := range c.entries {
		if e.gen != c.gen {
			delete(c.entries, uid)
		}
	}
	c.mu.Unlock()
}

// get returns the normalized pod and its PodInfo for this version of pod, computing and keeping
// them on a miss.
func (c *PodCache) get(pod *corev1.Pod) (*corev1.Pod, *framework.PodInfo, error) {
	if pod.UID == "" || pod.ResourceVersion == "" {
		p := normalizePod(pod)
		pi, err := framework.NewPodInfo(p)
		return p, pi, err
	}
	if e, ok := c.entries[pod.UID]; ok && e.rv == pod.ResourceVersion {
		e.gen = c.gen
		c.Hits++
		return e.pod, e.info, nil
	}
	c.Misses++
	p := normalizePod(pod)
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		return nil, nil, err
	}
	c.entries[pod.UID] = &cachedPod{rv: pod.ResourceVersion, pod: p, info: pi, gen: c.gen}
	return p, pi, nil
}
