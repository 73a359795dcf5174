package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// lagRecorder keeps one histogram per watcher, merged at the end: a shared
// one behind a lock would make a thousand watchers queue for it.
type lagRecorder struct {
	mu  sync.Mutex
	per []*hdrhistogram.Histogram
}

func (l *lagRecorder) add() *hdrhistogram.Histogram {
	h := hdrhistogram.New(1, 60_000_000, 3)
	l.mu.Lock()
	l.per = append(l.per, h)
	l.mu.Unlock()
	return h
}

// merged is every watcher's lags together; call it once they stopped.
func (l *lagRecorder) merged() (*hdrhistogram.Histogram, int64) {
	all := hdrhistogram.New(1, 60_000_000, 3)
	for _, h := range l.per {
		all.Merge(h)
	}
	return all, all.TotalCount()
}

// startWatchers opens the watches from the current resourceVersion and
// records, for every MODIFIED event, now minus the renewTime in it.
func (b *bench) startWatchers(ctx context.Context, wg *sync.WaitGroup, lag *lagRecorder) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url(b.cfg.watchNode, "")+"?limit=1", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("list before watch: %w", err)
	}
	var list metav1.List
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list before watch: HTTP %d %v", resp.StatusCode, err)
	}
	url := b.url(b.cfg.watchNode, "") + "?watch=true&resourceVersion=" + list.ResourceVersion
	read := readJSONEvents
	accept := "application/json"
	switch b.cfg.watchFormat {
	case "protobuf":
		read, accept = readProtobufEvents, "application/vnd.kubernetes.protobuf;stream=watch"
	case "json":
	default:
		return fmt.Errorf("unknown --watch-format %q (want protobuf or json)", b.cfg.watchFormat)
	}
	ready := make(chan error, b.cfg.watchers)
	for range b.cfg.watchers {
		wg.Add(1)
		h := lag.add()
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header.Set("Accept", accept)
			resp, err := b.client.Do(req)
			if err != nil {
				ready <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				ready <- fmt.Errorf("watch: HTTP %d", resp.StatusCode)
				return
			}
			ready <- nil
			err = read(bufio.NewReaderSize(resp.Body, 64<<10), func(renewed time.Time) {
				_ = h.RecordValue(max(time.Since(renewed).Microseconds(), 1))
			})
			if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				b.failed(err)
			}
		}()
	}
	for range b.cfg.watchers {
		if err := <-ready; err != nil {
			return err
		}
	}
	return nil
}

var renewTimeKey = []byte(`"renewTime":"`)

// readJSONEvents reads JSON lines without decoding them whole: the
// benchmark runs on the same machine as the cluster, so its CPU counts.
func readJSONEvents(br *bufio.Reader, record func(time.Time)) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(line, []byte(`{"type":"MODIFIED"`)) {
			continue
		}
		i := bytes.Index(line, renewTimeKey)
		if i < 0 || len(line) < i+len(renewTimeKey)+27 {
			continue
		}
		t, err := time.Parse(metav1.RFC3339Micro, string(line[i+len(renewTimeKey):i+len(renewTimeKey)+27]))
		if err == nil {
			record(t)
		}
	}
}

// protobufMagic starts every Kubernetes protobuf envelope (runtime.Unknown).
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// readProtobufEvents reads length-prefixed WatchEvent frames and decodes
// each as client-go does: the event, the envelope, the Lease.
func readProtobufEvents(br *bufio.Reader, record func(time.Time)) error {
	var frame []byte
	for {
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(size[:]))
		if cap(frame) < n {
			frame = make([]byte, n)
		}
		frame = frame[:n]
		if _, err := io.ReadFull(br, frame); err != nil {
			return err
		}
		var ev metav1.WatchEvent
		if err := ev.Unmarshal(frame); err != nil {
			return fmt.Errorf("watch event: %w", err)
		}
		if ev.Type != "MODIFIED" || !bytes.HasPrefix(ev.Object.Raw, protobufMagic) {
			continue
		}
		var unknown runtime.Unknown
		if err := unknown.Unmarshal(ev.Object.Raw[len(protobufMagic):]); err != nil {
			return fmt.Errorf("envelope: %w", err)
		}
		var l coordinationv1.Lease
		if err := l.Unmarshal(unknown.Raw); err != nil {
			return fmt.Errorf("lease: %w", err)
		}
		if l.Spec.RenewTime != nil {
			record(l.Spec.RenewTime.Time)
		}
	}
}
