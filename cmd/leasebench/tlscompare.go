package main

// leasebench tls RESULT.json...: the TLS profile's table in scripts/bench.sh.
// Given the runs over TLS (written with --cacert/--cert/--key) and the
// plaintext runs of the same workloads (same workload and label), it
// prints for each workload run over TLS the medians of both targets over
// TLS and their ratio, and what TLS cost each target: its median ops/s over
// TLS over its plaintext median, and its CPU per operation both ways. Then
// the targets: renewals at 64 clients over TLS at least etcd's over TLS,
// and TLS costing leasehold at most 15 % of its plaintext throughput.

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// The TLS profile's targets.
const (
	tlsTargetRatio = 1.0  // leasehold / etcd ops/s over TLS, renew at 64 clients
	tlsTargetCost  = 0.15 // at most this share of leasehold's plaintext ops/s lost to TLS
)

func tlsCompareMain(args []string) int {
	return resultsMain("tls", "(plaintext and TLS results written with --json, of the same workloads and labels)", args, printTLSComparison)
}

func printTLSComparison(w io.Writer, results []*Result) {
	var order []workloadKey
	clients := map[workloadKey]int{}
	type sides struct{ tls, plain map[string][]*Result } // target → rounds
	runs := map[workloadKey]*sides{}
	for _, r := range results {
		k := workloadKey{r.Workload, r.Label}
		s := runs[k]
		if s == nil {
			s = &sides{tls: map[string][]*Result{}, plain: map[string][]*Result{}}
			runs[k] = s
		}
		if r.TLS {
			if len(s.tls) == 0 {
				order = append(order, k)
				clients[k] = r.Clients
			}
			s.tls[r.Target] = append(s.tls[r.Target], r)
		} else {
			s.plain[r.Target] = append(s.plain[r.Target], r)
		}
	}
	if len(order) == 0 {
		fmt.Fprintln(w, "no run over TLS among the results")
		return
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "over TLS\tclients\tleasehold ops/s\tetcd ops/s\tratio\tleasehold p50/p99 ms\tetcd p50/p99 ms\tp99 ratio\tleasehold TLS/plain\tetcd TLS/plain\tleasehold CPU µs/op plain → TLS\tetcd CPU µs/op plain → TLS\trounds\t")
	var notes, targets, cpu []string
	protocols := map[string]string{}
	for _, k := range order {
		s := runs[k]
		lh, et := summarize(s.tls["leasehold"]), summarize(s.tls["etcd"])
		lhPlain, etPlain := summarize(s.plain["leasehold"]), summarize(s.plain["etcd"])
		fmt.Fprintf(tw, "%s %s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d (plain %d/%d)\t\n",
			k.workload, k.label, clients[k],
			lh.opsText(), et.opsText(), ratio(lh.ops, et.ops, lh.n > 0 && et.n > 0),
			lh.latText(), et.latText(), ratio(lh.p99, et.p99, lh.n > 0 && et.n > 0),
			ratio(lh.ops, lhPlain.ops, lh.n > 0 && lhPlain.n > 0), ratio(et.ops, etPlain.ops, et.n > 0 && etPlain.n > 0),
			cpuChangeText(lhPlain, lh), cpuChangeText(etPlain, et),
			lh.n, et.n, lhPlain.n, etPlain.n)
		for target, rs := range s.tls {
			for _, r := range rs {
				if r.Protocol != "" {
					protocols[target] = r.Protocol + ", " + r.Connections
				}
			}
		}
		for _, t := range []struct {
			name string
			s    summary
		}{{"leasehold", lh}, {"etcd", et}} {
			if t.s.errors > 0 || t.s.conflicts > 0 {
				notes = append(notes, fmt.Sprintf("%s %s over TLS, %s: %d errors, %d conflicts over %d rounds",
					k.workload, k.label, t.name, t.s.errors, t.s.conflicts, t.s.n))
			}
		}
		if k.workload == "renew" && clients[k] == 64 && lh.n > 0 && et.n > 0 && et.ops > 0 {
			r := lh.ops / et.ops
			targets = append(targets, fmt.Sprintf("renew %s over TLS: leasehold / etcd %.2f (target ≥ %.2f): %s",
				k.label, r, tlsTargetRatio, metText(r >= tlsTargetRatio)))
		}
		if c := cpuCostText(k, lhPlain, lh, etPlain, et); c != "" {
			cpu = append(cpu, c)
		}
		if lh.n > 0 && lhPlain.n > 0 && lhPlain.ops > 0 {
			cost := 1 - lh.ops/lhPlain.ops
			targets = append(targets, fmt.Sprintf("%s %s: TLS costs leasehold %s of its plaintext ops/s (target ≤ %.0f %%): %s",
				k.workload, k.label, costText(cost), 100*tlsTargetCost, metText(cost <= tlsTargetCost)))
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "ratio = leasehold / etcd, both over TLS; TLS/plain = a system's ops/s over TLS / its plaintext ops/s (the plaintext runs of the same workload); medians over the rounds")
	fmt.Fprintln(w, "CPU µs/op = the three nodes' + the load generator's CPU time per operation while measuring, plaintext → TLS")
	for _, target := range []string{"leasehold", "etcd"} {
		if p := protocols[target]; p != "" {
			fmt.Fprintf(w, "%s over TLS: %s\n", target, p)
		}
	}
	if len(cpu) > 0 {
		fmt.Fprintln(w, "CPU per operation (nodes + load generator) over TLS / plaintext, and the throughput TLS costs where the CPU is the limit (steadier than ops/s between runs minutes apart on a shared machine):")
		for _, c := range cpu {
			fmt.Fprintln(w, "  "+c)
		}
	}
	for _, t := range targets {
		fmt.Fprintln(w, "target:", t)
	}
	for _, n := range notes {
		fmt.Fprintln(w, "note:", n)
	}
}

// cpuChangeText is the CPU per operation in plaintext and over TLS.
func cpuChangeText(plain, tls summary) string {
	if plain.serverCPU == 0 && tls.serverCPU == 0 {
		return "-"
	}
	return plain.cpuText() + " → " + tls.cpuText()
}

// cpuCostText compares each target's CPU per operation over TLS with its
// plaintext one: on a machine whose cores are the limit, throughput is
// the cores over the CPU one operation costs, so TLS costs 1 − plain/TLS
// of it. Empty when neither target's CPU was measured both ways.
func cpuCostText(k workloadKey, lhPlain, lh, etPlain, et summary) string {
	part := func(name string, plain, tls summary) string {
		p, t := plain.serverCPU+plain.clientCPU, tls.serverCPU+tls.clientCPU
		if plain.serverCPU == 0 || tls.serverCPU == 0 || p == 0 {
			return ""
		}
		return fmt.Sprintf("%s ×%.2f (%s)", name, t/p, costText(1-p/t))
	}
	var parts []string
	for _, s := range []string{part("leasehold", lhPlain, lh), part("etcd", etPlain, et)} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s: %s", k.workload, k.label, strings.Join(parts, ", "))
}

// costText is a share of throughput lost, or gained when negative.
func costText(cost float64) string {
	if cost < 0 {
		return fmt.Sprintf("nothing (%.1f %% more)", -100*cost)
	}
	return fmt.Sprintf("%.1f %%", 100*cost)
}

func metText(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
