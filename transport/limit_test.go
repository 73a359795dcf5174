package transport

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestFrameLimitPassesGobStreams: values of every size up to the limit
// decode through the limiter as without it, type definitions included; the
// first message above it fails without being read.
func TestFrameLimitPassesGobStreams(t *testing.T) {
	var stream bytes.Buffer
	enc := gob.NewEncoder(&stream)
	sizes := []int{0, 1, 100, 127, 128, 255, 256, 65535, 65536, 1 << 20}
	for _, n := range sizes {
		if err := enc.Encode(&streamRequest{ID: uint64(n), Command: bytes.Repeat([]byte{'x'}, n)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Encode(&rpcRequest{Kind: rpcForward, Request: []byte("PUT")}); err != nil {
		t.Fatal(err)
	}
	data := stream.Bytes()

	dec := gob.NewDecoder(newFrameLimit(bufio.NewReader(bytes.NewReader(data)), 1<<20+100))
	for _, n := range sizes {
		var req streamRequest
		if err := dec.Decode(&req); err != nil {
			t.Fatalf("decode %d bytes: %v", n, err)
		}
		if req.ID != uint64(n) || len(req.Command) != n {
			t.Fatalf("decoded %d, %d bytes; want %d", req.ID, len(req.Command), n)
		}
	}
	var last rpcRequest
	if err := dec.Decode(&last); err != nil || string(last.Request) != "PUT" {
		t.Fatalf("last value: %+v, %v", last, err)
	}
	if err := dec.Decode(&last); !errors.Is(err, io.EOF) {
		t.Fatalf("after the stream: %v, want EOF", err)
	}

	dec = gob.NewDecoder(newFrameLimit(bufio.NewReader(bytes.NewReader(data)), 65536))
	for {
		var req streamRequest
		err := dec.Decode(&req)
		if errors.Is(err, errFrameTooLarge) {
			if req.ID != 0 || !strings.Contains(err.Error(), "limit 65536") {
				t.Errorf("refused with %v after decoding %d", err, req.ID)
			}
			break
		}
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if req.ID > 65535 {
			t.Fatalf("decoded a value of %d bytes through a limit of 65536", req.ID)
		}
	}
}

// TestFrameLimitClosesConnections: an RPC or apply stream whose message
// announces more than the limit is closed at once, before the bytes come.
func TestFrameLimitClosesConnections(t *testing.T) {
	h := &countingHandler{}
	srv, _ := newServer(t, "127.0.0.1:0", h)
	addr := srv.Addr().String()
	// A gob count of 17 MiB: four bytes, negated, then big-endian.
	header := []byte{0xfc, 0x01, 0x10, 0x00, 0x00}

	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(append([]byte{connRPC}, header...)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c, "RPC with an oversized message")

	s, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write([]byte{connApplyStream}); err != nil {
		t.Fatal(err)
	}
	_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
	var ack [1]byte
	if _, err := io.ReadFull(s, ack[:]); err != nil || ack[0] != streamAck {
		t.Fatalf("stream ack %v, %v", ack, err)
	}
	if _, err := s.Write(header); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, s, "apply stream with an oversized message")
	if n := h.calls.Load(); n != 0 {
		t.Errorf("handler called %d times", n)
	}

	// Commands well above what the API lets through still go.
	cl := newClient(t)
	big := bytes.Repeat([]byte{'c'}, 4<<20)
	if _, res, err := cl.Apply(ctxFor(t, 10*time.Second), addr, big); err != nil || len(res) != len("applied ")+len(big) {
		t.Fatalf("Apply of 4 MiB: %d bytes, %v", len(res), err)
	}
	if _, err := cl.Forward(ctxFor(t, 10*time.Second), addr, big); err != nil {
		t.Fatalf("Forward of 4 MiB: %v", err)
	}
}
