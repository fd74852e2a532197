package cgocall

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

func TestWorkerRunsCalls(t *testing.T) {
	t.Parallel()
	w := NewWorker("dcgm", time.Second, nil)
	defer w.Close(time.Second)
	got, err := Call(context.Background(), w, "Add", func() (int, error) { return 1 + 2, nil })
	if err != nil || got != 3 {
		t.Fatalf("call = %d, %v; want 3, nil", got, err)
	}
	_, err = Call(context.Background(), w, "Fail", func() (int, error) { return 0, errors.New("boom") })
	if err == nil || err.Error() != "dcgm Fail: boom" || errors.Is(err, source.ErrUnavailable) {
		t.Errorf("error = %v, want a wrapped, available error", err)
	}
	_, err = Call(context.Background(), w, "Panic", func() (int, error) { panic("mock without a function") })
	if err == nil || err.Error() != "dcgm Panic: panic: mock without a function" {
		t.Errorf("error = %v, want the panic as an error", err)
	}
	if got, err := Call(context.Background(), w, "After", func() (int, error) { return 4, nil }); err != nil || got != 4 {
		t.Errorf("call after a panic = %d, %v", got, err)
	}
}

func TestWorkerBlockedCall(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	w := NewWorker("dcgm", timeout, nil)
	release := make(chan struct{})
	exited := make(chan struct{})

	start := time.Now()
	err := w.Do(context.Background(), "Hang", func() { <-release })
	if elapsed := time.Since(start); elapsed > timeout+time.Second {
		t.Errorf("blocked call returned after %s, want about %s", elapsed, timeout)
	}
	var ce *CallError
	if !errors.As(err, &ce) || ce.Busy || !errors.Is(err, source.ErrUnavailable) {
		t.Fatalf("error = %v, want a timeout wrapping ErrUnavailable", err)
	}

	before := runtime.NumGoroutine()
	for range 100 {
		start := time.Now()
		err := w.Do(context.Background(), "Next", func() { t.Error("ran while blocked") })
		if !errors.As(err, &ce) || !ce.Busy {
			t.Fatalf("error = %v, want fail-fast busy error", err)
		}
		if elapsed := time.Since(start); elapsed > timeout/2 {
			t.Fatalf("busy call took %s, want immediate", elapsed)
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines grew from %d to %d while a call was blocked", before, after)
	}

	close(release)
	poll.Within(t, 5*time.Second, time.Millisecond, "the worker to recover after the blocked call returned", func() bool {
		return w.Do(context.Background(), "After", func() {}) == nil
	})
	go func() { w.Close(time.Second); close(exited) }()
	<-exited
}

func TestWorkerContext(t *testing.T) {
	t.Parallel()
	w := NewWorker("dcgm", time.Minute, nil)
	defer w.Close(time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	go func() { cancel() }()
	err := w.Do(ctx, "Hang", func() { <-release })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

func TestWorkerCloseRunsOnExit(t *testing.T) {
	t.Parallel()
	exited := make(chan struct{})
	w := NewWorker("dcgm", time.Second, func() { close(exited) })
	if !w.Close(time.Second) {
		t.Fatal("worker did not stop")
	}
	<-exited
	if err := w.Do(context.Background(), "Late", func() {}); !errors.Is(err, ErrClosed) {
		t.Errorf("call after close = %v, want ErrClosed", err)
	}
}
