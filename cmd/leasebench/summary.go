package main

// leasebench summary RESULT.json...: the medians of runs grouped by label,
// in the order the labels first appear (scripts/ab.sh labels the runs of
// its two binaries A and B), and for two labels whose runs came in pairs,
// one of each, the ratios within each pair.

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

func summaryMain(args []string) int {
	return resultsMain("summary", "(results written with --json; medians by label)", args, printSummary)
}

func printSummary(w io.Writer, results []*Result) {
	var order []string
	runs := map[string][]*Result{}
	for _, r := range results {
		if runs[r.Label] == nil {
			order = append(order, r.Label)
		}
		runs[r.Label] = append(runs[r.Label], r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "label\truns\tops/s\tp50 ms\tp99 ms\twatch lag p99 ms\tnodes CPU µs/op\tload generator µs/op\twrites per log write\t")
	for _, label := range order {
		rs := runs[label]
		s := summarize(rs)
		lag := "-"
		var lags []float64
		for _, r := range rs {
			if r.Lag != nil {
				lags = append(lags, r.Lag.P99)
			}
		}
		if len(lags) > 0 {
			lag = fmt.Sprintf("%.1f", median(lags))
		}
		server, client := "-", "-"
		if s.serverCPU > 0 {
			server, client = fmt.Sprintf("%.0f", s.serverCPU), fmt.Sprintf("%.0f", s.clientCPU)
		}
		name := label
		if name == "" {
			name = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t\n", name, s.n, s.ops, s.p50, s.p99, lag, server, client, s.batchText())
	}
	tw.Flush()
	fmt.Fprintln(w, "medians over each label's runs, each figure taken separately")
	if len(order) == 2 {
		printPaired(w, results, order[0], order[1])
	}
}

// printPaired prints, when results are pairs of consecutive runs with one
// run of a and one of b in each (scripts/ab.sh's A B, B A, ...), b's
// figures over a's within each pair: runs minutes apart on a shared
// machine differ by more than two builds often do, and a pair's two runs
// share most of that drift.
func printPaired(w io.Writer, results []*Result, a, b string) {
	if len(results) < 2 || len(results)%2 != 0 {
		return
	}
	var ops, cpu []float64
	faster := 0
	for i := 0; i < len(results); i += 2 {
		ra, rb := results[i], results[i+1]
		if ra.Label == b {
			ra, rb = rb, ra
		}
		if ra.Label != a || rb.Label != b || ra.OpsPerSec <= 0 {
			return
		}
		ops = append(ops, rb.OpsPerSec/ra.OpsPerSec)
		if rb.OpsPerSec > ra.OpsPerSec {
			faster++
		}
		ca, cb := cpuPerOp(ra.ServerCPUSeconds, ra.Ops), cpuPerOp(rb.ServerCPUSeconds, rb.Ops)
		if ca > 0 && cb > 0 {
			cpu = append(cpu, cb/ca)
		}
	}
	fmt.Fprintf(w, "%s / %s within each of %d pairs: ops/s ×%s, %s faster in %d of %d", b, a, len(ops), ratioRange(ops), b, faster, len(ops))
	if len(cpu) == len(ops) {
		fmt.Fprintf(w, "; nodes CPU µs/op ×%s", ratioRange(cpu))
	}
	fmt.Fprintln(w)
}

// ratioRange is the median of ratios and their range.
func ratioRange(xs []float64) string {
	return fmt.Sprintf("%.3f (%.3f–%.3f)", median(xs), slices.Min(xs), slices.Max(xs))
}
