package sourceopen

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/flagtest"
	"github.com/gpu-exporter/gpu-exporter/pkg/doctor"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// nothing is a source that does nothing, written as a new source's package
// would be: its Kind, its options (one flag) and its source. Adding it
// takes one more row in the table and nothing else.
func nothingKind() source.Kind {
	return source.Kind{Name: "nothing", Usage: "nothing (does nothing)", NewOptions: func() source.Options { return &nothingOptions{} }}
}

type nothingOptions struct{ gpus int }

func (o *nothingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.gpus, "nothing.gpus", 0, "GPUs the source does not have.")
}

func (o *nothingOptions) Validate() error {
	if o.gpus < 0 {
		return errors.New("--nothing.gpus must not be negative")
	}
	return nil
}

func (o *nothingOptions) Open(context.Context, source.Settings, *slog.Logger) (*source.Opened, error) {
	return &source.Opened{Source: nothingSource{}}, nil
}

func (o *nothingOptions) Traits() source.Traits {
	return source.Traits{MayLackGPUs: true, Checkup: source.Checkup{
		Profiling: source.ProfilingNone,
		Why:       func(string) string { return " (does nothing)" },
		Fix:       func(func(string) bool) string { return "nothing to fix" },
	}}
}

type nothingSource struct{}

func (nothingSource) Name() string { return "nothing" }
func (nothingSource) Inventory(context.Context) (*source.Inventory, error) {
	return &source.Inventory{}, nil
}
func (nothingSource) Watch(context.Context, []fields.Field) error { return nil }
func (nothingSource) Read(context.Context) (*source.Sample, error) {
	return &source.Sample{Inventory: &source.Inventory{}}, nil
}
func (nothingSource) Close() error { return nil }

// TestNewSourceTouchesOnlyTheTable: a source added as one row of the table
// is named in --source's help and errors, has its flags declared and
// validated, opens, and tells the exporter and the doctor what they need
// through its traits.
func TestNewSourceTouchesOnlyTheTable(t *testing.T) {
	t.Parallel()
	parse := func(args ...string) (*Options, *pflag.FlagSet) {
		o := &Options{}
		o.init(append(table(), nothingKind()))
		fs := flagtest.Parse(t, func(fs *pflag.FlagSet) {
			o.AddFlags(fs)
			o.AddFlagsAt(fs, source.AfterProcesses)
			o.AddFlagsAt(fs, source.Last)
		}, args...)
		return o, fs
	}

	_, fs := parse()
	help := fs.FlagUsages()
	for _, want := range []string{"auto (DCGM, else NVML), dcgm, nvml, sim (built-in simulator) or nothing (does nothing).", "--nothing.gpus"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q:\n%s", want, help)
		}
	}
	if o, _ := parse("--source=cuda"); !strings.Contains(errString(o.Validate()), "want auto, dcgm, nvml, sim or nothing") {
		t.Errorf("unknown source: %v", o.Validate())
	}
	if o, _ := parse("--source=nothing", "--nothing.gpus=-1"); !strings.Contains(errString(o.Validate()), "--nothing.gpus") {
		t.Errorf("bad flag: %v", o.Validate())
	}

	o, _ := parse("--source=nothing")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opened, err := o.Open(ctx, Settings{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	if opened.Source.Name() != "nothing" || !o.Traits().MayLackGPUs {
		t.Fatalf("opened %s with traits %+v", opened.Source.Name(), o.Traits())
	}

	cat, err := fields.New()
	if err != nil {
		t.Fatal(err)
	}
	r := doctor.Run(ctx, doctor.Config{
		Source: o.Kind, Traits: o.Traits(), Catalog: cat, DefaultFields: cat.Defaults(),
		Open: func(context.Context) (source.Source, string, error) { return opened.Source, "", nil },
		Host: doctor.Host{DeviceNodes: func() ([]string, error) { return nil, nil }},
	})
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	res := r.Result(doctor.CheckSource)
	if res == nil || res.Status != doctor.Warn || !strings.Contains(res.Found, "--source=nothing uses nothing (does nothing): 0 GPUs") {
		t.Errorf("doctor's source check:\n%s", b.String())
	}
	if res := r.Result(doctor.CheckDevices); res == nil || !strings.Contains(res.Found, "not needed by --source=nothing") {
		t.Errorf("doctor's devices check:\n%s", b.String())
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
