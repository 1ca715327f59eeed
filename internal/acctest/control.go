package acctest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// EnvControl is the DIR/env key of the sandbox's control endpoint (base URL, loopback HTTP).
const EnvControl = "OLAPGKE_SANDBOX_CONTROL"

// Recreation modes of RecreateNode.
const (
	// RecreateNewName: GKE deletes the node and creates a new one (new name, new UID) in the
	// same pool and zone.
	RecreateNewName = "new-name"
	// RecreateSameName: GKE recreates the VM under the same name; the Node object (UID) stays,
	// its VM identity (instance ID, system UUID, machine ID, boot ID) changes, its Local SSDs
	// (TopoLVM volume group) come back empty.
	RecreateSameName = "same-name"
)

// RecreateNode makes the sandbox's GKE recreate a node's VM as its node auto-repair does (an
// AUTO_REPAIR_NODES operation on the node's pool; the node is drained first) and returns once the
// operation is done. mode is RecreateNewName or RecreateSameName.
func (e *Env) RecreateNode(ctx context.Context, name, mode string) error {
	var op controlOperation
	if err := e.control(ctx, "/v1/nodes/"+name+":recreate", map[string]any{"mode": mode}, &op); err != nil {
		return err
	}
	if op.Error != nil {
		return fmt.Errorf("sandbox: recreating node %s: operation %s failed: %s", name, op.Name, op.Error.Message)
	}
	return nil
}

// RebootNode restarts a node's VM in place (a guest reboot, a reset, a host-error restart that
// recovers): the Node gets a new boot ID and keeps its VM identity, its Pods and its Local SSD
// data. It returns the new boot ID once the Node shows it.
func (e *Env) RebootNode(ctx context.Context, name string) (string, error) {
	var out struct {
		BootID string `json:"bootID"`
	}
	if err := e.control(ctx, "/v1/nodes/"+name+":reboot", map[string]any{}, &out); err != nil {
		return "", err
	}
	return out.BootID, nil
}

// StartClusterOperation starts a cluster-wide GKE operation of type typ (UPGRADE_MASTER or
// UPDATE_CLUSTER) that holds the cluster for d: meanwhile GKE refuses every mutating node pool
// call on it (FAILED_PRECONDITION, "Operation ... is currently upgrading cluster ..."). It
// returns once the operation started.
func (e *Env) StartClusterOperation(ctx context.Context, project, location, cluster, typ string, d time.Duration) error {
	return e.control(ctx, "/v1/clusters/"+project+"/"+location+"/"+cluster+":operation",
		map[string]any{"type": typ, "seconds": d.Seconds()}, &controlOperation{})
}

// SetOperationQuota sets the sandbox GKE's concurrent operations quota per cluster (GKE answers
// RESOURCE_EXHAUSTED "Too many operations: ..." when it is used up); 0 restores the default.
func (e *Env) SetOperationQuota(ctx context.Context, n int) error {
	return e.control(ctx, "/v1/quota", map[string]any{"concurrentOperations": n}, &struct{}{})
}

