package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/flagtest"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim/kubelet"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/sourceopen"
)

// fakeSource is a source whose every answer a test chooses.
type fakeSource struct {
	inv                       *source.Inventory
	invErr, watchErr, readErr error
	// blank lists the field ids that read Blank; allBlank blanks every one.
	blank    map[uint16]bool
	allBlank bool
	// blankReads is how many first reads are blank, as DCGM's first read
	// after a watch may be.
	blankReads int
	reads      int
	set        []fields.Field
}

func (f *fakeSource) Name() string { return "nvml" }
func (f *fakeSource) Inventory(context.Context) (*source.Inventory, error) {
	return f.inv, f.invErr
}
func (f *fakeSource) Watch(_ context.Context, set []fields.Field) error {
	f.set = set
	return f.watchErr
}
func (f *fakeSource) Read(context.Context) (*source.Sample, error) {
	if f.readErr != nil {
		return nil, f.readErr
	}
	s := source.NewSample(time.Now(), f.inv, f.set)
	f.reads++
	for e := range f.inv.Entities {
		for i, fl := range f.set {
			if !f.allBlank && !f.blank[fl.ID] && f.reads > f.blankReads {
				s.Set(e, i, source.IntValue(1))
			}
		}
	}
	return s, nil
}
func (f *fakeSource) Close() error { return nil }

const testUUID = "GPU-11111111-2222-3333-4444-555555555555"

func oneGPU() *source.Inventory {
	return &source.Inventory{DriverVersion: "570.86.15", Entities: []source.Entity{
		{Kind: source.GPU, GPU: 0, UUID: testUUID, Device: "nvidia0", Model: "NVIDIA A100-SXM4-40GB"},
	}}
}

// migGPU is oneGPU in MIG mode with one GPU instance.
func migGPU() *source.Inventory {
	inv := oneGPU()
	inv.Entities = append(inv.Entities, source.Entity{Kind: source.GPUInstance, GPU: 0, UUID: testUUID, Device: "nvidia0",
		Model: "NVIDIA A100-SXM4-40GB", GPUInstance: 3, MIGProfile: "3g.40gb", MIGUUID: "MIG-3"})
	return inv
}

// goodHost is a GPU machine where everything is in place.
func goodHost() Host {
	return Host{
		FindLibrary: func(name string) (string, error) { return "/usr/lib/x86_64-linux-gnu/" + name, nil },
		DeviceNodes: func() ([]string, error) {
			return []string{"/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidiactl"}, nil
		},
		Access:      func(string) error { return nil },
		CapSysAdmin: func() (bool, error) { return true, nil },
	}
}

func catalog(t *testing.T) *fields.Catalog {
	t.Helper()
	cat, err := fields.New()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// startKubelet serves the fake kubelet on a short socket path.
func startKubelet(t *testing.T) *kubelet.Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "doc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	k, err := kubelet.Start(filepath.Join(dir, "k.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return k
}

// traits are the properties of the source the flags in args name, from
// the exporter's own table.
func traits(t *testing.T, args ...string) source.Traits {
	t.Helper()
	o := &sourceopen.Options{}
	flagtest.Parse(t, func(fs *pflag.FlagSet) {
		o.AddFlags(fs)
		o.AddFlagsAt(fs, source.AfterProcesses)
		o.AddFlagsAt(fs, source.Last)
	}, args...)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return o.Traits()
}

