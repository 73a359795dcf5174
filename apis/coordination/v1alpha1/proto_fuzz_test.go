package v1alpha1

import (
	"bytes"
	"testing"

	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// FuzzUnmarshalLeaseCandidate decodes arbitrary bytes with the
// hand-written protobuf decoder: it never panics; what it reads, the
// generated decoder of coordination.k8s.io/v1beta1 LeaseCandidate (the
// same message but for field 6: a list here, the last value there) reads
// too, as the same candidate; and a candidate it reads encodes,
// in Size bytes, into bytes that read back as the same candidate and
// encode the same.
func FuzzUnmarshalLeaseCandidate(f *testing.F) {
	full := fullCandidate()
	for _, c := range []*LeaseCandidate{full, {}, {Spec: LeaseCandidateSpec{PreferredStrategies: strategies("", "x")}}} {
		b, err := c.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		for n := 1; n < len(b); n += 1 + n/4 {
			f.Add(b[:n])
		}
	}
	for _, b := range [][]byte{
		{}, {0x00}, {0x08, 0x01}, {0x12, 0x00}, {0x12, 0x02, 0x32, 0x00}, {0x0a, 0x80}, {0x0b, 0x0c},
		{0x12, 0x04, 0x12, 0x02, 0x08, 0x01}, {0x12, 0x03, 0x32, 0x01, 0xff}, {0xfa, 0xff, 0xff, 0xff, 0x0f, 0x00},
		{0x12, 0x02, 0x13, 0x14}, {0x12, 0x06, 0x12, 0x04, 0x08, 0x80, 0x80, 0x01},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got LeaseCandidate
		err := got.Unmarshal(data)
		var gen coordinationv1beta1.LeaseCandidate
		genErr := gen.Unmarshal(data)
		if err != nil {
			// Stricter than the generated code is fine: it takes groups
			// whose end marker names another field, for one.
			return
		}
		if genErr != nil {
			t.Fatalf("%x: decoded %v; the generated v1beta1 decoder refuses it: %v", data, &got, genErr)
		}
		want := LeaseCandidate{ObjectMeta: gen.ObjectMeta, Spec: LeaseCandidateSpec{LeaseName: gen.Spec.LeaseName,
			PingTime: gen.Spec.PingTime, RenewTime: gen.Spec.RenewTime, BinaryVersion: gen.Spec.BinaryVersion,
			EmulationVersion: gen.Spec.EmulationVersion}}
		if n := len(got.Spec.PreferredStrategies); n > 0 {
			if got.Spec.PreferredStrategies[n-1] != gen.Spec.Strategy {
				t.Fatalf("%x: strategies %q; the generated decoder's last %q", data, got.Spec.PreferredStrategies, gen.Spec.Strategy)
			}
			want.Spec.PreferredStrategies = got.Spec.PreferredStrategies
		} else if gen.Spec.Strategy != "" {
			t.Fatalf("%x: no strategies; the generated decoder read %q", data, gen.Spec.Strategy)
		}
		if !apiequality.Semantic.DeepEqual(&got, &want) {
			t.Fatalf("%x: decoded\n%v\nthe generated decoder\n%v", data, &got, &want)
		}
		enc, err := got.Marshal()
		if err != nil {
			t.Fatalf("decoded %v, which does not encode: %v", &got, err)
		}
		if len(enc) != got.Size() {
			t.Fatalf("Size %d, encoded %d bytes", got.Size(), len(enc))
		}
		var again LeaseCandidate
		if err := again.Unmarshal(enc); err != nil {
			t.Fatalf("encoding %x of %v does not decode: %v", enc, &got, err)
		}
		if !apiequality.Semantic.DeepEqual(&got, &again) {
			t.Fatalf("round trip changed\n%v\ninto\n%v", &got, &again)
		}
		if enc2, err := again.Marshal(); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encodes differently after a round trip (%v):\n%x\n%x", err, enc, enc2)
		}
		buf := make([]byte, len(enc)+3)
		if n, err := got.MarshalToSizedBuffer(buf); err != nil || n != len(enc) || !bytes.Equal(buf[3:], enc) {
			t.Fatalf("MarshalToSizedBuffer: %d, %v: %x, want %x", n, err, buf[3:], enc)
		}
	})
}
