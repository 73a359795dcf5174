package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain runs the test binary as the echo process of TestMeasureMachine
// when that test starts it with LEASEBENCH_ECHO set.
func TestMain(m *testing.M) {
	if os.Getenv("LEASEBENCH_ECHO") != "" {
		if err := serveEchoProcess(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMeasureMachine: every measurement takes its n samples, against a
// second process for the round trips, and leaves no file behind.
func TestMeasureMachine(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LEASEBENCH_ECHO=1")
	res, err := measureMachine(dir, 20, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
		t.Errorf("the echo process was not ended: %v", cmd.ProcessState)
	}
	for name, p := range map[string]Percentiles{"fdatasync": res.Fdatasync, "round trip": res.RoundTrip, "idle round trip": res.RoundTripIdle} {
		if p.P50 <= 0 || p.P50 > p.P99 || p.P99 > p.Max {
			t.Errorf("%s: percentiles %+v", name, p)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left in %s: %v", dir, left)
	}
	var out bytes.Buffer
	res.print(&out)
	if !strings.Contains(out.String(), "fdatasync") || !strings.Contains(out.String(), "after 1ms idle") {
		t.Errorf("report:\n%s", out.String())
	}
}

// TestRoundTripsCheckTheEcho: a server that answers something else than
// what was sent is an error, not a sample.
func TestRoundTripsCheckTheEcho(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go serveEcho(ln)
	d, err := measureRoundTrips(ln.Addr().String(), 5, 0)
	if err != nil || len(d) != 5 {
		t.Fatalf("echo server: %d samples, %v", len(d), err)
	}
	bad, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	go func() {
		c, err := bad.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 64)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
			b[10]++
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}()
	if _, err := measureRoundTrips(bad.Addr().String(), 5, time.Millisecond); err == nil {
		t.Error("an echo that differs from what was sent was not reported")
	}
}

// TestSamplePercentiles: ranks of a known distribution.
func TestSamplePercentiles(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	p := samplePercentiles(d)
	if p.P50 != 51 || p.P90 != 91 || p.P99 != 100 || p.Max != 100 {
		t.Errorf("percentiles of 1..100 ms: %+v", p)
	}
	if d[0] != 100*time.Millisecond {
		t.Error("the samples were reordered in place")
	}
}
