package sandboxtest

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readReady is DIR/ready as key -> value (pid, apiserver, apiserver-internal, gke).
func readReady(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "ready"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// portOf is the port of a host:port or of a URL's host.
func portOf(t *testing.T, addr string) int {
	t.Helper()
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = u.Host
	}
	i := strings.LastIndex(addr, ":")
	p, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("no port in %q", addr)
	}
	return p
}

// childNamed is the pid of parent's child process whose command name (/proc/PID/comm, at most
// 15 bytes) is name.
func childNamed(parent int, name string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited since ReadDir
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses, so cut at the last ')'.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		rest := strings.Fields(s[end+1:])
		if len(rest) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(rest[1]); ppid == parent && s[open+1:end] == name {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no child process %q of pid %d", name, parent)
}

// connsTo maps the local port of each of pid's established TCP connections to a port in ports
// to that remote port: the process's socket inodes (/proc/PID/fd) looked up in its network
// namespace's tables (/proc/PID/net/tcp and tcp6, where st 01 is ESTABLISHED). The local port
// of a client's connection is the port of the srcIP the API server logs for its requests.
func connsTo(pid int, ports ...int) (map[int]int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil {
			continue // closed since ReadDir
		}
		if ino, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	port := func(addr string) (int, error) {
		_, hex, _ := strings.Cut(addr, ":")
		p, err := strconv.ParseInt(hex, 16, 32)
		return int(p), err
	}
	conns := map[int]int{}
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
			fields := strings.Fields(line)
			if len(fields) < 10 || fields[3] != "01" || !inodes[fields[9]] {
				continue
			}
			local, err := port(fields[1])
			if err != nil {
				return nil, fmt.Errorf("%s: local address %q: %w", table, fields[1], err)
			}
			remote, err := port(fields[2])
			if err != nil {
				return nil, fmt.Errorf("%s: remote address %q: %w", table, fields[2], err)
			}
			if slices.Contains(ports, remote) {
				conns[local] = remote
			}
		}
	}
	return conns, nil
}

// requestLine is one request in the API server's log at -v 3 (httplog): the client's user agent
// and the port of its source address.
var requestLine = regexp.MustCompile(`"HTTP" verb=.* userAgent="([^"]*)" .*srcIP="127\.0\.0\.1:([0-9]+)"`)

// tlsAllowed says whether requests of userAgent from the sandbox process may arrive on the TLS
// port (none of olapgke-topolvm's may): kube-scheduler's
// (".../scheduler"; its events client has no suffix), which builds its clients from the
// kubeconfig file (client-go reads no credentials for a plain-HTTP server from one), and the API
// server's own loopback client, whose agent has no suffix either.
func tlsAllowed(userAgent string) bool {
	return strings.HasSuffix(userAgent, "/scheduler") || strings.HasSuffix(userAgent, "kubernetes/$Format")
}

// TestRealTopoLVM_OwnClientsUseTheInternalPort proves which API server port the sandbox's own
// clients use. They reach it on the loopback plain-HTTP/1.1 port (DIR/ready
// apiserver-internal), not on the TLS port users get: TLS and HTTP/2 were about a sixth of a
// 500-node start's CPU. A component that fell back to the TLS port would keep working, so only
// this test and the start-up benchmark would notice.
//
// Each request the API server logs (up -v 3) names its user agent and source port; the source
// port is the local port of one of the sandbox's or olapgke-topolvm's connections, and that
// connection's remote port says which listener served it. HTTP/2 multiplexes every client with
// the same TLS settings over one connection, so counting connections would not tell them apart.
func TestRealTopoLVM_OwnClientsUseTheInternalPort(t *testing.T) {
	p := startLoggedRealSandbox(t)
	ready := readReady(t, p.dir)
	sandboxPID, err := strconv.Atoi(ready["pid"])
	if err != nil {
		t.Fatalf("ready file pid=%q: %v", ready["pid"], err)
	}
	tlsPort, internalPort := portOf(t, ready["apiserver"]), portOf(t, ready["apiserver-internal"])
	childPID, err := childNamed(sandboxPID, "olapgke-topolvm")
	if err != nil {
		t.Fatal(err)
	}
	// The agents of olapgke-topolvm's requests are prefixed with childAgent below, whatever
	// their own user agent says.
	const childAgent = "[olapgke-topolvm process] "
	// Every client of the sandbox's own that must be seen on the internal port, by a part of its
	// user agent.
	want := map[string]string{
		"kubernetes/$Format/sandbox":      "the sandbox's clients (TopoLVM bootstrap, GKE emulator, readiness)",
		"kubernetes/$Format/kwok":         "KWOK",
		"-controller":                     "kube-controller-manager",
		childAgent:                        "olapgke-topolvm",
		"kubernetes/$Format/topolvm-node": "olapgke-topolvm's node agents (their shared cache)",
	}

	// agent -> listener port -> requests, over the requests whose connection is still open.
	var seen map[string]map[int]int
	poll(t, 60*time.Second, "requests of every client of the sandbox's own in the API server's log", func(context.Context) (bool, error) {
		conns, err := connsTo(sandboxPID, tlsPort, internalPort)
		if err != nil {
			return false, err
		}
		child, err := connsTo(childPID, tlsPort, internalPort)
		if err != nil {
			return false, err
		}
		log, err := os.ReadFile(filepath.Join(p.dir, "sandbox.log"))
		if err != nil {
			return false, err
		}
		seen = map[string]map[int]int{}
		for _, m := range requestLine.FindAllStringSubmatch(string(log), -1) {
			src, _ := strconv.Atoi(m[2])
			agent := m[1]
			listener, ok := conns[src]
			if l, fromChild := child[src]; fromChild {
				agent, listener, ok = childAgent+agent, l, true
			}
			if !ok {
				continue // its connection is closed: the port may serve another one by now
			}
			if seen[agent] == nil {
				seen[agent] = map[int]int{}
			}
			seen[agent][listener]++
		}
		for part, who := range want {
			found := false
			for agent, byPort := range seen {
				found = found || strings.Contains(agent, part) && len(byPort) > 0
			}
			if !found {
				return false, fmt.Errorf("no request yet of %s (user agent with %q) over an open connection", who, part)
			}
		}
		return true, nil
	})
	agents := slices.Sorted(maps.Keys(seen))
	for _, agent := range agents {
		t.Logf("%-80s internal %4d, TLS %4d", agent, seen[agent][internalPort], seen[agent][tlsPort])
		if n := seen[agent][tlsPort]; n > 0 && (strings.HasPrefix(agent, childAgent) || !tlsAllowed(agent)) {
			t.Errorf("%d requests of %q on the TLS port %d: only kube-scheduler and the API server's loopback client may use it; the sandbox's own clients use the internal port %d", n, agent, tlsPort, internalPort)
		}
	}
	for part, who := range want {
		if !slices.ContainsFunc(agents, func(agent string) bool { return strings.Contains(agent, part) && seen[agent][internalPort] > 0 }) {
			t.Errorf("no request of %s (user agent with %q) on the internal port %d", who, part, internalPort)
		}
	}
}

