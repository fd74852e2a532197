package bounded

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReaderAndReadAllCaps: a stream of the cap reads whole, one byte more
// is refused with ErrTooLarge, and an ended context stops the read.
func TestReaderAndReadAllCaps(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		in   string
		want error
	}{
		{"at the cap", t.Context(), "12345", nil},
		{"over the cap", t.Context(), "123456", ErrTooLarge},
		{"context ended", ended, "1", context.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := NewReader(tc.ctx, strings.NewReader(tc.in), 5)
			b, err := io.ReadAll(r)
			if !errors.Is(err, tc.want) || (tc.want == nil && string(b) != tc.in) {
				t.Errorf("Reader: %q, %v; want %v", b, err, tc.want)
			}
			b, err = ReadAll(tc.ctx, io.NopCloser(strings.NewReader(tc.in)), 5)
			if !errors.Is(err, tc.want) || (tc.want == nil && string(b) != tc.in) {
				t.Errorf("ReadAll: %q, %v; want %v", b, err, tc.want)
			}
		})
	}
}

// blockedBody blocks its reads until it is closed, as a network body
// whose server stopped sending does.
type blockedBody struct{ closed chan struct{} }

func (b *blockedBody) Read([]byte) (int, error) { <-b.closed; return 0, errors.New("closed") }
func (b *blockedBody) Close() error             { close(b.closed); return nil }

// TestReadAllEndsABlockedBody: ReadAll closes a body blocked in a read when
// its context ends, and returns the context's error.
func TestReadAllEndsABlockedBody(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := ReadAll(ctx, &blockedBody{closed: make(chan struct{})}, 1<<20)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("ReadAll = %v, want the cancellation", err)
	}
}
