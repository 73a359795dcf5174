package main

// leasebench compare RESULT.json...: the side-by-side table of scripts/bench.sh.
// Runs are grouped by workload and label, in the order the files are given;
// for each target the median over the rounds is taken of ops/s, p50 and p99
// separately (medians, not means, so that one run disturbed by the shared
// machine does not move the figure).

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
)

func compareMain(args []string) int {
	return resultsMain("compare", "(results written with --json)", args, printComparison)
}

// resultsMain is a subcommand that prints a table of the results in the
// files named by args.
func resultsMain(name, usage string, args []string, print func(io.Writer, []*Result)) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintf(os.Stderr, "usage: leasebench %s RESULT.json...  %s\n", name, usage)
		return 2
	}
	results, err := readResults(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "leasebench %s: %v\n", name, err)
		return 1
	}
	print(os.Stdout, results)
	return 0
}

// readResults reads results written with --json.
func readResults(paths []string) ([]*Result, error) {
	var results []*Result
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		r := new(Result)
		if err := json.Unmarshal(data, r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.Target == "" { // written before --target existed
			r.Target = "leasehold"
		}
		results = append(results, r)
	}
	return results, nil
}

type workloadKey struct{ workload, label string }

func printComparison(w io.Writer, results []*Result) {
	var order []workloadKey
	clients := map[workloadKey]int{}
	runs := map[workloadKey]map[string][]*Result{} // → target → rounds
	for _, r := range results {
		k := workloadKey{r.Workload, r.Label}
		if runs[k] == nil {
			order = append(order, k)
			clients[k] = r.Clients
			runs[k] = map[string][]*Result{}
		}
		runs[k][r.Target] = append(runs[k][r.Target], r)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tclients\tleasehold ops/s\tetcd ops/s\tratio\tleasehold p50/p99 ms\tetcd p50/p99 ms\tp99 ratio\tleasehold CPU µs/op\tetcd CPU µs/op\twrites per log write\trounds\t")
	var notes []string
	for _, k := range order {
		lh, et := summarize(runs[k]["leasehold"]), summarize(runs[k]["etcd"])
		fmt.Fprintf(tw, "%s %s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t\n",
			k.workload, k.label, clients[k],
			lh.opsText(), et.opsText(), ratio(lh.ops, et.ops, lh.n > 0 && et.n > 0),
			lh.latText(), et.latText(), ratio(lh.p99, et.p99, lh.n > 0 && et.n > 0),
			lh.cpuText(), et.cpuText(), logBatchText(lh, et),
			lh.n, et.n)
		for _, t := range []struct {
			name string
			s    summary
		}{{"leasehold", lh}, {"etcd", et}} {
			if t.s.errors > 0 || t.s.conflicts > 0 {
				notes = append(notes, fmt.Sprintf("%s %s, %s: %d errors, %d conflicts over %d rounds",
					k.workload, k.label, t.name, t.s.errors, t.s.conflicts, t.s.n))
			}
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "ratio = leasehold / etcd (ops/s: above 1 is leasehold faster; p99: below 1 is leasehold faster); medians over the rounds")
	fmt.Fprintln(w, "CPU µs/op = the three nodes' + the load generator's CPU time per operation while measuring")
	fmt.Fprintln(w, "writes per log write = leasehold / etcd: writes per durable log write on a node (raft-boltdb's StoreLogs: two fdatasyncs; etcd's WAL fsync: one)")
	for _, n := range notes {
		fmt.Fprintln(w, "note:", n)
	}
}

// summary is the medians of one target's rounds of one workload.
type summary struct {
	n                    int
	ops, p50, p99        float64
	serverCPU, clientCPU float64 // µs per operation; 0 when not measured
	logBatch             float64 // writes per log write; 0 when not measured
	errors, conflicts    int64
}

func summarize(rs []*Result) summary {
	s := summary{n: len(rs)}
	if s.n == 0 {
		return s
	}
	var ops, p50, p99, server, client, batch []float64
	for _, r := range rs {
		if e := r.writesPerLogWrite(); e > 0 {
			batch = append(batch, e)
		}
		ops = append(ops, r.OpsPerSec)
		p50 = append(p50, r.Latency.P50)
		p99 = append(p99, r.Latency.P99)
		if r.ServerCPUSeconds > 0 && r.ClientCPUSeconds > 0 {
			server = append(server, cpuPerOp(r.ServerCPUSeconds, r.Ops))
			client = append(client, cpuPerOp(r.ClientCPUSeconds, r.Ops))
		}
		s.errors += r.Errors
		s.conflicts += r.Conflicts
	}
	s.ops, s.p50, s.p99 = median(ops), median(p50), median(p99)
	if len(server) > 0 {
		s.serverCPU, s.clientCPU = median(server), median(client)
	}
	if len(batch) > 0 {
		s.logBatch = median(batch)
	}
	return s
}

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 0 {
		return (xs[m-1] + xs[m]) / 2
	}
	return xs[m]
}

func (s summary) opsText() string {
	if s.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", s.ops)
}

func (s summary) latText() string {
	if s.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f / %.2f", s.p50, s.p99)
}

// cpuText is the nodes' and the load generator's CPU per operation.
func (s summary) cpuText() string {
	if s.n == 0 || s.serverCPU == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f + %.0f", s.serverCPU, s.clientCPU)
}

// logBatchText is both systems' writes per log write, "-" for one unknown.
func logBatchText(lh, et summary) string {
	if lh.logBatch == 0 && et.logBatch == 0 {
		return "-"
	}
	return lh.batchText() + " / " + et.batchText()
}

// batchText is the writes per log write, "-" when unknown.
func (s summary) batchText() string {
	if s.logBatch == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", s.logBatch)
}

func ratio(a, b float64, ok bool) string {
	if !ok || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}