// TestRealTopoLVM_ControllerManagerStartsOnFullReadyz proves the controller manager's first
// request comes after the API server's /readyz passed in full, RBAC bootstrap included. The
// controller manager gives the API server's /healthz 10 s and exits when that fails
// (k8s.io/kubernetes cmd/kube-controller-manager/app controllermanager.go WaitForAPIServer);
// started earlier, it exited once in 25 busy 500-node starts and no node lost its not-ready
// taint (controlplane.Start).
func TestRealTopoLVM_ControllerManagerStartsOnFullReadyz(t *testing.T) {
	p := startLoggedRealSandbox(t)
	log, err := os.ReadFile(filepath.Join(p.dir, "sandbox.log"))
	if err != nil {
		t.Fatal(err)
	}
	// The controller manager's clients carry kubernetes/$Format/<name>: a controller's name, the
	// client builder's, kube-controller-manager. It runs in the sandbox's process (user agent
	// olapgke-sandbox/...); the sandbox's, KWOK's and the scheduler's suffixes are their own.
	// olapgke-topolvm's clients (olapgke-topolvm/..., e.g. kubernetes/$Format/topolvm-node) are
	// another process, which may start its informers before /readyz passes in full.
	controllerManager := func(agent string) bool {
		_, name, ok := strings.Cut(agent, "kubernetes/$Format/")
		return ok && strings.HasPrefix(agent, "olapgke-sandbox/") && name != "sandbox" && name != "kwok" && name != "scheduler"
	}
	readyzPassed, first := -1, -1
	lines := strings.Split(string(log), "\n")
	for i, line := range lines {
		m := requestLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if readyzPassed < 0 && strings.Contains(line, `verb="GET" URI="/readyz" `) && strings.HasSuffix(line, " resp=200") {
			readyzPassed = i
		}
		if first < 0 && controllerManager(m[1]) {
			first = i
		}
	}
	switch {
	case readyzPassed < 0:
		t.Fatalf("no full /readyz answered 200 in %s (the sandbox says ready only after one)", filepath.Join(p.dir, "sandbox.log"))
	case first < 0:
		t.Fatal("no request of the controller manager in the log (user agent kubernetes/$Format/<controller>)")
	case first < readyzPassed:
		t.Errorf("the controller manager's first request (log line %d) came before /readyz first passed in full (line %d):\n%s\n%s",
			first+1, readyzPassed+1, lines[first], lines[readyzPassed])
	}
}

// startLoggedRealSandbox starts a 1-node `up --topolvm real` sandbox whose log holds every
// request the API server served (-v 3: httplog), or skips without olapgke-topolvm.
func startLoggedRealSandbox(t *testing.T) realProcess {
	t.Helper()
	bin := topolvmBinOrSkip(t)
	return startRealProcess(t, `
clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
    nodeCount: 1
`, bin, []string{"-v", "3"})
}
