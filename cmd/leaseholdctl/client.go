package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// globals are the flags every cluster command takes.
type globals struct {
	kubeconfig string
	endpoints  string
	output     string
	timeout    time.Duration
}

// addGlobals registers the common flags on fs.
func addGlobals(fs *flag.FlagSet) *globals {
	g := &globals{}
	fs.StringVar(&g.kubeconfig, "kubeconfig", "", "")
	fs.StringVar(&g.endpoints, "endpoints", "", "")
	fs.StringVar(&g.output, "o", "table", "")
	fs.StringVar(&g.output, "output", "table", "")
	fs.DurationVar(&g.timeout, "timeout", 10*time.Second, "")
	return g
}

// parse parses args into fs and checks the common flags; nargs is how
// many positional arguments the command takes (-1: any).
func parse(fs *flag.FlagSet, g *globals, args []string, nargs int) error {
	fs.SetOutput(io.Discard)
	// Flags may follow the positional arguments, as kubectl's do.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return errUsage{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if err := fs.Parse(pos); err != nil { // leaves them as fs.Args()
		return errUsage{err.Error()}
	}
	if g != nil && g.output != "table" && g.output != "json" {
		return errUsage{fmt.Sprintf("-o %q: want table or json", g.output)}
	}
	if nargs >= 0 && fs.NArg() != nargs {
		return errUsage{fmt.Sprintf("%s takes %d argument(s), got %d", fs.Name(), nargs, fs.NArg())}
	}
	return nil
}

// apiClient talks to the nodes' API with a kubeconfig's credentials.
type apiClient struct {
	hc *http.Client
	// endpoints are the API URLs to ask, in order: --endpoints, else the
	// kubeconfig's server.
	endpoints []string
	timeout   time.Duration
}

func newAPIClient(g *globals) (*apiClient, error) {
	c := &apiClient{timeout: g.timeout}
	path := g.kubeconfig
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	cfg := &rest.Config{}
	if path != "" {
		var err error
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		c.endpoints = []string{strings.TrimSuffix(cfg.Host, "/")}
	}
	if g.endpoints != "" {
		c.endpoints = nil
		for _, e := range strings.Split(g.endpoints, ",") {
			if e = strings.TrimSpace(e); e != "" {
				c.endpoints = append(c.endpoints, strings.TrimSuffix(e, "/"))
			}
		}
	}
	if len(c.endpoints) == 0 {
		return nil, errUsage{"no cluster: give --kubeconfig (or set KUBECONFIG) or --endpoints"}
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c.hc = hc
	return c, nil
}

// do sends a request to endpoint+path with body (JSON, if not nil).
func (c *apiClient) do(ctx context.Context, method, endpoint, path string, body any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, endpoint+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	return c.hc.Do(req)
}

// call sends a request and decodes a 2xx JSON answer into out (if not
// nil); any other answer is an error carrying the server's message.
// A 503 with Retry-After (no leader for the moment, a leader that has
// not yet checked its members) is retried, as client-go does, until ctx
// ends.
func (c *apiClient) call(ctx context.Context, method, endpoint, path string, body, out any) error {
	var data []byte
	for {
		resp, err := c.do(ctx, method, endpoint, path, body)
		if err != nil {
			return err
		}
		data, err = io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode/100 == 2 {
			break
		}
		err = responseError(resp.StatusCode, data)
		wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusServiceUnavailable || wait <= 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(min(wait, 1)) * time.Second):
		}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// responseError is the server's reason for refusing: a Status's message,
// else the body's text.
func responseError(code int, body []byte) error {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
		return fmt.Errorf("%s (%d)", st.Message, code)
	}
	msg := strings.TrimSpace(string(body))
	if code == http.StatusNotFound && msg == "404 page not found" {
		// The router's answer for a path it does not have.
		msg = "the node's release does not serve this (upgrade it, or ask another node with --endpoints)"
	}
	if msg == "" {
		msg = http.StatusText(code)
	}
	return fmt.Errorf("%s (%d)", msg, code)
}

// first runs f against each endpoint in turn until one answers; the
// error is the last endpoint's.
func (c *apiClient) first(ctx context.Context, f func(ctx context.Context, endpoint string) error) error {
	var err error
	for _, e := range c.endpoints {
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		err = f(cctx, e)
		cancel()
		if err == nil {
			return nil
		}
	}
	return err
}

// printJSON writes v indented, as kubectl -o json does.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "    ")
	return enc.Encode(v)
}
