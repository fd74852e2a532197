package processes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseCgroupCorpus runs ParseCgroup over every file of
// testdata/cgroup: /proc/<pid>/cgroup contents from public captures
// (containerd, CRI-O and Docker; systemd and cgroupfs drivers; cgroup v1,
// v2 and hybrid), each file citing its source in "#" lines and naming the
// owner it must yield in a "# want <pod uid> <container id>" line ("-" for
// none). Adding a capture is adding a file.
func TestParseCgroupCorpus(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "cgroup", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var content strings.Builder
			var want *Owner
			for _, line := range strings.SplitAfter(string(data), "\n") {
				if !strings.HasPrefix(line, "#") {
					content.WriteString(line) // cgroup lines never start with '#'
					continue
				}
				if w, ok := strings.CutPrefix(line, "# want "); ok {
					f := strings.Fields(w)
					if len(f) != 2 {
						t.Fatalf("bad want line %q", line)
					}
					o := Owner{PodUID: strings.TrimPrefix(f[0], "-"), ContainerID: strings.TrimPrefix(f[1], "-")}
					want = &o
				}
			}
			if want == nil {
				t.Fatal(`no "# want" line`)
			}
			got, err := ParseCgroup([]byte(content.String()))
			if err != nil {
				t.Fatalf("ParseCgroup: %v", err)
			}
			if got != *want {
				t.Errorf("ParseCgroup = %+v, want %+v", got, *want)
			}
		})
	}
}
