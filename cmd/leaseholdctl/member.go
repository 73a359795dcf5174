package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// memberList is GET /cluster/members's answer.
type memberList struct {
	Members []cluster.MemberStatus `json:"members"`
}

func (c *apiClient) members(ctx context.Context) (memberList, error) {
	var ml memberList
	err := c.first(ctx, func(ctx context.Context, e string) error {
		return c.call(ctx, http.MethodGet, e, "/cluster/members", nil, &ml)
	})
	return ml, err
}

func memberCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errUsage{"member needs list, add, promote or remove"}
	}
	fs := flag.NewFlagSet("member "+args[0], flag.ContinueOnError)
	g := addGlobals(fs)
	switch args[0] {
	case "list":
		if err := parse(fs, g, args[1:], 0); err != nil {
			return err
		}
		c, err := newAPIClient(g)
		if err != nil {
			return err
		}
		ml, err := c.members(context.Background())
		if err != nil {
			return err
		}
		if g.output == "json" {
			return printJSON(stdout, ml)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 3, ' ', 0)
		fmt.Fprintln(tw, "NAME\tPEER ADDR\tAPI URL\tSUFFRAGE\tSTATE\tLAST CONTACT\tAPPLIED\tBEHIND")
		for _, m := range ml.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", m.Name, m.PeerAddr, dash(m.APIURL), m.Suffrage, m.State, m.LastContact, m.Applied, m.Behind)
		}
		return tw.Flush()

	case "add":
		peerAddr := fs.String("peer-addr", "", "")
		apiURL := fs.String("api-url", "", "")
		if err := parse(fs, g, args[1:], 1); err != nil {
			return err
		}
		if *peerAddr == "" {
			return errUsage{"member add needs --peer-addr HOST:PORT"}
		}
		c, err := newAPIClient(g)
		if err != nil {
			return err
		}
		name := fs.Arg(0)
		body := map[string]string{"name": name, "peerAddr": *peerAddr, "apiURL": *apiURL}
		var endpoint string
		err = c.first(context.Background(), func(ctx context.Context, e string) error {
			endpoint = e
			return c.call(ctx, http.MethodPost, e, "/cluster/members", body, nil)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added %s (%s) as a non-voter; the leader promotes it to voter once it has caught up.\n", name, *peerAddr)
		fmt.Fprintf(stdout, "Start it on an empty data dir with:\n  leasehold --name %s --peer-addr %s --join %s\n", name, *peerAddr, endpoint)
		return nil

	case "promote", "remove":
		if err := parse(fs, g, args[1:], 1); err != nil {
			return err
		}
		c, err := newAPIClient(g)
		if err != nil {
			return err
		}
		name := fs.Arg(0)
		method, path := http.MethodPost, "/cluster/members/"+url.PathEscape(name)+"/promote"
		if args[0] == "remove" {
			method, path = http.MethodDelete, "/cluster/members/"+url.PathEscape(name)
		}
		err = c.first(context.Background(), func(ctx context.Context, e string) error {
			return c.call(ctx, method, e, path, nil, nil)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "member %s %sd\n", name, args[0])
		return nil
	}
	return errUsage{fmt.Sprintf("unknown command member %s", args[0])}
}

func leaderCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "transfer" {
		return errUsage{"leader needs transfer [NAME]"}
	}
	fs := flag.NewFlagSet("leader transfer", flag.ContinueOnError)
	g := addGlobals(fs)
	if err := parse(fs, g, args[1:], -1); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return errUsage{"leader transfer takes at most one member name"}
	}
	c, err := newAPIClient(g)
	if err != nil {
		return err
	}
	var out struct{ From, To string }
	err = c.first(context.Background(), func(ctx context.Context, e string) error {
		return c.call(ctx, http.MethodPost, e, "/cluster/leader/transfer", map[string]string{"name": fs.Arg(0)}, &out)
	})
	if err != nil {
		return err
	}
	if g.output == "json" {
		return printJSON(stdout, map[string]string{"from": out.From, "to": out.To})
	}
	fmt.Fprintf(stdout, "leadership moved from %s to %s\n", out.From, dash(out.To))
	return nil
}

// endpointStatus is one node's GET /cluster/status, as printed.
type endpointStatus struct {
	Name         string `json:"name"`
	URL          string `json:"url"`
	Leader       bool   `json:"leader"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commitIndex"`
	AppliedIndex uint64 `json:"appliedIndex"`
	DBSize       int64  `json:"dbSize"`
	StoredBytes  int64  `json:"storedBytes"`
	Version      string `json:"version"`
	Error        string `json:"error,omitempty"`
}

