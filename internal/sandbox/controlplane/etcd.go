package controlplane

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// startEtcd runs a single-member etcd on loopback with fsync off (the
// sandbox's data is disposable). It returns once the member serves clients.
// The ports are picked free and released before etcd binds them, so another
// process (a sandbox of a test package running in parallel) can take one in
// between: etcd then fails to listen, and it is started again on new ports.
func startEtcd(dir, logFile string) (*embed.Etcd, string, error) {
	for attempt := 1; ; attempt++ {
		e, u, err := startEtcdOnce(dir, logFile)
		// etcd may not wrap the listen error: its text is the fallback.
		inUse := errors.Is(err, syscall.EADDRINUSE) || err != nil && strings.Contains(err.Error(), "address already in use")
		if err == nil || attempt == 5 || !inUse {
			return e, u, err
		}
	}
}

func startEtcdOnce(dir, logFile string) (*embed.Etcd, string, error) {
	clientURL, err := freeLoopbackURL()
	if err != nil {
		return nil, "", err
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Name = "sandbox"
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true
	// One member: nobody to hear heartbeats from, so short ticks only make the
	// first (self-)election quicker (about 0.5 s of start-up with the defaults).
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.Logger = "zap"
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{logFile}
	// Keep the keyspace small for long-running sandboxes.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd failed while starting: %w", err)
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		e.Close()
		return nil, "", fmt.Errorf("etcd did not become ready within 60s")
	}
	return e, clientURL.String(), nil
}

// freeLoopbackURL picks a free port on 127.0.0.1. etcd binds its own
// listeners, so the port is released before etcd takes it (a small race that
// StartEtcd reports as an error).
func freeLoopbackURL() (*url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "http", Host: addr}, nil
}
