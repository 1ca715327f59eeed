// Command kubectl is kubectl exactly as k8s.io/kubernetes/cmd/kubectl builds it (same three calls),
// in its own module so `make bench` can run a real kubectl loop without putting kubectl's
// dependencies into the provider's or the sandbox's go.mod. Not shipped.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
