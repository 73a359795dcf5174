package main

// leasebench history [--out FILE] [--date D] [--commit C] [--profile P] RESULT.json...:
// appends one CSV row per workload of the results to FILE
// (docs/bench-history.csv from scripts/bench.sh), the header first if FILE
// is new or empty. Results are grouped as compare groups them (workload and
// label; watch runs also by stream format), in the order the files are
// given, and each figure is the median over a target's rounds, as compare
// and tls print it. In a group with runs over TLS, those runs make the row
// and the plaintext runs of the same workload give TLS/plain in its note.

import (
	"bufio"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// historyHeader is the header of docs/bench-history.csv; rows follow it
// column for column. Latencies in milliseconds; CPU = the three nodes' CPU
// time per operation in µs (without the load generator's).
var historyHeader = []string{
	"date", "commit", "profile", "workload", "clients",
	"leasehold_ops_s", "etcd_ops_s", "ratio",
	"leasehold_p50_ms", "leasehold_p99_ms", "etcd_p50_ms", "etcd_p99_ms",
	"leasehold_cpu_us_op", "etcd_cpu_us_op", "note",
}

func historyMain(args []string) int {
	fs := flag.NewFlagSet("leasebench history", flag.ContinueOnError)
	out := fs.String("out", "-", "CSV file to append to (- for stdout, without the header)")
	date := fs.String("date", time.Now().UTC().Format(time.DateOnly), "the run's date")
	commit := fs.String("commit", "", "the commit the binaries were built from")
	profile := fs.String("profile", "", `the run's profile, e.g. "plain 5s x3" or "tls 5s x6"`)
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: leasebench history [--out FILE] [--date D] [--commit C] [--profile P] RESULT.json...")
		return 2
	}
	results, err := readResults(fs.Args())
	if err == nil {
		rows := historyRows(results, *date, *commit, *profile)
		if *out == "-" {
			err = writeCSV(os.Stdout, rows)
		} else if err = appendHistory(*out, rows); err == nil {
			noun := "rows"
			if len(rows) == 1 {
				noun = "row"
			}
			fmt.Fprintf(os.Stderr, "leasebench history: %d %s appended to %s\n", len(rows), noun, *out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "leasebench history:", err)
		return 1
	}
	return 0
}

type historyKey struct{ workload, label, watchFormat string }

// historyRows are the rows of results, one per workload.
func historyRows(results []*Result, date, commit, profile string) [][]string {
	var order []historyKey
	type sides struct{ tls, plain map[string][]*Result } // target → rounds
	groups := map[historyKey]*sides{}
	for _, r := range results {
		k := historyKey{r.Workload, r.Label, ""}
		if r.Workload == "watch" {
			k.watchFormat = r.WatchFormat
		}
		g := groups[k]
		if g == nil {
			g = &sides{tls: map[string][]*Result{}, plain: map[string][]*Result{}}
			groups[k] = g
			order = append(order, k)
		}
		if r.TLS {
			g.tls[r.Target] = append(g.tls[r.Target], r)
		} else {
			g.plain[r.Target] = append(g.plain[r.Target], r)
		}
	}
	var rows [][]string
	for _, k := range order {
		g := groups[k]
		runs, overTLS := g.plain, len(g.tls) > 0
		if overTLS {
			runs = g.tls
		}
		lh, et := summarize(runs["leasehold"]), summarize(runs["etcd"])
		first := runs["leasehold"]
		if len(first) == 0 {
			first = runs["etcd"]
		}
		name := k.workload + " " + k.label
		if k.watchFormat != "" {
			name += " " + k.watchFormat
		}
		var notes []string
		if lh.logBatch > 0 || et.logBatch > 0 {
			batch := lh.batchText()
			if et.n > 0 {
				batch += "/" + et.batchText()
			}
			notes = append(notes, "writes per log write "+batch)
		}
		if et.n == 0 { // leasehold alone: the watch fan-out's runs
			f := fanoutMedians(runs["leasehold"])
			if k.workload == "watch" {
				notes = append(notes, fmt.Sprintf("lag p50/p99 %.1f/%.1f ms", f.lagP50, f.lagP99))
				if f.ackP99 > 0 {
					notes = append(notes, fmt.Sprintf("after the response %.1f/%.1f ms", f.ackP50, f.ackP99))
				}
			}
			if f.cores > 0 {
				notes = append(notes, fmt.Sprintf("nodes %.2f cores", f.cores))
			}
		}
		if overTLS {
			lhPlain, etPlain := summarize(g.plain["leasehold"]), summarize(g.plain["etcd"])
			notes = append(notes, fmt.Sprintf("TLS/plain leasehold %s, etcd %s",
				ratio(lh.ops, lhPlain.ops, lh.n > 0 && lhPlain.n > 0), ratio(et.ops, etPlain.ops, et.n > 0 && etPlain.n > 0)))
		}
		if lh.errors > 0 || et.errors > 0 {
			notes = append(notes, fmt.Sprintf("errors: leasehold %d, etcd %d", lh.errors, et.errors))
		}
		rows = append(rows, []string{
			date, commit, profile, name, fmt.Sprint(first[0].Clients),
			opsField(lh), opsField(et), blankDash(ratio(lh.ops, et.ops, lh.n > 0 && et.n > 0)),
			msField(lh, lh.p50), msField(lh, lh.p99), msField(et, et.p50), msField(et, et.p99),
			cpuField(lh), cpuField(et), strings.Join(notes, "; "),
		})
	}
	return rows
}

func opsField(s summary) string {
	if s.n == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f", s.ops)
}

func msField(s summary, ms float64) string {
	if s.n == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", ms)
}

func cpuField(s summary) string {
	if s.n == 0 || s.serverCPU == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f", s.serverCPU)
}

// blankDash is ratio's text with "-" (unknown) as an empty field.
func blankDash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

func writeCSV(w io.Writer, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}

// appendHistory appends rows to the CSV file at path, after the header if
// the file is new or empty; a file whose header is another is left alone.
func appendHistory(path string, rows [][]string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		rows = append([][]string{historyHeader}, rows...)
	} else {
		first, err := bufio.NewReader(io.NewSectionReader(f, 0, st.Size())).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if want := strings.Join(historyHeader, ","); strings.TrimRight(first, "\r\n") != want {
			return fmt.Errorf("%s: its header is not %q; not appending", path, want)
		}
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil {
			return err
		}
		if last[0] != '\n' { // a last row without its line's end
			if _, err := f.Write([]byte{'\n'}); err != nil {
				return err
			}
		}
	}
	if err := writeCSV(f, rows); err != nil {
		return err
	}
	return f.Close()
}
