package v1alpha1

// Hand-written protobuf encoding of the v1alpha1 types, wire compatible with
// the gogo-protobuf code k8s.io/api v0.31 generated from
// k8s.io/api/coordination/v1alpha1/generated.proto:
//
//	message LeaseCandidate {
//	  optional k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta metadata = 1;
//	  optional LeaseCandidateSpec spec = 2;
//	}
//	message LeaseCandidateList {
//	  optional k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta metadata = 1;
//	  repeated LeaseCandidate items = 2;
//	}
//	message LeaseCandidateSpec {
//	  optional string leaseName = 1;
//	  optional k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime pingTime = 2;
//	  optional k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime renewTime = 3;
//	  optional string binaryVersion = 4;
//	  optional string emulationVersion = 5;
//	  repeated string preferredStrategies = 6;
//	}
//
// As in the generated code, the non-pointer fields (metadata, spec, the
// strings) are always written, even when empty, the MicroTime pointers only
// when non-nil, and fields go out in ascending field number order. Unmarshal
// merges into the receiver (repeated fields append, as in protobuf), skips
// unknown fields and rejects malformed input; the protobuf serializer calls
// Reset before a top-level Unmarshal.

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Field numbers of generated.proto.
const (
	fieldMetadata = 1 // LeaseCandidate.metadata, LeaseCandidateList.metadata
	fieldSpec     = 2 // LeaseCandidate.spec
	fieldItems    = 2 // LeaseCandidateList.items

	fieldLeaseName           = 1
	fieldPingTime            = 2
	fieldRenewTime           = 3
	fieldBinaryVersion       = 4
	fieldEmulationVersion    = 5
	fieldPreferredStrategies = 6
)

// sizedMarshaler is the gogo-protobuf interface of the embedded apimachinery
// messages (ObjectMeta, ListMeta, MicroTime) and of the types below.
type sizedMarshaler interface {
	Size() int
	MarshalTo([]byte) (int, error)
}