// nvmlConfig is --source=nvml on a good host with src as the source and a
// kubelet on socket.
func nvmlConfig(t *testing.T, src source.Source, socket string) Config {
	cat := catalog(t)
	return Config{
		Source: "nvml", Traits: traits(t, "--source=nvml"),
		Open:    func(context.Context) (source.Source, string, error) { return src, "", nil },
		Catalog: cat, DefaultFields: cat.Defaults(),
		Kubernetes: Kubernetes{Enabled: "auto", Socket: socket, ResourceNames: podresources.DefaultResourceNames(),
			IDType: podresources.IDTypeAuto, CallTimeout: 2 * time.Second},
		Timeout: 5 * time.Second,
		Host:    goodHost(),
	}
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDoctorSimulatorPassesEveryCheck(t *testing.T) {
	t.Parallel()
	scn, err := sim.LoadBuiltin("mig")
	if err != nil {
		t.Fatal(err)
	}
	src := sim.New(scn)
	k := startKubelet(t)
	k.FollowSim(src)
	cfg := nvmlConfig(t, src, "")
	cfg.Source, cfg.Traits = "sim", traits(t, "--source=sim", "--sim.scenario=mig")
	cfg.Open = func(context.Context) (source.Source, string, error) { return src, k.Path(), nil }
	cfg.Host.DeviceNodes = func() ([]string, error) { return nil, nil }
	cfg.Host.CapSysAdmin = func() (bool, error) { return false, nil }
	r := Run(context.Background(), cfg)
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if r.Failed() {
		t.Fatalf("failed:\n%s", text.String())
	}
	for _, c := range []string{CheckCounters, CheckWebConfig, CheckSource, CheckFields, CheckKubelet, CheckDevices, CheckProfiling} {
		res := r.Result(c)
		if res == nil || res.Status != OK {
			t.Errorf("check %s: %+v, want ok\n%s", c, res, text.String())
		}
	}
	if got := r.Result(CheckSource).Found; !strings.Contains(got, "MIG instances") {
		t.Errorf("gpu-source found %q, want the MIG instances counted", got)
	}
	if !strings.Contains(text.String(), "instance") {
		t.Errorf("report names no MIG instance:\n%s", text.String())
	}
}

// check is what a case expects of one check.
type check struct {
	name   string
	status Status
	// want are substrings of Found, Fix and Details together.
	want []string
}

// expectReport checks r against the failed verdict and each check's status
// and wanted text, printing the whole report on a mismatch.
func expectReport(t *testing.T, r *Report, failed bool, checks []check) {
	t.Helper()
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if r.Failed() != failed {
		t.Errorf("Failed() = %v, want %v\n%s", r.Failed(), failed, text.String())
	}
	for _, c := range checks {
		res := r.Result(c.name)
		if res == nil {
			t.Errorf("no %s check\n%s", c.name, text.String())
			continue
		}
		if res.Status != c.status {
			t.Errorf("%s: status %s, want %s\n%s", c.name, res.Status, c.status, text.String())
		}
		all := res.Found + "\n" + res.Fix + "\n" + strings.Join(res.Details, "\n")
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: %q missing from\n%s", c.name, w, all)
			}
		}
	}
}

