package world

import (
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
)

func TestDefault(t *testing.T) {
	w := Default()
	if w.Project != "sandbox" || len(w.Clusters) != 1 {
		t.Fatalf("default world: project %q, %d clusters", w.Project, len(w.Clusters))
	}
	c := w.Clusters[0]
	if c.Name != "olap" || c.Location != "us-central1-a" || c.ReleaseChannel != "REGULAR" || len(c.Pools) != 1 {
		t.Fatalf("default cluster: %+v", c)
	}
	np, err := c.Pools[0].NodePoolProto()
	if err != nil {
		t.Fatal(err)
	}
	if np.Name != "pool-a" || np.InitialNodeCount != 3 || np.Config.MachineType != "n2-standard-8" ||
		np.Config.GetLocalNvmeSsdBlockConfig().GetLocalSsdCount() != 2 || np.Config.DiskSizeGb != 100 {
		t.Errorf("default pool proto: %v", np)
	}
	if got := w.DefaultDeviceClass(); got != "ssd" || w.TopoLVM.DeviceClasses[0].VolumeGroup != "vg-ssd" {
		t.Errorf("default device class %q on %q", got, w.TopoLVM.DeviceClasses[0].VolumeGroup)
	}
	if len(w.StorageClasses) != 1 || w.StorageClasses[0].Name != "topolvm-provisioner" {
		t.Errorf("default storage classes: %+v", w.StorageClasses)
	}
	if b := w.TopoLVM.BringUp; b.CapacityQPS == nil || *b.CapacityQPS != 1 || b.CapacityBurst == nil || *b.CapacityBurst != 5 {
		t.Errorf("default capacity client %v/%v, want external-provisioner's 1/5", b.CapacityQPS, b.CapacityBurst)
	}
	if err := w.Validate(); err != nil {
		t.Errorf("default world invalid: %v", err)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		yaml    string
		wantErr string
		check   func(t *testing.T, w *World)
	}{
		"second pool takes pool-a's shape": {
			yaml: "clusters:\n- name: olap\n  nodePools:\n  - name: pool-a\n  - name: pool-b\n    nodeCount: 2\n    localNvmeSsdCount: 0\n",
			check: func(t *testing.T, w *World) {
				b := w.Clusters[0].Pools[1]
				if b.MachineType != "n2-standard-8" || *b.NodeCount != 2 || *b.LocalNVMeSSDCount != 0 || b.BootDiskSizeGB != 100 {
					t.Errorf("pool-b: %+v", b)
				}
				np, err := b.NodePoolProto()
				if err != nil {
					t.Fatal(err)
				}
				if np.Config.LocalNvmeSsdBlockConfig != nil {
					t.Errorf("explicit 0 Local SSDs must leave local_nvme_ssd_block_config unset, got %v", np.Config.LocalNvmeSsdBlockConfig)
				}
				if w.Clusters[0].Location != DefaultLocation || w.TopoLVM.ConfigMapName != "topolvm-lvmd-0" {
					t.Errorf("omitted sections not defaulted: %+v %+v", w.Clusters[0], w.TopoLVM)
				}
			},
		},
		"taints in both spellings": {
			yaml: "clusters:\n- name: c\n  nodePools:\n  - name: p\n    taints:\n    - {key: a, value: b, effect: NO_SCHEDULE}\n    - {key: c, effect: NoExecute}\n",
			check: func(t *testing.T, w *World) {
				np, err := w.Clusters[0].Pools[0].NodePoolProto()
				if err != nil {
					t.Fatal(err)
				}
				if len(np.Config.Taints) != 2 || np.Config.Taints[0].Effect != containerpb.NodeTaint_NO_SCHEDULE || np.Config.Taints[1].Effect != containerpb.NodeTaint_NO_EXECUTE {
					t.Errorf("taints: %v", np.Config.Taints)
				}
			},
		},
		"thin device class and extra storage class": {
			yaml: "topolvm:\n  deviceClasses:\n  - {name: ssd, volume-group: vg-ssd, default: true}\n  - {name: thin, volume-group: vg-ssd, type: thin, thin-pool: {name: pool0, overprovision-ratio: 5}}\nstorageClasses:\n- name: topolvm-provisioner\n- name: topolvm-thin\n  deviceClass: thin\n",
			check: func(t *testing.T, w *World) {
				if len(w.StorageClasses) != 2 || w.StorageClasses[1].DeviceClass != "thin" || !w.TopoLVM.DeviceClasses[1].IsThin() {
					t.Errorf("world: %+v %+v", w.StorageClasses, w.TopoLVM.DeviceClasses)
				}
			},
		},
		"cluster without release channel": {
			yaml: "clusters:\n- name: static\n  releaseChannel: UNSPECIFIED\n- name: olap\n",
			check: func(t *testing.T, w *World) {
				if got := []string{w.Clusters[0].ReleaseChannel, w.Clusters[1].ReleaseChannel}; got[0] != "UNSPECIFIED" || got[1] != "REGULAR" {
					t.Errorf("release channels %v, want [UNSPECIFIED REGULAR]", got)
				}
			},
		},
		"bring-up delays and their defaults": {
			yaml: "topolvm:\n  bringUp:\n    lvmdStart: 3s\n    capacityPoll: 10s\n",
			check: func(t *testing.T, w *World) {
				b := w.TopoLVM.BringUp
				if b.LvmdStart.Duration != 3*time.Second || b.CSIRegistration.Duration != DefaultCSIRegistration || b.CapacityPoll.Duration != 10*time.Second {
					t.Errorf("bringUp: %v %v %v", b.LvmdStart, b.CSIRegistration, b.CapacityPoll)
				}
			},
		},
		"capacity client defaults and overrides": {
			yaml: "topolvm:\n  bringUp: {capacityQPS: 2.5}\n",
			check: func(t *testing.T, w *World) {
				b := w.TopoLVM.BringUp
				if *b.CapacityQPS != 2.5 || *b.CapacityBurst != DefaultCapacityBurst {
					t.Errorf("capacity client %v/%v, want 2.5/%d", *b.CapacityQPS, *b.CapacityBurst, DefaultCapacityBurst)
				}
			},
		},
		"pods ready after, default 0": {
			yaml: "pods:\n  readyAfter: 4s\n",
			check: func(t *testing.T, w *World) {
				if w.Pods.ReadyAfter.Duration != 4*time.Second || Default().Pods.ReadyAfter.Duration != 0 {
					t.Errorf("readyAfter %v (default %v), want 4s (0)", w.Pods.ReadyAfter, Default().Pods.ReadyAfter)
				}
			},
		},
		"negative ready after":        {yaml: "pods: {readyAfter: -1s}\n", wantErr: "pods.readyAfter -1s is negative"},
		"zero capacity QPS":           {yaml: "topolvm:\n  bringUp: {capacityQPS: 0}\n", wantErr: "capacityQPS 0 must be positive"},
		"negative capacity QPS":       {yaml: "topolvm:\n  bringUp: {capacityQPS: -1}\n", wantErr: "capacityQPS -1 must be positive"},
		"zero capacity burst":         {yaml: "topolvm:\n  bringUp: {capacityBurst: 0}\n", wantErr: "capacityBurst 0 must be at least 1"},
		"negative bring-up delay":     {yaml: "topolvm:\n  bringUp: {csiRegistration: -1s}\n", wantErr: "topolvm.bringUp.csiRegistration -1s is negative"},
		"zero capacity poll":          {yaml: "topolvm:\n  bringUp: {capacityPoll: 0s}\n", wantErr: "capacityPoll must be positive"},
		"bad release channel":         {yaml: "clusters:\n- name: c\n  releaseChannel: BETA\n", wantErr: `releaseChannel "BETA" is not one of`},
		"unknown field":               {yaml: "clusterz: []\n", wantErr: "unknown field"},
		"duplicate pool":              {yaml: "clusters:\n- name: c\n  nodePools:\n  - name: p\n  - name: p\n", wantErr: "listed twice"},
		"bad taint effect":            {yaml: "clusters:\n- name: c\n  nodePools:\n  - name: p\n    taints: [{key: a, effect: Sometimes}]\n", wantErr: "effect"},
		"storage class unknown class": {yaml: "storageClasses:\n- {name: x, deviceClass: nope}\n", wantErr: "not in topolvm.deviceClasses"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, err := Parse([]byte(tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, w)
		})
	}
}
