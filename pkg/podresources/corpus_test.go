package podresources

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// draDriver is the driver name of NVIDIA's DRA driver: corpus ids under it
// come as DynamicResources, not as device-plugin ids.
const draDriver = "gpu.nvidia.com"

// corpusNode is one file of testdata/deviceids: a node's GPUs and the ids
// a device plugin (or DRA driver) sent for them, with where each must land.
type corpusNode struct {
	inv source.Inventory
	ids []corpusID
}

type corpusID struct {
	line               int
	resource, id, kind string
	// want is "gpu:<index>", "mig:<gpu>/<gi>" or "unmatched:<reason>".
	want string
}

// readCorpusNode reads a corpus file. Lines:
//
//	# comment (the source of the values: repository, path, licence, machine)
//	gpu <index> <device> <GPU uuid>
//	mig <gpu index> <gpu instance> <MIG uuid>
//	id <resource> <device id> <kind> <want>
func readCorpusNode(t *testing.T, path string) corpusNode {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n corpusNode
	uuids := map[int]string{}
	devices := map[int]string{}
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		w := strings.Fields(line)
		bad := func() { t.Fatalf("%s:%d: malformed corpus line %q", path, ln, line) }
		atoi := func(s string) int {
			v, err := strconv.Atoi(s)
			if err != nil {
				bad()
			}
			return v
		}
		switch {
		case w[0] == "gpu" && len(w) == 4:
			g := atoi(w[1])
			uuids[g], devices[g] = w[3], w[2]
			n.inv.Entities = append(n.inv.Entities, source.Entity{Kind: source.GPU, GPU: g, Device: w[2], UUID: w[3], ComputeInstance: -1})
		case w[0] == "mig" && len(w) == 4:
			g := atoi(w[1])
			n.inv.Entities = append(n.inv.Entities, source.Entity{Kind: source.GPUInstance, GPU: g, Device: devices[g], UUID: uuids[g],
				GPUInstance: atoi(w[2]), ComputeInstance: -1, MIGUUID: w[3]})
		case w[0] == "id" && len(w) == 5:
			n.ids = append(n.ids, corpusID{line: ln, resource: w[1], id: w[2], kind: w[3], want: w[4]})
		default:
			bad()
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(n.ids) == 0 {
		t.Fatalf("%s: no id lines", path)
	}
	return n
}

// TestDeviceIDCorpus runs the parser and the attribution table over every
// file of testdata/deviceids: device ids as real device plugins and the
// DRA driver send them, each file citing where its values come from.
// Adding a capture is adding a file.
func TestDeviceIDCorpus(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "deviceids", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			node := readCorpusNode(t, path)
			var ctrs []ctr
			var resources []string
			for i, c := range node.ids {
				d, perr := ParseDeviceID(c.id, IDTypeAuto)
				switch {
				case c.kind == "malformed" && perr == nil:
					t.Errorf("line %d: %q parsed as %s, want it refused", c.line, c.id, d.Kind)
				case c.kind != "malformed" && perr != nil:
					t.Errorf("line %d: %v", c.line, perr)
				case perr == nil && d.Kind.String() != c.kind:
					t.Errorf("line %d: %q is %s, want %s", c.line, c.id, d.Kind, c.kind)
				}
				pod := ctr{ns: "corpus", pod: "line-" + strconv.Itoa(c.line), name: "c"}
				if i > 0 && node.ids[i-1].id == c.id && node.ids[i-1].resource == c.resource {
					t.Fatalf("line %d: id repeated", c.line)
				}
				if c.resource == draDriver {
					pod.claims = []*podresourcesv1.ClaimResource{{DriverName: draDriver, PoolName: "node", DeviceName: c.id}}
				} else {
					pod.devices = map[string][]string{c.resource: {c.id}}
				}
				ctrs = append(ctrs, pod)
				if !slices.Contains(resources, c.resource) {
					resources = append(resources, c.resource)
				}
			}
			table := NewTable(listResponse(ctrs...), resources, IDTypeAuto)

			// Where each entity's holders say each id landed.
			landed := map[string][]string{} // pod name -> entities
			for i := range node.inv.Entities {
				e := &node.inv.Entities[i]
				name := "gpu:" + strconv.Itoa(e.GPU)
				if e.Kind == source.GPUInstance {
					name = "mig:" + strconv.Itoa(e.GPU) + "/" + strconv.Itoa(e.GPUInstance)
				}
				for _, h := range table.Holders(e) {
					landed[h.Pod] = append(landed[h.Pod], name)
				}
			}
			unmatched := map[string]string{}
			table.unmatched(&node.inv, func(raw, reason string) { unmatched[raw] = reason })
			for _, c := range node.ids {
				pod := "line-" + strconv.Itoa(c.line)
				got := strings.Join(landed[pod], ",")
				if r, ok := unmatched[c.id]; ok {
					got = "unmatched:" + r
				}
				if got != c.want {
					t.Errorf("line %d: %s %q landed on %q, want %q", c.line, c.resource, c.id, got, c.want)
				}
			}
		})
	}
}
