package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	rpccode "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"k8s.io/klog/v2"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/gke"
)

// The control endpoint lets tests in other processes make GKE do what GKE does on its own (or
// what another client would do to the cluster): recreate a node's VM, run a cluster-wide
// operation, lower the concurrent operations quota. Loopback only, plain HTTP, JSON, POST;
// DIR/env names it (OLAPGKE_SANDBOX_CONTROL). Answers: the GKE Operation as GKE's REST API
// writes it (protojson), or {"concurrentOperations": N}; errors as Google's JSON error
// {"error": {"code": HTTP, "status": "FAILED_PRECONDITION", "message": "..."}}.
//
//	POST /v1/nodes/{name}:recreate                          {"mode": "new-name" | "same-name"}
//	    AUTO_REPAIR_NODES operation; answers once it is DONE (the operation may carry an error)
//	POST /v1/nodes/{name}:reboot                            {}
//	    the VM restarts in place (new boot ID; same instance ID, system UUID, machine ID and
//	    Local SSD data); answers {"node": ..., "previousBootID": ..., "bootID": ...}
//	POST /v1/nodes/{name}:kubelet                           {"state": "dead" | "not-ready" | "alive"}
//	    dead: the node's kubelet stops (no Lease renewal, no status, no Pod deletion confirmed,
//	    TopoLVM's agent down, disks kept): the node lifecycle controller marks it Unknown and
//	    unreachable after its grace period; not-ready: the kubelet runs without its container
//	    runtime (Lease renewed, Ready=False "container runtime is down", no Pod started or
//	    deletion confirmed, running containers and disks kept): tainted not-ready at once;
//	    alive: undoes either. Answers {"node": ..., "state": ...}
//	POST /v1/nodes/{name}:disk                              {"nodefsUsedBytes": N, "imagefsUsedBytes": N}
//	    how full the node's filesystem is (GKE keeps kubelet's directory and the images on one);
//	    the node's kubelet eviction shim (kubelet's own eviction manager) then posts DiskPressure,
//	    which taints the node, and evicts Pods in kubelet's order. Answers {"node", "capacityBytes",
//	    "availableBytes", "thresholds": [{"signal", "soft", "bytes", "met"}]}
//	POST /v1/clusters/{project}/{location}/{cluster}:operation  {"type": "UPGRADE_MASTER" | "UPDATE_CLUSTER", "seconds": N}
//	    starts a cluster-wide operation lasting N seconds; answers at once
//	GET  /v1/nodepools/{pool}:ready
//	    the sandbox's one answer to "can this pool's nodes take TopoLVM volumes now" (the rules
//	    of the ready marker, plus the bootstrap's start-up taint and cordons): {"pool", "ready",
//	    "nodes": [{"name", "ready", "reason"}]}; ready needs at least one node
//	POST /v1/quota                                          {"concurrentOperations": N}
//	    concurrent operations per cluster (0: back to the default)
//	POST /v1/quota/regional                                 {"limits": {"N2_CPUS": 16, "LOCAL_SSD_TOTAL_GB": 1500}}
//	    Compute Engine regional quota limits that node pool creation is checked against (GKE
//	    refuses with 403 PERMISSION_DENIED "Insufficient regional quota ..."); {} removes them

// controlTimeout bounds a request that waits for an operation (a recreation drains a node).
const controlTimeout = 5 * time.Minute

// startControl serves the control endpoint on a loopback port until ctx ends and returns its base
// URL (http://127.0.0.1:PORT).
func startControl(ctx context.Context, srv *gke.Server, poolReady poolReadyFunc) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen for the control endpoint: %w", err)
	}
	hs := &http.Server{Handler: controlHandler(srv, poolReady), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "control endpoint stopped")
		}
	}()
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	return "http://" + l.Addr().String(), nil
}

// poolReadyFunc answers GET /v1/nodepools/{pool}:ready (readPoolReadiness).
type poolReadyFunc func(ctx context.Context, pool string) (poolReadiness, error)

