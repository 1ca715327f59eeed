package gke

import (
	"strings"
	"testing"
)

func TestLookupMachineType(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		ok        bool
		family    string
		vcpus     int64
		fixed     int32
		ssdOK     []int32
		ssdBad    []int32
		memoryGiB int64
	}{
		"n2-standard-8":        {ok: true, family: "n2", vcpus: 8, ssdOK: []int32{1, 2, 24}, ssdBad: []int32{3}, memoryGiB: 32},
		"n2-standard-32":       {ok: true, family: "n2", vcpus: 32, ssdOK: []int32{4, 8}, ssdBad: []int32{1, 2}, memoryGiB: 128},
		"n2-standard-128":      {ok: true, family: "n2", vcpus: 128, ssdOK: []int32{16, 24}, ssdBad: []int32{8}},
		"n2d-standard-48":      {ok: true, family: "n2d", vcpus: 48, ssdOK: []int32{2}, ssdBad: []int32{1}},
		"n1-standard-4":        {ok: true, family: "n1", vcpus: 4, ssdOK: []int32{3, 8, 16}, ssdBad: []int32{9}, memoryGiB: 15},
		"e2-standard-4":        {ok: true, family: "e2", vcpus: 4, ssdBad: []int32{1}},
		"c3-standard-22-lssd":  {ok: true, family: "c3", vcpus: 22, fixed: 4, ssdOK: []int32{4}, ssdBad: []int32{2}},
		"c3d-standard-16-lssd": {ok: true, family: "c3d", vcpus: 16, fixed: 1, ssdOK: []int32{1}, ssdBad: []int32{2}},
		"c3-standard-8":        {ok: true, family: "c3", vcpus: 8, ssdBad: []int32{1}},
		"n2-standard-6":        {},
		"n2-highmem-8":         {},
		"c3-standard-9-lssd":   {},
		"":                     {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			mt, ok := lookupMachineType(name)
			if ok != tc.ok {
				t.Fatalf("known = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if mt.Family != tc.family || mt.VCPUs != tc.vcpus || mt.FixedLocalSSD != tc.fixed {
				t.Errorf("got %+v", mt)
			}
			if tc.memoryGiB != 0 && mt.MemoryMB>>10 != tc.memoryGiB {
				t.Errorf("memory %d MB", mt.MemoryMB)
			}
			for _, n := range tc.ssdOK {
				if err := mt.checkLocalSSDCount(n); err != nil {
					t.Errorf("%d SSDs: %v", n, err)
				}
			}
			for _, n := range tc.ssdBad {
				if err := mt.checkLocalSSDCount(n); err == nil {
					t.Errorf("%d SSDs accepted", n)
				}
			}
			if err := mt.checkLocalSSDCount(0); err != nil {
				t.Errorf("0 SSDs: %v", err)
			}
		})
	}
}

func TestReservations(t *testing.T) {
	t.Parallel()
	// Values from GKE's plan-node-sizes page: 4 vCPU -> 80m reserved (6%+1%+2*0.5%);
	// 8 vCPU -> 90m; memory 32 GiB -> 25%*4 + 20%*4 + 10%*8 + 6%*16 GiB = 3.56 GiB (+100 MiB eviction).
	if got := cpuReservedMilli(4); got != 80 {
		t.Errorf("cpu reserved for 4 vCPU: %d", got)
	}
	if got := cpuReservedMilli(8); got != 90 {
		t.Errorf("cpu reserved for 8 vCPU: %d", got)
	}
	want := int64(356*gib/100) + 100<<20
	if got := memoryReservedBytes(32 * gib); got < want-1024 || got > want+1024 {
		t.Errorf("memory reserved for 32 GiB: %d, want ~%d", got, want)
	}
	if got := memoryReservedBytes(512 << 20); got != 355<<20 {
		t.Errorf("memory reserved below 1 GiB: %d", got)
	}
}

// The node's ephemeral storage follows the sizing guide's arithmetic (the provider's
// gkerules.ComputeEphemeral), checked against GKE's node sizing page ("Local ephemeral storage
// reservation").
func TestEphemeralStorage(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		disk                  int64
		ssds                  int32
		capacity, allocatable int64
	}{
		// The page's own example: a 100 GiB boot disk shows capacity 98831908Ki and allocatable
		// 47060071478; the guide's arithmetic gives that capacity exactly and allocatable 151
		// bytes more (capacity - min(50, 6 + 35, 100) GiB - 10% of capacity).
		"100 GiB boot disk (page example)": {disk: 100 * gib, capacity: 98831908 << 10, allocatable: 47060071629},
		// 20 GiB: half the disk (10 GiB) is reserved; the provider plans allocatable 2.83 GiB.
		"20 GiB boot disk": {disk: 20 * gib, capacity: 15304527872, allocatable: 3036656845},
		// 500 GiB: the reservation stops at 100 GiB; the provider plans 344.83 GiB.
		"500 GiB boot disk": {disk: 500 * gib, capacity: 530700603392, allocatable: 370256360653},
		// Local SSD backing, the page's table: 50 / 75 / 100 GiB reserved for 1 / 2 / 3+ disks,
		// eviction threshold 10% of n x 375 GiB; the boot disk plays no part.
		"1 ephemeral Local SSD":  {disk: 100 * gib, ssds: 1, capacity: 375 * gib, allocatable: 287*gib + gib/2},
		"2 ephemeral Local SSDs": {disk: 10 * gib, ssds: 2, capacity: 750 * gib, allocatable: 600 * gib},
		"4 ephemeral Local SSDs": {disk: 100 * gib, ssds: 4, capacity: 1500 * gib, allocatable: 1250 * gib},
		"tiny boot disk":         {disk: 1 * gib, capacity: 0, allocatable: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, a := ephemeralStorage(tc.disk, tc.ssds)
			if c != tc.capacity || a != tc.allocatable {
				t.Errorf("ephemeralStorage(%d, %d) = %d, %d; want %d, %d", tc.disk, tc.ssds, c, a, tc.capacity, tc.allocatable)
			}
		})
	}
}

func TestNodeNames(t *testing.T) {
	t.Parallel()
	k := poolKey{clusterKey{"p", "us-central1-a", strings.Repeat("c", 40)}, strings.Repeat("p", 40)}
	n := nodeName(k, "us-central1-a")
	if len(n) > 63 || !strings.HasPrefix(n, "gke-cccc") {
		t.Errorf("name %q (%d chars)", n, len(n))
	}
	if a, b := nodeName(k, "us-central1-a"), nodeName(k, "us-central1-a"); a[:len(a)-4] != b[:len(b)-4] || a == b {
		t.Errorf("same zone must share the hash and differ in suffix: %q %q", a, b)
	}
	if a, b := nodeName(k, "us-central1-a"), nodeName(k, "us-central1-b"); a[:len(a)-4] == b[:len(b)-4] {
		t.Errorf("zones must differ in hash: %q %q", a, b)
	}
	if got := podCIDRSize(110); got != 24 {
		t.Errorf("pod cidr size for 110 pods: %d", got)
	}
}
