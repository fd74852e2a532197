package hpcjobs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// BenchmarkRefresh reads an 8-GPU node's directory, two jobs a GPU: the
// cost of one poll, paid once per refresh interval, never per scrape.
func BenchmarkRefresh(b *testing.B) {
	dir := b.TempDir()
	for g := range 8 {
		content := "4242 user=alice partition=gpu\n" + strconv.Itoa(5000+g) + " user=bob\n"
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(g)), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	r, err := New(Config{Dir: dir, RefreshInterval: time.Hour}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJobs is the collector's lookup, once per entity when the table
// or inventory changed.
func BenchmarkJobs(b *testing.B) {
	files := map[Key][]Job{}
	for g := range 8 {
		files[Key{GPU: g, Instance: -1}] = []Job{{ID: "4242"}, {ID: strconv.Itoa(5000 + g)}}
	}
	t := NewTable(files)
	e := &source.Entity{Kind: source.GPU, GPU: 3}
	b.ReportAllocs()
	for b.Loop() {
		if len(t.Jobs(e)) != 2 {
			b.Fatal("lookup failed")
		}
	}
}