func controlHandler(srv *gke.Server, poolReady poolReadyFunc) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/nodepools/", func(w http.ResponseWriter, r *http.Request) {
		pool, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/v1/nodepools/"), ":ready")
		if !ok || pool == "" || strings.Contains(pool, "/") || poolReady == nil {
			writeError(w, status.Errorf(codes.NotFound, "no such control call GET %s: use /v1/nodepools/{pool}:ready", r.URL.Path))
			return
		}
		ans, err := poolReady(r.Context(), pool)
		if err != nil {
			writeError(w, status.Errorf(codes.Internal, "reading the readiness of node pool %s: %v", pool, err))
			return
		}
		writeJSON(w, http.StatusOK, ans)
	})
	mux.HandleFunc("POST /v1/nodes/", func(w http.ResponseWriter, r *http.Request) {
		rest := strings.TrimPrefix(r.URL.Path, "/v1/nodes/")
		if name, ok := strings.CutSuffix(rest, ":reboot"); ok && name != "" && !strings.Contains(name, "/") {
			var body struct{}
			if !readBody(w, r, &body) {
				return
			}
			prev, boot, err := srv.RebootNode(r.Context(), name)
			if err != nil {
				writeError(w, err)
				return
			}
			klog.InfoS("control: node rebooted", "node", name, "previousBootID", prev, "bootID", boot)
			writeJSON(w, http.StatusOK, map[string]string{"node": name, "previousBootID": prev, "bootID": boot})
			return
		}
		if name, ok := strings.CutSuffix(rest, ":kubelet"); ok && name != "" && !strings.Contains(name, "/") {
			var body struct {
				State gke.KubeletState `json:"state"`
			}
			if !readBody(w, r, &body) {
				return
			}
			if err := srv.SetKubelet(r.Context(), name, body.State); err != nil {
				writeError(w, err)
				return
			}
			klog.InfoS("control: kubelet set", "node", name, "state", body.State)
			writeJSON(w, http.StatusOK, map[string]string{"node": name, "state": string(body.State)})
			return
		}
		if name, ok := strings.CutSuffix(rest, ":disk"); ok && name != "" && !strings.Contains(name, "/") {
			var body gke.DiskUsage
			if !readBody(w, r, &body) {
				return
			}
			rep, err := srv.SetDisk(r.Context(), name, body)
			if err != nil {
				writeError(w, err)
				return
			}
			klog.InfoS("control: disk set", "node", name, "nodefsUsedBytes", body.NodefsUsedBytes, "imagefsUsedBytes", body.ImagefsUsedBytes, "availableBytes", rep.AvailableBytes)
			writeJSON(w, http.StatusOK, rep)
			return
		}
		name, ok := strings.CutSuffix(rest, ":recreate")
		if !ok || name == "" || strings.Contains(name, "/") {
			writeError(w, status.Errorf(codes.NotFound, "no such control call %s: use /v1/nodes/{name}:recreate, :reboot, :kubelet or :disk", r.URL.Path))
			return
		}
		var body struct {
			Mode gke.RecreateMode `json:"mode"`
		}
		if !readBody(w, r, &body) {
			return
		}
		op, err := srv.RecreateNode(name, body.Mode)
		if err != nil {
			writeError(w, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), controlTimeout)
		defer cancel()
		done, err := srv.AwaitOperation(ctx, op)
		if err != nil {
			writeError(w, status.Errorf(codes.DeadlineExceeded, "operation %s not done: %v", op.GetName(), err))
			return
		}
		klog.InfoS("control: node recreated", "node", name, "mode", body.Mode, "operation", done.GetName(), "detail", done.GetDetail())
		writeOperation(w, done)
	})
	mux.HandleFunc("POST /v1/clusters/", func(w http.ResponseWriter, r *http.Request) {
		path, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/v1/clusters/"), ":operation")
		parts := strings.Split(path, "/")
		if !ok || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			writeError(w, status.Errorf(codes.NotFound, "no such control call %s: use /v1/clusters/{project}/{location}/{cluster}:operation", r.URL.Path))
			return
		}
		var body struct {
			Type    string  `json:"type"`
			Seconds float64 `json:"seconds"`
		}
		if !readBody(w, r, &body) {
			return
		}
		typ, known := containerpb.Operation_Type_value[body.Type]
		if !known {
			writeError(w, status.Errorf(codes.InvalidArgument, "unknown operation type %q", body.Type))
			return
		}
		d := time.Duration(body.Seconds * float64(time.Second))
		op, err := srv.StartClusterOperation(parts[0], parts[1], parts[2], containerpb.Operation_Type(typ), d)
		if err != nil {
			writeError(w, err)
			return
		}
		writeOperation(w, op)
	})
	mux.HandleFunc("POST /v1/quota", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ConcurrentOperations int `json:"concurrentOperations"`
		}
		if !readBody(w, r, &body) {
			return
		}
		n, err := srv.SetOperationQuota(body.ConcurrentOperations)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"concurrentOperations": n})
	})
	mux.HandleFunc("POST /v1/quota/regional", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Limits map[string]float64 `json:"limits"`
		}
		if !readBody(w, r, &body) {
			return
		}
		l, err := srv.SetRegionalQuota(body.Limits)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"limits": l})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, status.Errorf(codes.NotFound, "no such control call %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// readBody decodes a JSON body strictly; on failure it answers 400 and returns false.
func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, status.Errorf(codes.InvalidArgument, "request body: %v", err))
		return false
	}
	return true
}

func writeOperation(w http.ResponseWriter, op *containerpb.Operation) {
	b, err := protojson.Marshal(op)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// httpCodes maps gRPC codes to HTTP as Google's REST APIs do.
var httpCodes = map[codes.Code]int{
	codes.InvalidArgument:    http.StatusBadRequest,
	codes.FailedPrecondition: http.StatusBadRequest,
	codes.NotFound:           http.StatusNotFound,
	codes.PermissionDenied:   http.StatusForbidden,
	codes.AlreadyExists:      http.StatusConflict,
	codes.Aborted:            http.StatusConflict,
	codes.ResourceExhausted:  http.StatusTooManyRequests,
	codes.DeadlineExceeded:   http.StatusGatewayTimeout,
}

func writeError(w http.ResponseWriter, err error) {
	st := status.Convert(err)
	code, ok := httpCodes[st.Code()]
	if !ok {
		code = http.StatusInternalServerError
	}
	writeJSON(w, code, map[string]any{"error": map[string]any{
		"code": code, "status": rpccode.Code(st.Code()).String(), "message": st.Message(),
	}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
