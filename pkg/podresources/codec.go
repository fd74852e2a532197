package podresources

import (
	"bytes"
	"errors"
	"fmt"
	"google.golang.org/grpc"
	"sync/atomic"
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// tolerantCodec is gRPC's protobuf codec, except that a reply whose string
// fields hold invalid UTF-8 is decoded with U+FFFD in place of the invalid
// bytes instead of failing. The pod-resources API is proto3, where Go's
// protobuf rejects such a string on Unmarshal ("string field contains
// invalid UTF-8", google.golang.org/protobuf internal/impl/codec_field.go),
// so one odd pod or device name from a kubelet that does not check what it
// sends would otherwise turn attribution off for the whole node.
type tolerantCodec struct {
	base encoding.CodecV2
	// replaced counts the strings replaced since the last take.
	replaced atomic.Int64
}

var _ encoding.CodecV2 = (*tolerantCodec)(nil)

func newTolerantCodec() *tolerantCodec {
	return &tolerantCodec{base: encoding.GetCodecV2("proto")}
}

// Name is the default codec's, so the content type on the wire is unchanged.
func (c *tolerantCodec) Name() string { return c.base.Name() }

func (c *tolerantCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

func (c *tolerantCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.base.Unmarshal(data, v)
	var utf8Err interface{ InvalidUTF8() bool }
	if err == nil || !errors.As(err, &utf8Err) || !utf8Err.InvalidUTF8() {
		return err
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	fixed, n, ferr := sanitizeWire(data.Materialize(), m.ProtoReflect().Descriptor(), 0)
	if ferr != nil {
		return fmt.Errorf("%w (and replacing the invalid UTF-8 failed: %w)", err, ferr)
	}
	proto.Reset(m)
	if err := proto.Unmarshal(fixed, m); err != nil {
		return err
	}
	c.replaced.Add(int64(n))
	return nil
}

// take returns the strings replaced since the last take and resets the count.
func (c *tolerantCodec) take() int { return int(c.replaced.Swap(0)) }

// callOptions are the call options of a kubelet connection decoding with
// c: the largest reply accepted, and c as the codec.
func (c *tolerantCodec) callOptions() []grpc.CallOption {
	return []grpc.CallOption{grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.ForceCodecV2(c)}
}

// CallOptions are the gRPC call options every kubelet connection of the
// exporter uses (the client here, and the doctor's): replies up to the
// kubelet's own limit, decoded so that strings that are not valid UTF-8
// get U+FFFD instead of failing the whole reply. replaced returns how
// many strings were replaced since it was last called.
func CallOptions() (opts []grpc.CallOption, replaced func() int) {
	c := newTolerantCodec()
	return c.callOptions(), c.take
}

// maxWireDepth bounds message nesting, as protobuf's own decoder does.
const maxWireDepth = 100

// sanitizeWire copies the wire-format message b of type md, replacing invalid
// UTF-8 in its string fields (nested messages included) with U+FFFD, and
// returns how many strings it replaced. Fields the descriptor does not know
// are copied as they are.
func sanitizeWire(b []byte, md protoreflect.MessageDescriptor, depth int) ([]byte, int, error) {
	if depth > maxWireDepth {
		return nil, 0, errors.New("message nested too deep")
	}
	out := make([]byte, 0, len(b))
	replaced := 0
	for len(b) > 0 {
		num, typ, tagLen := protowire.ConsumeTag(b)
		if tagLen < 0 {
			return nil, 0, protowire.ParseError(tagLen)
		}
		fd := md.Fields().ByNumber(num)
		if typ != protowire.BytesType || fd == nil ||
			(fd.Kind() != protoreflect.StringKind && fd.Kind() != protoreflect.MessageKind) {
			n := protowire.ConsumeFieldValue(num, typ, b[tagLen:])
			if n < 0 {
				return nil, 0, protowire.ParseError(n)
			}
			out = append(out, b[:tagLen+n]...)
			b = b[tagLen+n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b[tagLen:])
		if n < 0 {
			return nil, 0, protowire.ParseError(n)
		}
		b = b[tagLen+n:]
		if fd.Kind() == protoreflect.StringKind {
			if !utf8.Valid(v) {
				v = bytes.ToValidUTF8(v, []byte(string(utf8.RuneError)))
				replaced++
			}
		} else {
			var k int
			var err error
			if v, k, err = sanitizeWire(v, fd.Message(), depth+1); err != nil {
				return nil, 0, err
			}
			replaced += k
		}
		out = protowire.AppendTag(out, num, typ)
		out = protowire.AppendBytes(out, v)
	}
	return out, replaced, nil
}