// controlOperation is what the control endpoint answers: the GKE Operation (REST JSON).
type controlOperation struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// control POSTs body as JSON to the sandbox's control endpoint and decodes the answer into out.
func (e *Env) control(ctx context.Context, path string, body, out any) error {
	base := e.Vars[EnvControl]
	if base == "" {
		return fmt.Errorf("sandbox: %s is not in %s/env (a sandbox binary older than its control endpoint?)", EnvControl, e.Dir)
	}
	method, reader := http.MethodGet, io.Reader(nil) // a nil body is a GET
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		method, reader = http.MethodPost, bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(base, "/")+path, reader)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("sandbox control %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("sandbox control %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var ge struct {
			Error struct {
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &ge) == nil && ge.Error.Message != "" {
			return fmt.Errorf("sandbox control %s: %s %s: %s", path, resp.Status, ge.Error.Status, ge.Error.Message)
		}
		return fmt.Errorf("sandbox control %s: %s: %s", path, resp.Status, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("sandbox control %s: answer %q: %w", path, data, err)
	}
	return nil
}

// Kubelet states of SetKubelet.
const (
	// KubeletDead: the node's kubelet stops (a hung VM, a network partition): no Lease renewal,
	// no status, no Pod deletion confirmed (Pods stay Terminating), TopoLVM's agent down, its
	// disks kept. The node lifecycle controller marks the node Unknown and taints it
	// node.kubernetes.io/unreachable after its node-monitor-grace-period (50 s).
	KubeletDead = "dead"
	// KubeletNotReady: the kubelet runs but its container runtime does not answer: the Lease is
	// renewed, Ready=False ("container runtime is down") is posted and the node lifecycle
	// controller taints the node node.kubernetes.io/not-ready at once; no Pod starts there and
	// no deletion is confirmed; running containers (TopoLVM's agent) and disks are kept.
	KubeletNotReady = "not-ready"
	// KubeletAlive undoes KubeletDead and KubeletNotReady: heartbeats resume, deletions finish,
	// the agent restarts over the same disks.
	KubeletAlive = "alive"
)

// SetKubelet sets the state of a node's kubelet (KubeletDead, KubeletNotReady or KubeletAlive) and returns once
// the sandbox applied it (the node lifecycle controller reacts later: wait for the Node).
func (e *Env) SetKubelet(ctx context.Context, node, state string) error {
	return e.control(ctx, "/v1/nodes/"+node+":kubelet", map[string]any{"state": state}, &struct{}{})
}

// DiskThreshold is one disk eviction threshold of a node's kubelet, on its filesystem.
type DiskThreshold struct {
	Signal string `json:"signal"` // nodefs.available or imagefs.available
	Soft   bool   `json:"soft"`
	Bytes  int64  `json:"bytes"` // the free space below which it is met
	Met    bool   `json:"met"`
}

// DiskReport is the sandbox kubelet's view of a node's filesystem after SetDisk.
type DiskReport struct {
	Node           string          `json:"node"`
	CapacityBytes  int64           `json:"capacityBytes"`
	AvailableBytes int64           `json:"availableBytes"`
	Thresholds     []DiskThreshold `json:"thresholds"`
}

// SetDisk sets how full a node's filesystem is (the sandbox control endpoint's :disk): bytes
// written outside the images and Pods (nodefs) and image layers (imagefs), on the one
// filesystem GKE gives both. The node's kubelet (its own eviction manager, in the sandbox) then
// posts DiskPressure past a threshold (the node lifecycle controller taints the node
// node.kubernetes.io/disk-pressure:NoSchedule) and evicts Pods in kubelet's order. It answers
// with the filesystem and the thresholds the kubelet judges.
func (e *Env) SetDisk(ctx context.Context, node string, nodefsUsedBytes, imagefsUsedBytes int64) (DiskReport, error) {
	var out DiskReport
	err := e.control(ctx, "/v1/nodes/"+node+":disk", map[string]any{"nodefsUsedBytes": nodefsUsedBytes, "imagefsUsedBytes": imagefsUsedBytes}, &out)
	return out, err
}

// SetRegionalQuota sets the sandbox GKE's Compute Engine regional quota limits (metric -> limit,
// e.g. {"N2_CPUS": 16}) that node pool creation is checked against: beyond them GKE refuses the
// call with 403 PERMISSION_DENIED "Insufficient regional quota to satisfy request: ...". An
// empty map removes every limit.
func (e *Env) SetRegionalQuota(ctx context.Context, limits map[string]float64) error {
	if limits == nil {
		limits = map[string]float64{}
	}
	return e.control(ctx, "/v1/quota/regional", map[string]any{"limits": limits}, &struct{}{})
}

// PoolReadiness is the sandbox's answer to whether a node pool's nodes can take TopoLVM volumes
// now (GET /v1/nodepools/{pool}:ready): each node Ready and uncordoned, prepared by the
// volume-group bootstrap, carrying TopoLVM's topology label, with a CSIStorageCapacity above 0
// for every topolvm.io StorageClass (unless its capacity annotation says the class is full).
type PoolReadiness struct {
	Pool  string `json:"pool"`
	Ready bool   `json:"ready"` // at least one node, and every node ready
	Nodes []struct {
		Name   string `json:"name"`
		Ready  bool   `json:"ready"`
		Reason string `json:"reason"`
	} `json:"nodes"`
}

// PoolReady asks the sandbox whether pool's nodes can take TopoLVM volumes now: the one answer
// tests wait on (not the planner's judgement they test, not their own).
func (e *Env) PoolReady(ctx context.Context, pool string) (PoolReadiness, error) {
	var out PoolReadiness
	err := e.control(ctx, "/v1/nodepools/"+pool+":ready", nil, &out)
	return out, err
}
