package main

// leasebench fanout RESULT.json...: the watch fan-out table of
// scripts/bench.sh. Runs without watchers are the baseline; runs with
// watchers are grouped by watcher count and stream format. Each figure is
// the median over the rounds, taken separately.

import (
	"fmt"
	"io"
	"text/tabwriter"
)

func fanoutMain(args []string) int {
	return resultsMain("fanout", "(renew runs without watchers, watch runs with them; written with --json)", args, printFanout)
}

type fanoutKey struct {
	watchers int
	format   string
}

func printFanout(w io.Writer, results []*Result) {
	var order []fanoutKey
	runs := map[fanoutKey][]*Result{}
	for _, r := range results {
		k := fanoutKey{}
		if r.Workload == "watch" {
			k = fanoutKey{r.Watchers, r.WatchFormat}
		}
		if runs[k] == nil {
			order = append(order, k)
		}
		runs[k] = append(runs[k], r)
	}
	base := fanoutMedians(runs[fanoutKey{}])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "watchers\trounds\tops/s\tchange\twrite p99 ms\tlag p50/p99 ms\tafter the response p50/p99 ms\tevents/s\tnodes' CPU\t")
	for _, k := range order {
		m := fanoutMedians(runs[k])
		name, change, lag, afterAck, events := "none", "-", "-", "-", "-"
		if k.watchers > 0 {
			name = fmt.Sprintf("%d %s", k.watchers, k.format)
			if base.n > 0 && base.ops > 0 {
				change = fmt.Sprintf("%+.1f %%", 100*(m.ops/base.ops-1))
			}
			lag = fmt.Sprintf("%.1f / %.1f", m.lagP50, m.lagP99)
			if m.ackP99 > 0 {
				afterAck = fmt.Sprintf("%.1f / %.1f", m.ackP50, m.ackP99)
			}
			events = fmt.Sprintf("%.0f", m.events)
		}
		cores := "-"
		if m.cores > 0 {
			cores = fmt.Sprintf("%.2f cores", m.cores)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%.1f\t%s\t%s\t%s\t%s\t\n", name, m.n, m.ops, change, m.writeP99, lag, afterAck, events, cores)
	}
	tw.Flush()
	fmt.Fprintln(w, "change = ops/s against the runs without watchers; lag from the renewTime set before the PUT, and from the PUT's response; nodes' CPU = the three nodes' CPU time over the measured time; medians over the rounds")
}

type fanoutSummary struct {
	n                              int
	ops, writeP99, events, cores   float64
	lagP50, lagP99, ackP50, ackP99 float64
}

func fanoutMedians(rs []*Result) fanoutSummary {
	s := fanoutSummary{n: len(rs)}
	if s.n == 0 {
		return s
	}
	var ops, wp99, events, cores, lp50, lp99, ap50, ap99 []float64
	for _, r := range rs {
		ops = append(ops, r.OpsPerSec)
		wp99 = append(wp99, r.Latency.P99)
		if r.Seconds > 0 {
			events = append(events, float64(r.Events)/r.Seconds)
			if r.ServerCPUSeconds > 0 {
				cores = append(cores, r.ServerCPUSeconds/r.Seconds)
			}
		}
		if r.Lag != nil {
			lp50 = append(lp50, r.Lag.P50)
			lp99 = append(lp99, r.Lag.P99)
		}
		if r.LagAfterAck != nil {
			ap50 = append(ap50, r.LagAfterAck.P50)
			ap99 = append(ap99, r.LagAfterAck.P99)
		}
	}
	s.ops, s.writeP99 = median(ops), median(wp99)
	if len(cores) > 0 {
		s.cores = median(cores)
	}
	if len(events) > 0 {
		s.events = median(events)
	}
	if len(lp50) > 0 {
		s.lagP50, s.lagP99 = median(lp50), median(lp99)
	}
	if len(ap50) > 0 {
		s.ackP50, s.ackP99 = median(ap50), median(ap99)
	}
	return s
}
