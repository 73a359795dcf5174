package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// machine measures the two costs that bound one sequential client's write
// on this machine, whatever the system under test: how long a 4 KiB
// overwrite takes to become durable (a Raft log commit waits for several),
// and a round trip between two processes over loopback (a write crosses
// several processes). The round trip is measured back to back and after
// the other side has been idle for a while, as it is between one client's
// requests: on a virtual machine, waking an idle CPU can cost more than the
// round trip itself.
//
//	leasebench machine [--dir DIR] [--n N]

// machineIdleGap is the pause before each idle round trip: about the time
// between one sequential client's requests.
const machineIdleGap = time.Millisecond

// MachineResult is what machine measured; latencies in milliseconds.
type MachineResult struct {
	Dir           string
	Fdatasync     Percentiles
	RoundTrip     Percentiles
	RoundTripIdle Percentiles // after machineIdleGap without traffic
}

func machineMain(args []string) int {
	fs := flag.NewFlagSet("leasebench machine", flag.ContinueOnError)
	dir := fs.String("dir", os.TempDir(), "directory on the disk the systems under test write to")
	n := fs.Int("n", 1000, "samples of each measurement")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: leasebench machine [--dir DIR] [--n N]")
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "leasebench:", err)
		return 1
	}
	res, err := measureMachine(*dir, *n, exec.Command(exe, "machine-echo"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "leasebench:", err)
		return 1
	}
	res.print(os.Stdout)
	return 0
}

func (r *MachineResult) print(w io.Writer) {
	fmt.Fprintf(w, "machine   4 KiB write + fdatasync in %s: p50=%.3fms p99=%.3fms\n", r.Dir, r.Fdatasync.P50, r.Fdatasync.P99)
	fmt.Fprintf(w, "          loopback round trip between two processes: back to back p50=%.3fms p99=%.3fms; after %v idle p50=%.3fms p99=%.3fms\n",
		r.RoundTrip.P50, r.RoundTrip.P99, machineIdleGap, r.RoundTripIdle.P50, r.RoundTripIdle.P99)
}

// measureMachine runs every measurement, n samples each; echo is the
// command of the process at the other end of the round trips (see
// serveEchoProcess).
func measureMachine(dir string, n int, echo *exec.Cmd) (*MachineResult, error) {
	syncs, err := measureFdatasync(dir, n)
	if err != nil {
		return nil, err
	}
	addr, stop, err := startEchoProcess(echo)
	if err != nil {
		return nil, err
	}
	defer stop()
	back, err := measureRoundTrips(addr, n, 0)
	if err != nil {
		return nil, err
	}
	idle, err := measureRoundTrips(addr, n, machineIdleGap)
	if err != nil {
		return nil, err
	}
	return &MachineResult{Dir: dir, Fdatasync: samplePercentiles(syncs), RoundTrip: samplePercentiles(back), RoundTripIdle: samplePercentiles(idle)}, nil
}

// measureFdatasync overwrites the first 4 KiB of a file in dir and makes
// it durable, n times, as a log store commits a page; the file is removed.
func measureFdatasync(dir string, n int) ([]time.Duration, error) {
	f, err := os.CreateTemp(dir, "leasebench-fdatasync-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	page := make([]byte, 4096)
	_, _ = rand.Read(page)
	// The first write allocates the block; later ones overwrite it, as a
	// log store overwrites its pages.
	if _, err := f.WriteAt(page, 0); err != nil {
		return nil, err
	}
	if err := fdatasync(f); err != nil {
		return nil, err
	}
	d := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		page[0] = byte(i)
		start := time.Now()
		if _, err := f.WriteAt(page, 0); err != nil {
			return nil, err
		}
		if err := fdatasync(f); err != nil {
			return nil, err
		}
		d = append(d, time.Since(start))
	}
	return d, nil
}

// measureRoundTrips sends n 64-byte messages to the echo server at addr,
// one at a time, pausing gap before each, and times each until its echo is
// back whole.
func measureRoundTrips(addr string, n int, gap time.Duration) ([]time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	msg, got := make([]byte, 64), make([]byte, 64)
	d := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		if gap > 0 {
			time.Sleep(gap)
		}
		msg[0], msg[63] = byte(i), byte(i>>8)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(c, got); err != nil {
			return nil, err
		}
		d = append(d, time.Since(start))
		if !bytes.Equal(got, msg) {
			return nil, fmt.Errorf("round trip %d: echo differs from what was sent", i)
		}
	}
	return d, nil
}

// serveEcho echoes every connection it accepts until ln is closed.
func serveEcho(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_, _ = io.Copy(c, c)
		}()
	}
}

// serveEchoProcess is the other process of the round trips: it prints the
// address it listens on, then echoes until its standard input closes.
func serveEchoProcess(stdin io.Reader, stdout io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go serveEcho(ln)
	if _, err := fmt.Fprintln(stdout, ln.Addr()); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, stdin)
	return nil
}

// startEchoProcess starts cmd, which must run serveEchoProcess, and
// returns the address it listens on and a function that ends it.
func startEchoProcess(cmd *exec.Cmd) (addr string, stop func(), err error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("echo process: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

func samplePercentiles(d []time.Duration) Percentiles {
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(q float64) float64 {
		return float64(s[min(int(q*float64(len(s))), len(s)-1)]) / float64(time.Millisecond)
	}
	return Percentiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), P999: at(0.999), Max: at(1)}
}
