package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/client-go/kubernetes/scheme"
)

// The protobuf reader finds renewTime in frames written the way a
// Kubernetes watch stream writes them, and skips other event types.
func TestReadProtobufEvents(t *testing.T) {
	renew := metav1.NewMicroTime(time.Date(2026, 11, 22, 8, 0, 0, 123456000, time.UTC))
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns", ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptrTo("h"), RenewTime: &renew},
	}
	l.SetGroupVersionKind(leaseGVK)
	obj, err := runtime.Encode(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), l)
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	enc := streaming.NewEncoder(protobuf.LengthDelimitedFramer.NewFrameWriter(&stream), protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme))
	for _, typ := range []string{"ADDED", "MODIFIED", "BOOKMARK", "MODIFIED"} {
		if err := enc.Encode(&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: obj}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []time.Time
	var rvs []string
	err = readProtobufEvents(bufio.NewReader(&stream), func(_, ts time.Time, rv []byte) {
		got = append(got, ts)
		rvs = append(rvs, string(rv))
	})
	if err != io.EOF {
		t.Fatalf("err = %v, want EOF", err)
	}
	if len(got) != 2 || !got[0].Equal(renew.Time) || !got[1].Equal(renew.Time) {
		t.Fatalf("recorded %v, want %v twice", got, renew.Time)
	}
	if rvs[0] != "7" || rvs[1] != "7" {
		t.Fatalf("resourceVersions %q, want 7 twice", rvs)
	}
}

// The JSON reader finds renewTime and resourceVersion in the lines of a
// JSON watch stream, and skips other event types.
func TestReadJSONEvents(t *testing.T) {
	renew := metav1.NewMicroTime(time.Date(2026, 11, 22, 8, 0, 0, 123456000, time.UTC))
	var stream bytes.Buffer
	for i, typ := range []string{"ADDED", "MODIFIED", "BOOKMARK", "MODIFIED"} {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns", ResourceVersion: strconv.Itoa(10 + i)},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptrTo("h"), RenewTime: &renew},
		}
		l.SetGroupVersionKind(leaseGVK)
		if err := json.NewEncoder(&stream).Encode(metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Object: l}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	err := readJSONEvents(bufio.NewReader(&stream), func(_, ts time.Time, rv []byte) {
		if !ts.Equal(renew.Time) {
			t.Errorf("renewTime %v, want %v", ts, renew.Time)
		}
		got = append(got, string(rv))
	})
	if err != io.EOF {
		t.Fatalf("err = %v, want EOF", err)
	}
	if strings.Join(got, ",") != "11,13" {
		t.Fatalf("resourceVersions %q, want 11 and 13", got)
	}
}

// The ring gives back a write's response time by resourceVersion until a
// later write takes its slot.
func TestAckRing(t *testing.T) {
	var r ackRing
	at := time.Unix(1795000000, 123)
	r.store(42, at)
	if got, ok := r.load(42); !ok || !got.Equal(at) {
		t.Fatalf("load(42) = %v %v, want %v", got, ok, at)
	}
	if _, ok := r.load(43); ok {
		t.Fatal("load(43) found a write never stored")
	}
	r.store(42+uint64(len(r.slots)), at.Add(time.Second))
	if _, ok := r.load(42); ok {
		t.Fatal("load(42) found a write whose slot was taken")
	}
	for in, want := range map[string]uint64{"0": 0, "7": 7, "18446744073709551615": 0, "": 0, "12a": 0, "123456789": 123456789} {
		v, ok := parseRV([]byte(in))
		if v != want || ok != (want != 0 || in == "0") {
			t.Errorf("parseRV(%q) = %d %v", in, v, ok)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// chunkReader returns one chunk per Read, pausing before each but the
// first, as a connection delivers one write of the server per read.
type chunkReader struct {
	chunks [][]byte
	pause  time.Duration
	reads  int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	if r.reads > 0 {
		time.Sleep(r.pause)
	}
	r.reads++
	n := copy(p, r.chunks[0])
	r.chunks = r.chunks[1:]
	return n, nil
}

// Events that came in one read share their arrival time; an event from a
// later read gets a later one.
func TestArrivalTimePerRead(t *testing.T) {
	line := func(rv int) string {
		return `{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"` + strconv.Itoa(rv) +
			`"},"spec":{"renewTime":"2026-11-22T08:00:00.123456Z"}}}` + "\n"
	}
	r := &chunkReader{chunks: [][]byte{[]byte(line(1) + line(2)), []byte(line(3))}, pause: 5 * time.Millisecond}
	var at []time.Time
	err := readJSONEvents(bufio.NewReader(r), func(now, _ time.Time, _ []byte) { at = append(at, now) })
	if err != io.EOF {
		t.Fatalf("err = %v, want EOF", err)
	}
	if len(at) != 3 {
		t.Fatalf("%d events, want 3", len(at))
	}
	if !at[0].Equal(at[1]) {
		t.Errorf("events of one read arrived at %v and %v", at[0], at[1])
	}
	if at[2].Sub(at[1]) < r.pause {
		t.Errorf("event of the second read arrived %v after the first read's, want ≥ %v", at[2].Sub(at[1]), r.pause)
	}
}

// Lags recorded a batch at a time all reach the merged histogram, the
// ones still in a watcher's buffer included.
func TestLagRecorderRecordsEveryLag(t *testing.T) {
	var l lagRecorder
	a, b := l.add(), l.add()
	for i := range 3*lagBatch + 7 {
		a.record(time.Duration(i%100+1) * time.Millisecond)
	}
	b.record(2 * time.Second)
	all, n := l.merged()
	if want := int64(3*lagBatch + 8); n != want {
		t.Fatalf("merged %d lags, want %d", n, want)
	}
	if got := all.Max(); got < 1_990_000 || got > 2_010_000 {
		t.Errorf("max %d µs, want about 2,000,000", got)
	}
	if got := all.ValueAtQuantile(50); got < 49_000 || got > 52_000 {
		t.Errorf("median %d µs, want about 50,000", got)
	}
}

// The MicroTime fast path reads what time.Parse reads, and hands anything
// else to it.
func TestParseMicroTime(t *testing.T) {
	for _, in := range []string{
		"2026-11-22T08:00:00.123456Z", "1999-12-31T23:59:59.999999Z", "2026-02-29T00:00:00.000000Z",
		"2026-11-22T08:00:00.123456+01:00", "2026-11-22T08:00:00Z", "2026-13-22T08:00:00.123456Z", "not a time at all, 27 bytes",
	} {
		want, werr := time.Parse(metav1.RFC3339Micro, in)
		got, ok := parseMicroTime([]byte(in))
		if ok != (werr == nil) || (ok && !got.Equal(want)) {
			t.Errorf("parseMicroTime(%q) = %v %v, want %v %v", in, got, ok, want, werr)
		}
	}
}
