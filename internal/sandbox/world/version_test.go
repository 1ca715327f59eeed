package world

import (
	"strings"
	"testing"
)

func TestKubernetesVersion(t *testing.T) {
	w, err := Parse([]byte("kubernetesVersion: \"1.34\"\n"))
	if err != nil || w.KubernetesVersion != "1.34" {
		t.Fatalf("Parse 1.34: %v, %+v", err, w)
	}
	if Default().KubernetesVersion != "" {
		t.Error("the default world pins a Kubernetes version; it should run the binary's")
	}
	_, err = Parse([]byte("kubernetesVersion: \"1.33\"\n"))
	if err == nil || !strings.Contains(err.Error(), `kubernetesVersion "1.33" is not supported`) {
		t.Errorf("Parse 1.33: %v, want not supported", err)
	}
}
