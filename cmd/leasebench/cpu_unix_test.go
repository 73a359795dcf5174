//go:build unix

package main

import "testing"

func TestSelfCPUSecondsAdvances(t *testing.T) {
	before, ok := selfCPUSeconds()
	if !ok {
		t.Fatal("getrusage failed")
	}
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += i ^ (x >> 3)
	}
	after, _ := selfCPUSeconds()
	if after <= before {
		t.Fatalf("CPU time %v then %v after a busy loop (%d)", before, after, x)
	}
}
