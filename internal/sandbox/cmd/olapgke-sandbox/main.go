// Command olapgke-sandbox runs a local GKE-like sandbox: a real Kubernetes
// control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler from k8s.io/kubernetes) with KWOK-simulated nodes, a TopoLVM
// simulator and a GKE ClusterManager API emulator, all in one process.
//
//	olapgke-sandbox up --state-dir DIR [--config FILE] [-v N]
//	olapgke-sandbox version
package main

import (
	"fmt"
	"os"
	"runtime/debug"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	switch os.Args[1] {
	case "up":
		if err := up(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "olapgke-sandbox: %v\n", err)
			os.Exit(1)
		}
	case "version", "--version", "-version":
		printVersion()
	case "help", "-h", "--help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "olapgke-sandbox: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `Usage:
  olapgke-sandbox up --state-dir DIR [--config FILE] [-v N]
      Start the sandbox; write DIR/kubeconfig, DIR/env, then DIR/ready; run until SIGTERM/SIGINT.
  olapgke-sandbox version
      Print the sandbox version and the Kubernetes/KWOK versions it embeds.
`)
}

func printVersion() {
	fmt.Printf("olapgke-sandbox %s\n", version)
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	for _, d := range bi.Deps {
		switch d.Path {
		case "k8s.io/kubernetes", "sigs.k8s.io/kwok", "go.etcd.io/etcd/server/v3", "cloud.google.com/go/container":
			fmt.Printf("  %s %s\n", d.Path, d.Version)
		}
	}
	fmt.Printf("  go %s\n", bi.GoVersion)
}
