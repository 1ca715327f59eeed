package cputime

import (
	"runtime"
	"testing"
	"time"
)

// Busy work raises the reading by about the time spent on it; sleeping does not.
func TestProcessCountsWorkNotWaiting(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		if _, ok := Process(); ok {
			t.Fatal("Process reported CPU time on a platform without getrusage")
		}
		t.Skip("no getrusage here")
	}
	c0, ok := Process()
	if !ok || c0 <= 0 {
		t.Fatalf("Process() = %v, %v; want a positive reading", c0, ok)
	}
	time.Sleep(200 * time.Millisecond)
	c1, _ := Process()
	slept := c1 - c0
	w0 := time.Now()
	x := uint64(1)
	for time.Since(w0) < 200*time.Millisecond {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	c2, _ := Process()
	busy := c2 - c1
	if x == 0 {
		t.Log("unreachable; keeps the loop")
	}
	// The busy loop ran for 200 ms of wall time on one thread; on a loaded machine it may have
	// had less than all of it, but far more than the sleep's CPU.
	if busy < 50*time.Millisecond || busy <= 2*slept {
		t.Errorf("CPU over 200 ms of work %v, over 200 ms of sleep %v: want the work's far larger", busy, slept)
	}
}
