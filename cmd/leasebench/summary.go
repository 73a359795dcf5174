package main

// leasebench summary RESULT.json...: the medians of runs grouped by label,
// in the order the labels first appear (scripts/ab.sh labels the runs of
// its two binaries A and B).

import (
	"fmt"
	"io"
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
	fmt.Fprintln(tw, "label\truns\tops/s\tp50 ms\tp99 ms\twatch lag p99 ms\tnodes CPU µs/op\tload generator µs/op\t")
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
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%s\t%s\t%s\t\n", name, s.n, s.ops, s.p50, s.p99, lag, server, client)
	}
	tw.Flush()
	fmt.Fprintln(w, "medians over each label's runs, each figure taken separately")
}