func TestDoctorChecks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := write(t, dir, "good.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, Temperature.\n")
	bad := write(t, dir, "bad.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, Temperature.\nDCGM_FI_NO_SUCH_FIELD, gauge, x\n")
	dup := write(t, dir, "dup.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, Temperature.\nDCGM_FI_DEV_GPU_TEMP, gauge, Temperature.\n")
	prof := write(t, dir, "prof.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, Temperature.\nDCGM_FI_PROF_SM_ACTIVE, gauge, SM active.\n")
	noCert := write(t, dir, "nocert.yml", "tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n")
	badHash := write(t, dir, "badhash.yml", "basic_auth_users:\n  alice: not-a-bcrypt-hash\n")
	plain := write(t, dir, "plain.yml", "http_server_config:\n  http2: true\n")
	notSocket := write(t, dir, "plain-file", "")
	defaults := fields.MustNew().Defaults()
	fabricIDs, gpuFabric := map[uint16]bool{}, 0 // fabric fields; those a GPU carries
	for _, f := range defaults {
		if f.Fabric {
			fabricIDs[f.ID] = true
			if f.Levels.Has(fields.LevelGPU) {
				gpuFabric++
			}
		}
	}
	withLink := func(inv *source.Inventory) *source.Inventory {
		link := inv.Entities[0]
		link.Kind, link.Link = source.NVLink, 0
		inv.Entities = append(inv.Entities, link)
		return inv
	}

	cases := []struct {
		name string
		// src is the source; nil: a working one-GPU fake.
		src *fakeSource
		// kubelet prepares the fake kubelet; nil: no kubelet (socket missing).
		kubelet func(*kubelet.Server)
		edit    func(*Config)
		checks  []check
		failed  bool
	}{
		{
			name: "auto without DCGM or NVML",
			edit: func(c *Config) {
				c.Source, c.Traits = "auto", traits(t, "--source=auto")
				c.Host.FindLibrary = func(name string) (string, error) { return "", errors.New(name + " not found") }
				c.Open = func(context.Context) (source.Source, string, error) {
					return nil, "", errors.New("--source=auto: no GPU source answered")
				}
			},
			checks: []check{{CheckSource, Fail, []string{"no GPU source answered", "neither libdcgm.so.4 nor libnvidia-ml.so.1", "--source=sim", "libdcgm.so.4: not found", "libnvidia-ml.so.1: not found"}}},
			failed: true,
		},
		{
			name: "nvml library missing",
			edit: func(c *Config) {
				c.Host.FindLibrary = func(name string) (string, error) { return "", errors.New("not found") }
				c.Open = func(context.Context) (source.Source, string, error) {
					return nil, "", errors.New("--source=nvml: library not found")
				}
			},
			checks: []check{{CheckSource, Fail, []string{"libnvidia-ml.so.1 not found: install the NVIDIA driver"}}},
			failed: true,
		},
		{
			name: "remote hostengine down",
			src:  &fakeSource{inv: oneGPU(), invErr: fmt.Errorf("dcgm connect: %w", source.ErrUnavailable)},
			edit: func(c *Config) {
				c.Source, c.Traits = "dcgm", traits(t, "--source=dcgm", "--dcgm.remote-address="+filepath.Join(dir, "no-hostengine.sock"))
			},
			checks: []check{{CheckSource, Fail, []string{"inventory", "not reachable", "start nv-hostengine"}}},
			failed: true,
		},
		{
			name: "embedded DCGM without libdcgm",
			src:  &fakeSource{inv: oneGPU(), invErr: errors.New("dcgm Init: libdcgm.so.4 not found")},
			edit: func(c *Config) {
				c.Source, c.Traits = "dcgm", traits(t, "--source=dcgm")
				c.Host.FindLibrary = func(name string) (string, error) { return "", errors.New("not found") }
			},
			checks: []check{{CheckSource, Fail, []string{"libdcgm.so.4 not found: install DCGM 4"}}},
			failed: true,
		},
		{
			name:   "no GPU visible",
			src:    &fakeSource{inv: &source.Inventory{}},
			checks: []check{{CheckSource, Fail, []string{"0 GPUs", "NVIDIA_VISIBLE_DEVICES"}}},
			failed: true,
		},
		{
			name:   "watch refused",
			src:    &fakeSource{inv: oneGPU(), watchErr: errors.New("none of the fields can be read")},
			checks: []check{{CheckFields, Fail, []string{"watching", "none of the fields"}}},
			failed: true,
		},
		{
			name:   "read fails",
			src:    &fakeSource{inv: oneGPU(), readErr: fmt.Errorf("nvml read: %w", source.ErrUnavailable)},
			checks: []check{{CheckFields, Fail, []string{"reading", "source unavailable"}}},
			failed: true,
		},
		{
			name:   "every value blank",
			src:    &fakeSource{inv: oneGPU(), allBlank: true},
			checks: []check{{CheckFields, Fail, []string{"no value for any"}}},
			failed: true,
		},
		{
			name:   "first samples not there yet",
			src:    &fakeSource{inv: oneGPU(), blankReads: 2},
			edit:   func(c *Config) { c.Settle = 2 * time.Second },
			checks: []check{{CheckFields, OK, []string{fmt.Sprintf("all %d fields return values", len(defaults)), "read 3 times"}}},
		},
		{
			name:   "first samples not there within the settle time",
			src:    &fakeSource{inv: oneGPU(), blankReads: 1000},
			edit:   func(c *Config) { c.Settle = 300 * time.Millisecond },
			checks: []check{{CheckFields, Fail, []string{"no value for any", "read "}}},
			failed: true,
		},
		{
			// A node without NVLink: the fabric fields are blank, as expected.
			name:   "fabric fields blank without nvlink",
			src:    &fakeSource{inv: oneGPU(), blank: fabricIDs},
			checks: []check{{CheckFields, OK, []string{fmt.Sprintf("all %d fields return values", len(defaults)-gpuFabric), fmt.Sprintf("%d fabric fields blank", gpuFabric)}}},
		},
		{
			// With an NVLink fabric, blank fabric fields are worth a warning.
			name:   "fabric fields blank with nvlink",
			src:    &fakeSource{inv: withLink(oneGPU()), blank: fabricIDs},
			checks: []check{{CheckFields, Warn, []string{"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"}}},
		},
		{
			name: "profiling fields blank, no CAP_SYS_ADMIN",
			src:  &fakeSource{inv: oneGPU(), blank: map[uint16]bool{1002: true}},
			edit: func(c *Config) {
				c.Source, c.Traits, c.CountersFile = "dcgm", traits(t, "--source=dcgm"), prof
				c.Host.CapSysAdmin = func() (bool, error) { return false, nil }
			},
			checks: []check{
				{CheckFields, Warn, []string{"1 of 2 fields have values", "DCGM_FI_PROF_SM_ACTIVE", "CAP_SYS_ADMIN", "gpu 0 (NVIDIA A100-SXM4-40GB, " + testUUID + ", nvidia0): 1 values, 1 blank"}},
				{CheckProfiling, Warn, []string{"lacks CAP_SYS_ADMIN", "SYS_ADMIN capability"}},
			},
		},
		{
			// MIG with the chart's defaults: no CAP_SYS_ADMIN, so the
			// instances' only activity field reads blank.
			name: "MIG instances without activity",
			src:  &fakeSource{inv: migGPU(), blank: map[uint16]bool{1001: true}},
			edit: func(c *Config) { c.Source, c.Traits = "dcgm", traits(t, "--source=dcgm") },
			checks: []check{{CheckFields, Warn, []string{"MIG instances without activity: 1 of 1 read no gpu_graphics_engine_active_ratio (blank)",
				"gpu 0 instance 3 (3g.40gb, MIG-3)", "dcgm.profiling=true", "GPUMIGActivityMissing"}}},
		},
		{
			name:   "MIG instances with activity",
			src:    &fakeSource{inv: migGPU()},
			edit:   func(c *Config) { c.Source, c.Traits = "dcgm", traits(t, "--source=dcgm") },
			checks: []check{{CheckFields, OK, []string{"fields return values"}}},
		},
		{
			name:   "profiling fields with nvml",
			edit:   func(c *Config) { c.CountersFile = prof },
			checks: []check{{CheckProfiling, Warn, []string{"--source=nvml cannot read them"}}},
		},
		{
			name:   "kubelet socket missing, attribution auto",
			checks: []check{{CheckKubelet, Warn, []string{"does not exist", "mount the host's /var/lib/kubelet/pod-resources"}}},
		},
		{
			name:   "kubelet socket missing, attribution on",
			edit:   func(c *Config) { c.Kubernetes.Enabled = "true" },
			checks: []check{{CheckKubelet, Fail, []string{"does not exist", "mount"}}},
			failed: true,
		},
		{
			name:   "kubelet socket is a plain file",
			edit:   func(c *Config) { c.Kubernetes.Socket = notSocket },
			checks: []check{{CheckKubelet, Fail, []string{"is not a unix socket"}}},
			failed: true,
		},
		{
			name:    "kubelet List fails",
			kubelet: func(k *kubelet.Server) { k.SetError(status.Error(codes.Internal, "boom")) },
			checks:  []check{{CheckKubelet, Fail, []string{"List", "boom", "kubelet runs"}}},
			failed:  true,
		},
		{
			name: "kubelet ids matched, unmatched and malformed",
			kubelet: func(k *kubelet.Server) {
				k.SetPods([]kubelet.Pod{{Namespace: "ml", Name: "train", Containers: []kubelet.Container{{Name: "c", Devices: []kubelet.Device{
					{Resource: "nvidia.com/gpu", IDs: []string{testUUID, "GPU-99999999-2222-3333-4444-555555555555", "not an id"}},
				}}}}})
				k.SetAllocatable(map[string][]string{"nvidia.com/gpu": {testUUID}})
			},
			edit: func(c *Config) { c.Kubernetes.IDType = podresources.IDTypeUID },
			checks: []check{{CheckKubelet, Warn, []string{
				"GetAllocatableResources: supported", "resources reported: nvidia.com/gpu", "held by ml/train container c",
				"2 device ids match no GPU", "1 unmatched device ids: unknown_gpu", "1 unmatched device ids: malformed",
				"unmatched device id GPU-99999999-2222-3333-4444-555555555555",
			}}},
		},
		{
			name: "kubelet reports only other resources",
			kubelet: func(k *kubelet.Server) {
				k.SetPods([]kubelet.Pod{{Namespace: "ml", Name: "train", Containers: []kubelet.Container{{Name: "c", Devices: []kubelet.Device{
					{Resource: "example.com/gpu", IDs: []string{testUUID}},
				}}}}})
			},
			checks: []check{{CheckKubelet, Warn, []string{"not implemented", "no reported resource matches", "--kubernetes.resource-names", "example.com/gpu"}}},
		},
		{
			// A kubelet with KubeletPodResourcesGetAllocatable off refuses
			// with a plain error: not served, not a failure.
			name: "kubelet GetAllocatableResources disabled",
			kubelet: func(k *kubelet.Server) {
				k.SetPods([]kubelet.Pod{{Namespace: "ml", Name: "train", Containers: []kubelet.Container{{Name: "c", Devices: []kubelet.Device{
					{Resource: "nvidia.com/gpu", IDs: []string{testUUID}},
				}}}}})
				k.SetAllocatableError(kubelet.ErrAllocatableDisabled)
			},
			checks: []check{{CheckKubelet, OK, []string{"not implemented or disabled", "KubeletPodResourcesGetAllocatable"}}},
		},
		{
			// Go's protobuf refuses proto3 strings that are not UTF-8; the
			// doctor decodes like the exporter, so it reports the pod.
			name: "kubelet reply with bytes that are not UTF-8",
			kubelet: func(k *kubelet.Server) {
				k.SetRawListReply(invalidUTF8Reply(t, "ml", "train\xff", "c", "nvidia.com/gpu", testUUID))
			},
			edit: func(c *Config) { c.Kubernetes.IDType = podresources.IDTypeUID },
			checks: []check{{CheckKubelet, Warn, []string{
				"1 pods", "held by ml/train\uFFFD container c", "1 strings in its replies are not valid UTF-8", "U+FFFD",
			}}},
		},
		{
			name:    "kubelet off",
			kubelet: func(*kubelet.Server) {},
			edit:    func(c *Config) { c.Kubernetes.Enabled = "false" },
			checks:  []check{{CheckKubelet, OK, []string{"off"}}},
		},
		{
			name:   "web config names a missing certificate",
			edit:   func(c *Config) { c.WebConfigFile = noCert },
			checks: []check{{CheckWebConfig, Fail, []string{noCert, "missing.crt", "fix --web.config.file"}}},
			failed: true,
		},
		{
			name: "web config reader fails",
			edit: func(c *Config) {
				c.WebConfigFile = plain
				c.WebConfigFiles = func(context.Context, string) error { return errors.New("--web.config.file: read timed out") }
			},
			checks: []check{{CheckWebConfig, Fail, []string{"read timed out"}}},
			failed: true,
		},
		{
			name:   "web config with a bad password hash",
			edit:   func(c *Config) { c.WebConfigFile = badHash },
			checks: []check{{CheckWebConfig, Fail, []string{"bcrypt"}}},
			failed: true,
		},
		{
			name:   "web config valid",
			edit:   func(c *Config) { c.WebConfigFile = plain },
			checks: []check{{CheckWebConfig, OK, []string{"is valid"}}},
		},
		{
			name:   "counters file with an unknown field",
			edit:   func(c *Config) { c.CountersFile = bad },
			checks: []check{{CheckCounters, Fail, []string{"bad.csv:2", "DCGM_FI_NO_SUCH_FIELD"}}, {CheckFields, OK, []string{fmt.Sprintf("all %d fields", len(defaults))}}},
			failed: true,
		},
		{
			name:   "counters file with a repeated row",
			edit:   func(c *Config) { c.CountersFile = dup },
			checks: []check{{CheckCounters, Warn, []string{"1 fields resolved", "dup.csv:2"}}},
		},
		{
			name:   "counters file resolved",
			edit:   func(c *Config) { c.CountersFile = good },
			checks: []check{{CheckCounters, OK, []string{"1 fields resolved, 0 rows skipped"}}, {CheckFields, OK, []string{"all 1 fields"}}},
		},
		{
			name:   "device nodes absent",
			edit:   func(c *Config) { c.Host.DeviceNodes = func() ([]string, error) { return nil, nil } },
			checks: []check{{CheckDevices, Warn, []string{"/dev/nvidiactl is absent", "NVIDIA container runtime"}}},
		},
		{
			name: "device node not permitted",
			edit: func(c *Config) {
				c.Host.Access = func(p string) error {
					if p == "/dev/nvidia0" {
						return os.ErrPermission
					}
					return nil
				}
			},
			checks: []check{{CheckDevices, Fail, []string{"1 of 2 device nodes", "/dev/nvidia0: permission denied", "run the exporter as root"}}},
			failed: true,
		},
		{
			name:   "device nodes usable",
			checks: []check{{CheckDevices, OK, []string{"/dev/nvidiactl and 1 GPU device nodes"}}},
		},
		{
			name: "remote DCGM needs no local device node",
			edit: func(c *Config) {
				c.Source, c.Traits = "dcgm", traits(t, "--source=dcgm", "--dcgm.remote-address=/run/nv-hostengine.sock")
				c.Host.DeviceNodes = func() ([]string, error) { return nil, nil }
			},
			checks: []check{{CheckDevices, OK, []string{"not needed"}}},
		},
		{
			name:   "pod labels without NODE_NAME",
			edit:   func(c *Config) { c.PodLabels = true },
			checks: []check{{CheckPodLabels, Fail, []string{"NODE_NAME", "downward API"}}},
			failed: true,
		},
		{
			name:   "pod labels with NODE_NAME",
			edit:   func(c *Config) { c.PodLabels, c.NodeName = true, "node-1" },
			checks: []check{{CheckPodLabels, OK, []string{"node-1"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := tc.src
			if src == nil {
				src = &fakeSource{inv: oneGPU()}
			}
			socket := filepath.Join(dir, "no-kubelet.sock")
			if tc.kubelet != nil {
				k := startKubelet(t)
				tc.kubelet(k)
				socket = k.Path()
			}
			cfg := nvmlConfig(t, src, socket)
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			r := Run(context.Background(), cfg)
			expectReport(t, r, tc.failed, tc.checks)
			for _, c := range tc.checks {
				if res := r.Result(c.name); res != nil && res.Status != OK && res.Fix == "" && res.Check != CheckKubelet {
					t.Errorf("%s: %s without a fix", c.name, res.Status)
				}
			}
		})
	}
}

func TestReportJSON(t *testing.T) {
	t.Parallel()
	r := &Report{Results: []Result{
		{Check: CheckSource, Status: OK, Found: "sim"},
		{Check: CheckKubelet, Status: Warn, Found: "missing", Fix: "mount it"},
		{Check: CheckDevices, Status: Fail, Found: "denied", Fix: "root"},
	}}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Checks         []Result
		OK, Warn, Fail int
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Checks) != 3 || got.OK != 1 || got.Warn != 1 || got.Fail != 1 || got.Checks[1].Fix != "mount it" {
		t.Errorf("JSON %s", b.String())
	}
}