func sizeBytesField(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendMessageField appends msg as a length-delimited field, letting msg
// write itself in place.
func appendMessageField(b []byte, num protowire.Number, msg sizedMarshaler) ([]byte, error) {
	n := msg.Size()
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	start := len(b)
	b = slices.Grow(b, n)[:start+n]
	w, err := msg.MarshalTo(b[start:])
	if err != nil {
		return nil, err
	}
	if w != n {
		return nil, fmt.Errorf("proto: %T: Size is %d but MarshalTo wrote %d bytes", msg, n, w)
	}
	return b, nil
}

// marshalTo implements MarshalTo on top of an append function: it writes
// exactly size bytes at the start of data.
func marshalTo(data []byte, size int, appendTo func([]byte) ([]byte, error)) (int, error) {
	if len(data) < size {
		return 0, io.ErrShortBuffer
	}
	// data[:0] has room for size bytes, so appendTo writes into data.
	out, err := appendTo(data[:0:size])
	if err != nil {
		return 0, err
	}
	if len(out) != size {
		return 0, fmt.Errorf("proto: Size is %d but %d bytes were encoded", size, len(out))
	}
	return size, nil
}

// marshalToSizedBuffer writes exactly size bytes at the end of data, as
// gogo-protobuf's MarshalToSizedBuffer does.
func marshalToSizedBuffer(data []byte, size int, appendTo func([]byte) ([]byte, error)) (int, error) {
	if len(data) < size {
		return 0, io.ErrShortBuffer
	}
	return marshalTo(data[len(data)-size:], size, appendTo)
}

// consumeBytesField reads the value of a length-delimited field.
func consumeBytesField(b []byte, typ protowire.Type, msg, fld string) ([]byte, int, error) {
	if typ != protowire.BytesType {
		return nil, 0, fmt.Errorf("proto: %s: wrong wireType = %d for field %s", msg, typ, fld)
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return nil, 0, fmt.Errorf("proto: %s: field %s: %w", msg, fld, protowire.ParseError(n))
	}
	return v, n, nil
}

// unmarshalFields walks the fields of b, handing each known field's
// length-delimited value to field and skipping unknown ones.
func unmarshalFields(b []byte, msg string, names map[protowire.Number]string, field func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("proto: %s: %w", msg, protowire.ParseError(n))
		}
		b = b[n:]
		name, known := names[num]
		if !known {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("proto: %s: field %d: %w", msg, num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n, err := consumeBytesField(b, typ, msg, name)
		if err != nil {
			return err
		}
		b = b[n:]
		if err := field(num, v); err != nil {
			return err
		}
	}
	return nil
}

var errNilMessage = errors.New("proto: Marshal called with a nil message")

// ---- LeaseCandidateSpec ----

// Size returns the encoded size of m.
func (m *LeaseCandidateSpec) Size() int {
	if m == nil {
		return 0
	}
	n := sizeBytesField(fieldLeaseName, len(m.LeaseName))
	if m.PingTime != nil {
		n += sizeBytesField(fieldPingTime, m.PingTime.Size())
	}
	if m.RenewTime != nil {
		n += sizeBytesField(fieldRenewTime, m.RenewTime.Size())
	}
	n += sizeBytesField(fieldBinaryVersion, len(m.BinaryVersion))
	n += sizeBytesField(fieldEmulationVersion, len(m.EmulationVersion))
	for _, s := range m.PreferredStrategies {
		n += sizeBytesField(fieldPreferredStrategies, len(s))
	}
	return n
}

func (m *LeaseCandidateSpec) appendTo(b []byte) ([]byte, error) {
	var err error
	b = appendStringField(b, fieldLeaseName, m.LeaseName)
	if m.PingTime != nil {
		if b, err = appendMessageField(b, fieldPingTime, m.PingTime); err != nil {
			return nil, err
		}
	}
	if m.RenewTime != nil {
		if b, err = appendMessageField(b, fieldRenewTime, m.RenewTime); err != nil {
			return nil, err
		}
	}
	b = appendStringField(b, fieldBinaryVersion, m.BinaryVersion)
	b = appendStringField(b, fieldEmulationVersion, m.EmulationVersion)
	for _, s := range m.PreferredStrategies {
		b = appendStringField(b, fieldPreferredStrategies, string(s))
	}
	return b, nil
}

// Marshal returns the protobuf encoding of m.
func (m *LeaseCandidateSpec) Marshal() ([]byte, error) {
	if m == nil {
		return nil, errNilMessage
	}
	return m.appendTo(make([]byte, 0, m.Size()))
}

// MarshalTo writes the encoding of m at the start of data, which must hold
// at least Size() bytes, and returns the number of bytes written.
func (m *LeaseCandidateSpec) MarshalTo(data []byte) (int, error) {
	return marshalTo(data, m.Size(), m.appendTo)
}

// MarshalToSizedBuffer writes the encoding of m at the end of data and
// returns the number of bytes written.
func (m *LeaseCandidateSpec) MarshalToSizedBuffer(data []byte) (int, error) {
	return marshalToSizedBuffer(data, m.Size(), m.appendTo)
}

var specFieldNames = map[protowire.Number]string{
	fieldLeaseName:           "LeaseName",
	fieldPingTime:            "PingTime",
	fieldRenewTime:           "RenewTime",
	fieldBinaryVersion:       "BinaryVersion",
	fieldEmulationVersion:    "EmulationVersion",
	fieldPreferredStrategies: "PreferredStrategies",
}

// Unmarshal merges the protobuf encoding data into m.
func (m *LeaseCandidateSpec) Unmarshal(data []byte) error {
	return unmarshalFields(data, "LeaseCandidateSpec", specFieldNames, func(num protowire.Number, v []byte) error {
		switch num {
		case fieldLeaseName:
			m.LeaseName = string(v)
		case fieldPingTime:
			if m.PingTime == nil {
				m.PingTime = &metav1.MicroTime{}
			}
			return m.PingTime.Unmarshal(v)
		case fieldRenewTime:
			if m.RenewTime == nil {
				m.RenewTime = &metav1.MicroTime{}
			}
			return m.RenewTime.Unmarshal(v)
		case fieldBinaryVersion:
			m.BinaryVersion = string(v)
		case fieldEmulationVersion:
			m.EmulationVersion = string(v)
		case fieldPreferredStrategies:
			m.PreferredStrategies = append(m.PreferredStrategies, coordinationv1.CoordinatedLeaseStrategy(v))
		}
		return nil
	})
}

// Reset clears m.
func (m *LeaseCandidateSpec) Reset() { *m = LeaseCandidateSpec{} }

// ProtoMessage marks LeaseCandidateSpec as a protobuf message.
func (*LeaseCandidateSpec) ProtoMessage() {}

// String returns a human-readable form of m, in the style of gogo-protobuf.
func (m *LeaseCandidateSpec) String() string {
	if m == nil {
		return "nil"
	}
	strategies := make([]string, len(m.PreferredStrategies))
	for i, s := range m.PreferredStrategies {
		strategies[i] = string(s)
	}
	return "&LeaseCandidateSpec{" +
		"LeaseName:" + m.LeaseName + "," +
		"PingTime:" + microTimeString(m.PingTime) + "," +
		"RenewTime:" + microTimeString(m.RenewTime) + "," +
		"BinaryVersion:" + m.BinaryVersion + "," +
		"EmulationVersion:" + m.EmulationVersion + "," +
		"PreferredStrategies:[" + strings.Join(strategies, " ") + "]," +
		"}"
}

func microTimeString(t *metav1.MicroTime) string {
	if t == nil {
		return "nil"
	}
	return t.String()
}

// ---- LeaseCandidate ----

// Size returns the encoded size of m.
func (m *LeaseCandidate) Size() int {
	if m == nil {
		return 0
	}
	return sizeBytesField(fieldMetadata, m.ObjectMeta.Size()) + sizeBytesField(fieldSpec, m.Spec.Size())
}

func (m *LeaseCandidate) appendTo(b []byte) ([]byte, error) {
	b, err := appendMessageField(b, fieldMetadata, &m.ObjectMeta)
	if err != nil {
		return nil, err
	}
	return appendMessageField(b, fieldSpec, &m.Spec)
}

// Marshal returns the protobuf encoding of m (without the runtime.Unknown
// envelope the protobuf serializer adds).
func (m *LeaseCandidate) Marshal() ([]byte, error) {
	if m == nil {
		return nil, errNilMessage
	}
	return m.appendTo(make([]byte, 0, m.Size()))
}

// MarshalTo writes the encoding of m at the start of data, which must hold
// at least Size() bytes, and returns the number of bytes written.
func (m *LeaseCandidate) MarshalTo(data []byte) (int, error) {
	return marshalTo(data, m.Size(), m.appendTo)
}

// MarshalToSizedBuffer writes the encoding of m at the end of data and
// returns the number of bytes written.
func (m *LeaseCandidate) MarshalToSizedBuffer(data []byte) (int, error) {
	return marshalToSizedBuffer(data, m.Size(), m.appendTo)
}

var candidateFieldNames = map[protowire.Number]string{
	fieldMetadata: "ObjectMeta",
	fieldSpec:     "Spec",
}

// Unmarshal merges the protobuf encoding data into m.
func (m *LeaseCandidate) Unmarshal(data []byte) error {
	return unmarshalFields(data, "LeaseCandidate", candidateFieldNames, func(num protowire.Number, v []byte) error {
		switch num {
		case fieldMetadata:
			return m.ObjectMeta.Unmarshal(v)
		case fieldSpec:
			return m.Spec.Unmarshal(v)
		}
		return nil
	})
}

// Reset clears m.
func (m *LeaseCandidate) Reset() { *m = LeaseCandidate{} }

// ProtoMessage marks LeaseCandidate as a protobuf message.
func (*LeaseCandidate) ProtoMessage() {}

// String returns a human-readable form of m, in the style of gogo-protobuf.
func (m *LeaseCandidate) String() string {
	if m == nil {
		return "nil"
	}
	return "&LeaseCandidate{" +
		"ObjectMeta:" + strings.TrimPrefix(m.ObjectMeta.String(), "&") + "," +
		"Spec:" + strings.TrimPrefix(m.Spec.String(), "&") + "," +
		"}"
}

// ---- LeaseCandidateList ----

// Size returns the encoded size of m.
func (m *LeaseCandidateList) Size() int {
	if m == nil {
		return 0
	}
	n := sizeBytesField(fieldMetadata, m.ListMeta.Size())
	for i := range m.Items {
		n += sizeBytesField(fieldItems, m.Items[i].Size())
	}
	return n
}

func (m *LeaseCandidateList) appendTo(b []byte) ([]byte, error) {
	b, err := appendMessageField(b, fieldMetadata, &m.ListMeta)
	if err != nil {
		return nil, err
	}
	for i := range m.Items {
		if b, err = appendMessageField(b, fieldItems, &m.Items[i]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Marshal returns the protobuf encoding of m (without the runtime.Unknown
// envelope the protobuf serializer adds).
func (m *LeaseCandidateList) Marshal() ([]byte, error) {
	if m == nil {
		return nil, errNilMessage
	}
	return m.appendTo(make([]byte, 0, m.Size()))
}

// MarshalTo writes the encoding of m at the start of data, which must hold
// at least Size() bytes, and returns the number of bytes written.
func (m *LeaseCandidateList) MarshalTo(data []byte) (int, error) {
	return marshalTo(data, m.Size(), m.appendTo)
}

// MarshalToSizedBuffer writes the encoding of m at the end of data and
// returns the number of bytes written.
func (m *LeaseCandidateList) MarshalToSizedBuffer(data []byte) (int, error) {
	return marshalToSizedBuffer(data, m.Size(), m.appendTo)
}

var listFieldNames = map[protowire.Number]string{
	fieldMetadata: "ListMeta",
	fieldItems:    "Items",
}

// Unmarshal merges the protobuf encoding data into m.
func (m *LeaseCandidateList) Unmarshal(data []byte) error {
	return unmarshalFields(data, "LeaseCandidateList", listFieldNames, func(num protowire.Number, v []byte) error {
		switch num {
		case fieldMetadata:
			return m.ListMeta.Unmarshal(v)
		case fieldItems:
			m.Items = append(m.Items, LeaseCandidate{})
			return m.Items[len(m.Items)-1].Unmarshal(v)
		}
		return nil
	})
}

// Reset clears m.
func (m *LeaseCandidateList) Reset() { *m = LeaseCandidateList{} }

// ProtoMessage marks LeaseCandidateList as a protobuf message.
func (*LeaseCandidateList) ProtoMessage() {}

// String returns a human-readable form of m, in the style of gogo-protobuf.
func (m *LeaseCandidateList) String() string {
	if m == nil {
		return "nil"
	}
	var sb strings.Builder
	sb.WriteString("&LeaseCandidateList{ListMeta:")
	sb.WriteString(strings.TrimPrefix(m.ListMeta.String(), "&"))
	sb.WriteString(",Items:[]LeaseCandidate{")
	for i := range m.Items {
		sb.WriteString(strings.TrimPrefix(m.Items[i].String(), "&"))
		sb.WriteString(",")
	}
	sb.WriteString("},}")
	return sb.String()
}
