//go:build linux

package processes

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
)

// benchChildEnv makes the test binary a stand-in GPU process for
// BenchmarkResolveRealProcfs: it starts the number of OS threads the
// variable gives, says so on stdout and waits for stdin to close.
const benchChildEnv = "GPU_EXPORTER_BENCH_CHILD_THREADS"

// TestBenchChild is the child's body; it skips in a normal run.
func TestBenchChild(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(benchChildEnv))
	if err != nil {
		t.Skip("only a child of BenchmarkResolveRealProcfs")
	}
	for range n {
		go func() {
			runtime.LockOSThread()
			select {}
		}()
	}
	// Give the runtime time to start the locked threads' Ms.
	for range 1000 {
		runtime.Gosched()
	}
	os.Stdout.WriteString("ready\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// BenchmarkResolveRealProcfs resolves, every iteration (a collection),
// the PIDs of 32 real processes of 64 threads each on the host's /proc,
// as accounting does for the processes on a node's GPUs: a training
// process has dozens of threads, and what a cached process costs a
// collection depends on which of its /proc files is read again (the
// kernel builds /proc/<pid>/stat from every thread's times; the fake
// procfs of the other benchmarks is regular files and cannot show it).
func BenchmarkResolveRealProcfs(b *testing.B) {
	const procs, threads = 32, 64
	in := make([]Lookup, 0, procs)
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBenchChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), benchChildEnv+"="+strconv.Itoa(threads))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			stdin.Close()
			_ = cmd.Wait()
		})
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
			b.Fatalf("child %d: %q, %v", cmd.Process.Pid, line, err)
		}
		in = append(in, Lookup{PID: uint32(cmd.Process.Pid)})
	}
	r, err := NewResolver("/proc", 0)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]Resolution, len(in))
	r.Begin()
	r.ResolveAll(b.Context(), in, out)
	for i := range out {
		if out[i].Err != nil {
			b.Fatalf("pid %d: %v", in[i].PID, out[i].Err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r.Begin()
		r.ResolveAll(b.Context(), in, out)
	}
	b.StopTimer()
	for i := range out {
		if out[i].Err != nil {
			b.Fatalf("pid %d: %v", in[i].PID, out[i].Err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/procs, "ns/process")
}