type endpointHealth struct {
	URL     string `json:"url"`
	Healthy bool   `json:"healthy"`
	Took    string `json:"took"`
	Error   string `json:"error,omitempty"`
}

// errUnhealthy is etcdctl's verdict when an endpoint fails.
var errUnhealthy = errors.New("unhealthy cluster")

func endpointCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "status" && args[0] != "health") {
		return errUsage{"endpoint needs status or health"}
	}
	fs := flag.NewFlagSet("endpoint "+args[0], flag.ContinueOnError)
	g := addGlobals(fs)
	if err := parse(fs, g, args[1:], 0); err != nil {
		return err
	}
	c, err := newAPIClient(g)
	if err != nil {
		return err
	}
	urls := c.endpoints
	if g.endpoints == "" {
		// Every member's API, as the leader knows them.
		if ml, err := c.members(context.Background()); err == nil {
			urls = nil
			for _, m := range ml.Members {
				if m.APIURL != "" {
					urls = append(urls, m.APIURL)
				}
			}
		}
	}
	if args[0] == "status" {
		return endpointStatuses(c, urls, g, stdout)
	}
	return endpointHealths(c, urls, g, stdout)
}

func endpointStatuses(c *apiClient, urls []string, g *globals, stdout io.Writer) error {
	out := make([]endpointStatus, len(urls))
	failed := each(urls, func(i int, u string) error {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		var st struct {
			Name         string `json:"name"`
			State        string `json:"state"`
			Term         uint64 `json:"term"`
			CommitIndex  uint64 `json:"commitIndex"`
			AppliedIndex uint64 `json:"appliedIndex"`
			DBSize       int64  `json:"dbSize"`
			StoredBytes  int64  `json:"storedBytes"`
			Version      string `json:"version"`
		}
		err := c.call(ctx, http.MethodGet, u, "/cluster/status", nil, &st)
		out[i] = endpointStatus{Name: st.Name, URL: u, Leader: st.State == "leader", Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, DBSize: st.DBSize, StoredBytes: st.StoredBytes, Version: st.Version}
		if err != nil {
			out[i].Error = err.Error()
		}
		return err
	})
	return printEndpoints(g, stdout, out, failed, func() error {
		tw := tabwriter.NewWriter(stdout, 0, 4, 3, ' ', 0)
		fmt.Fprintln(tw, "NAME\tURL\tLEADER\tTERM\tCOMMIT\tAPPLIED\tDB SIZE\tSTORED\tVERSION\tERROR")
		for _, e := range out {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", dash(e.Name), e.URL, e.Leader, e.Term, e.CommitIndex, e.AppliedIndex, bytesHuman(e.DBSize), bytesHuman(e.StoredBytes), dash(e.Version), e.Error)
		}
		return tw.Flush()
	})
}

// printEndpoints prints the endpoints as JSON or with table, then fails
// as etcdctl does when one of them failed.
func printEndpoints(g *globals, stdout io.Writer, endpoints any, failed bool, table func() error) error {
	var err error
	if g.output == "json" {
		err = printJSON(stdout, map[string]any{"endpoints": endpoints})
	} else {
		err = table()
	}
	if err == nil && failed {
		err = errUnhealthy
	}
	return err
}

func endpointHealths(c *apiClient, urls []string, g *globals, stdout io.Writer) error {
	out := make([]endpointHealth, len(urls))
	failed := each(urls, func(i int, u string) error {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		start := time.Now()
		err := c.call(ctx, http.MethodGet, u, "/readyz", nil, nil)
		out[i] = endpointHealth{URL: u, Healthy: err == nil, Took: time.Since(start).Round(time.Microsecond).String()}
		if err != nil {
			out[i].Error = err.Error()
		}
		return err
	})
	return printEndpoints(g, stdout, out, failed, func() error {
		for _, h := range out {
			if h.Healthy {
				fmt.Fprintf(stdout, "%s is healthy: took = %s\n", h.URL, h.Took)
			} else {
				fmt.Fprintf(stdout, "%s is unhealthy: took = %s, error: %s\n", h.URL, h.Took, h.Error)
			}
		}
		return nil
	})
}

// each runs f on every url at once; it reports whether any failed.
func each(urls []string, f func(i int, u string) error) bool {
	var wg sync.WaitGroup
	errs := make([]error, len(urls))
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, u)
		}()
	}
	wg.Wait()
	return errors.Join(errs...) != nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func bytesHuman(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
