package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
)

// GRPCConfig sets the faults of the gRPC proxy (the GKE emulator's ClusterManager API).
type GRPCConfig struct {
	Seed      uint64
	MaxFaults int
	// Rates per status code (probability per eligible call): codes.Unavailable and
	// codes.ResourceExhausted are what GKE answers under load, codes.FailedPrecondition
	// what it answers while another operation runs on the cluster.
	Rates map[codes.Code]float64
	// SlowRate delays a call by SlowDelay (default 2s) before forwarding it.
	SlowRate  float64
	SlowDelay time.Duration
	// Eligible, if set, limits faults to the full method names it accepts
	// ("/google.container.v1.ClusterManager/CreateNodePool").
	Eligible func(method string) bool
}

// GRPCEvent is one injected gRPC fault.
type GRPCEvent struct {
	Method string
	Code   string // a codes.Code name, or "slow"
}

// GRPC is a running transparent gRPC proxy on 127.0.0.1. Messages are forwarded as raw bytes
// (no generated code needed): any unary or streaming method of the upstream is proxied.
type GRPC struct {
	// Addr is 127.0.0.1:PORT (insecure transport, like the emulator).
	Addr string

	cfg  GRPCConfig
	srv  *grpc.Server
	conn *grpc.ClientConn

	mu       sync.Mutex
	rng      *rand.Rand
	disabled bool
	events   []GRPCEvent
}

// SetEnabled turns fault injection on or off (calls are always forwarded).
func (g *GRPC) SetEnabled(on bool) {
	g.mu.Lock()
	g.disabled = !on
	g.mu.Unlock()
}

// rawCodec passes message bytes through unchanged. It is only ever forced on the proxy's own
// server and client streams, so no message type is ever decoded.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("faultproxy raw codec: unexpected %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("faultproxy raw codec: unexpected %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

var _ encoding.Codec = rawCodec{}

// NewGRPC starts a proxy to upstream (host:port on loopback, insecure as the emulator is).
func NewGRPC(upstream string, cfg GRPCConfig) (*GRPC, error) {
	host, _, err := net.SplitHostPort(upstream)
	if err != nil {
		return nil, fmt.Errorf("gRPC upstream %q: %w", upstream, err)
	}
	if err := requireLoopback(host); err != nil {
		return nil, err
	}
	if cfg.SlowDelay <= 0 {
		cfg.SlowDelay = 2 * time.Second
	}
	conn, err := grpc.NewClient(upstream, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	g := &GRPC{Addr: ln.Addr().String(), cfg: cfg, conn: conn, rng: newRNG(cfg.Seed)}
	g.srv = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(g.handle))
	go func() { _ = g.srv.Serve(ln) }()
	return g, nil
}

// Events returns the faults injected so far.
func (g *GRPC) Events() []GRPCEvent {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]GRPCEvent(nil), g.events...)
}

// Summary counts injected faults per method and code, e.g. "CreateNodePool:Unavailable=2".
func (g *GRPC) Summary() string {
	counts := map[string]int{}
	var keys []string
	for _, e := range g.Events() {
		k := e.Method[strings.LastIndex(e.Method, "/")+1:] + ":" + e.Code
		if counts[k] == 0 {
			keys = append(keys, k)
		}
		counts[k]++
	}
	if len(keys) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
	}
	return strings.Join(parts, " ")
}

// Close stops the proxy.
func (g *GRPC) Close() {
	g.srv.Stop()
	_ = g.conn.Close()
}

// pick returns the fault for a call: a status error, slow=true, or neither.
func (g *GRPC) pick(method string) (err error, slow bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.disabled || len(g.events) >= g.cfg.MaxFaults || (g.cfg.Eligible != nil && !g.cfg.Eligible(method)) {
		return nil, false
	}
	for _, c := range []codes.Code{codes.Unavailable, codes.ResourceExhausted, codes.FailedPrecondition, codes.Internal, codes.DeadlineExceeded} {
		if r := g.cfg.Rates[c]; r > 0 && g.rng.Float64() < r {
			g.events = append(g.events, GRPCEvent{Method: method, Code: c.String()})
			return status.Errorf(c, "injected by faultproxy into %s", method), false
		}
	}
	if g.cfg.SlowRate > 0 && g.rng.Float64() < g.cfg.SlowRate {
		g.events = append(g.events, GRPCEvent{Method: method, Code: "slow"})
		return nil, true
	}
	return nil, false
}

// handle proxies one call of any method: the client's messages to upstream and back.
func (g *GRPC) handle(_ any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return status.Error(codes.Internal, "faultproxy: no method in stream")
	}
	ferr, slow := g.pick(method)
	if ferr != nil {
		return ferr
	}
	ctx := ss.Context()
	if slow {
		select {
		case <-time.After(g.cfg.SlowDelay):
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs, err := g.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	// Client -> upstream.
	upErr := make(chan error, 1)
	go func() {
		for {
			var msg []byte
			if err := ss.RecvMsg(&msg); err != nil {
				_ = cs.CloseSend()
				upErr <- nil
				return
			}
			if err := cs.SendMsg(&msg); err != nil {
				upErr <- err
				return
			}
		}
	}()
	// Upstream -> client.
	first := true
	for {
		var msg []byte
		if err := cs.RecvMsg(&msg); err != nil {
			if first {
				if md, herr := cs.Header(); herr == nil {
					_ = ss.SendHeader(md)
				}
			}
			ss.SetTrailer(cs.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if first {
			if md, herr := cs.Header(); herr == nil {
				_ = ss.SendHeader(md)
			}
			first = false
		}
		if err := ss.SendMsg(&msg); err != nil {
			return err
		}
	}
}