func TestHostProbes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	if err := os.Mkdir(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, lib, LibNVML, "")
	conf := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, conf, "nvidia.conf", "# driver\n"+lib+"\n")
	dirs := libraryDirs("", conf)
	if p, err := findLibrary(LibNVML, dirs); err != nil || p != filepath.Join(lib, LibNVML) {
		t.Errorf("findLibrary through ld.so.conf.d = %q, %v", p, err)
	}
	if _, err := findLibrary(LibDCGM, []string{lib}); err == nil {
		t.Error("findLibrary found a library that is not there")
	}
	if d := libraryDirs("/a:/b", conf); d[0] != "/a" || d[1] != "/b" {
		t.Errorf("LD_LIBRARY_PATH not searched first: %v", d)
	}
	for _, tc := range []struct {
		status  string
		want    bool
		wantErr bool
	}{
		{"Name:\tx\nCapEff:\t000001ffffffffff\n", true, false},
		{"CapEff:\t00000000a80425fb\n", false, false},
		{"CapEff:\tzz\n", false, true},
		{"Name:\tx\n", false, true},
	} {
		p := write(t, dir, "status", tc.status)
		got, err := capEffHas(p, capSysAdmin)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("capEffHas(%q) = %v, %v; want %v, error %v", tc.status, got, err, tc.want, tc.wantErr)
		}
	}
}

// invalidUTF8Reply is the wire form of a List reply with one pod whose
// strings may hold bytes that are not UTF-8: marshalled with placeholders
// of the same length, which are then replaced by the raw bytes.
func invalidUTF8Reply(t *testing.T, ns, pod, container, resource, id string) []byte {
	t.Helper()
	var raw [][2]string
	safe := func(s string) string {
		if utf8.ValidString(s) {
			return s
		}
		p := strings.Repeat("Z", len(s))
		raw = append(raw, [2]string{p, s})
		return p
	}
	b, err := proto.Marshal(&podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{{
		Namespace: safe(ns), Name: safe(pod),
		Containers: []*podresourcesv1.ContainerResources{{Name: safe(container),
			Devices: []*podresourcesv1.ContainerDevices{{ResourceName: safe(resource), DeviceIds: []string{safe(id)}}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raw {
		b = bytes.Replace(b, []byte(r[0]), []byte(r[1]), 1)
	}
	return b
}
