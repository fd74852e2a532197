// Package dcgmflags accepts dcgm-exporter's command-line flags and
// environment variables (its pkg/cmd/app.go) on gpu-exporter's flag set:
// each one sets the gpu-exporter flag that means the same, is accepted as
// needing nothing, or is refused with what to use instead.
package dcgmflags

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Kind says what gpu-exporter does with one of dcgm-exporter's flags.
type Kind uint8

const (
	// Mapped: sets the gpu-exporter flag that means the same.
	Mapped Kind = iota
	// Already: gpu-exporter always behaves the way the flag asks; accepted
	// and noted in the log.
	Already
	// Unsupported: fails at start-up unless given dcgm-exporter's default.
	Unsupported
)

// Alias is one of dcgm-exporter's command-line flags (its urfave/cli name,
// short forms and environment variables): one row of the table below.
type Alias struct {
	Name    string
	Short   string // one letter, or "" (pflag shorthands are one letter)
	Long2   string // a longer alternative name, e.g. "rbmn", or ""
	Env     string
	Boolean bool
	Kind    Kind
	// Target is the gpu-exporter flag a mapped alias sets.
	Target string
	// Convert turns the alias's value into Target's; the zero conversion
	// copies it.
	Convert Conversion
	// Def is dcgm-exporter's default; an unsupported alias given it is
	// accepted.
	Def string
	// Note says what to use instead (unsupported) or why nothing is needed
	// (already).
	Note string
	// DeferTo names another alias with the same target that wins when both
	// are given.
	DeferTo string
}

// Conversion turns a dcgm-exporter flag's value into the value of the
// gpu-exporter flag it sets, and says so in the usage text.
type Conversion struct {
	typ  string // the value's type in the usage text; "" is string
	note string // what is accepted or done, in the usage text
	// fn returns the target's value; ok false leaves the target alone (a
	// boolean given as false, "all devices"). nil copies the value.
	fn func(v string) (out string, ok bool, err error)
}

// Aliases lists dcgm-exporter's flags, as its pkg/cmd/app.go declares
// them.
func Aliases() []Alias {
	var (
		ms      = Conversion{"milliseconds", "milliseconds", milliseconds}
		boolean = Conversion{"bool", "true or false", boolValue}
	)
	return []Alias{
		{Name: "collectors", Short: "f", Env: "DCGM_EXPORTER_COLLECTORS", Target: "collect.counters"},
		{Name: "address", Short: "a", Env: "DCGM_EXPORTER_LISTEN", Target: "web.listen-address"},
		{Name: "collect-interval", Short: "c", Env: "DCGM_EXPORTER_INTERVAL", Target: "collect.interval", Convert: ms},
		{Name: "kubernetes", Short: "k", Env: "DCGM_EXPORTER_KUBERNETES", Boolean: true, Target: "kubernetes.enabled", Convert: boolean},
		{Name: "kubernetes-gpu-id-type", Env: "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", Target: "kubernetes.gpu-id-type", Convert: Conversion{"", "uid or device-name", gpuIDType}},
		{Name: "remote-hostengine-info", Short: "r", Env: "DCGM_REMOTE_HOSTENGINE_INFO", Target: "dcgm.remote-address"},
		{Name: "devices", Short: "d", Env: "DCGM_EXPORTER_DEVICES_STR", Target: "collect.gpus", Convert: Conversion{"", "f, g or g:<ids>; MIG instances come with their GPU", deviceSelection}},
		{Name: "use-old-namespace", Short: "o", Env: "DCGM_EXPORTER_USE_OLD_NAMESPACE", Boolean: true, Target: "naming.old-namespace", Convert: boolean},
		{Name: "no-hostname", Short: "n", Env: "DCGM_EXPORTER_NO_HOSTNAME", Boolean: true, Target: "naming.hostname-label", Convert: ifTrue("none")},
		{Name: "xid-count-window-size", Short: "x", Env: "DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE", Target: "naming.xid-count-window", Convert: ms},
		{Name: "clock-events-count-window-size", Env: "DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE", Target: "naming.clock-events-count-window", Convert: ms},
		{Name: "replace-blanks-in-model-name", Long2: "rbmn", Env: "DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME", Boolean: true, Target: "naming.replace-blanks-in-model-name", Convert: boolean},
		{Name: "web-config-file", Env: "DCGM_EXPORTER_WEB_CONFIG_FILE", Target: "web.config.file"},
		{Name: "web-systemd-socket", Env: "DCGM_EXPORTER_SYSTEMD_SOCKET", Boolean: true, Target: "web.systemd-socket", Convert: boolean},
		{Name: "pod-resources-kubelet-socket", Env: "DCGM_POD_RESOURCES_KUBELET_SOCKET", Target: "kubernetes.pod-resources-socket"},
		{Name: "nvidia-resource-names", Env: "NVIDIA_RESOURCE_NAMES", Target: "kubernetes.resource-names"},
		{Name: "debug", Env: "DCGM_EXPORTER_DEBUG", Boolean: true, Target: "log.level", Convert: ifTrue("debug")},
		{Name: "log-format", Env: "DCGM_EXPORTER_LOG_FORMAT", Target: "log.format", Convert: Conversion{"", "text or json", logFormat}},
		{Name: "enable-pprof", Env: "DCGM_EXPORTER_ENABLE_PPROF", Boolean: true, Target: "web.enable-pprof", Convert: boolean},
		// Every container sharing a GPU has its own series anyway; the flag
		// adds dcgm-exporter's vgpu label to them.
		{Name: "kubernetes-virtual-gpus", Env: "KUBERNETES_VIRTUAL_GPUS", Boolean: true, Target: "naming.vgpu-label", Convert: boolean},

		// dcgm-exporter's flag turns on its ResourceSlice informer
		// (internal/pkg/transformation/dra.go, NVIDIA/dcgm-exporter@d5e5f510).
		{Name: "kubernetes-enable-dra", Env: "KUBERNETES_ENABLE_DRA", Boolean: true, Target: "kubernetes.dra", Convert: boolean},
		{Name: "disable-startup-validate", Env: "DISABLE_STARTUP_VALIDATE", Boolean: true, Kind: Already,
			Note: "there is no start-up validation to disable"},
		{Name: "enable-gpu-bind-unbind-watch", Env: "DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH", Boolean: true, Kind: Already,
			Note: "GPUs appearing and disappearing are picked up at every collection"},
		{Name: "gpu-bind-unbind-poll-interval", Env: "DCGM_EXPORTER_GPU_BIND_UNBIND_POLL_INTERVAL", Kind: Already,
			Note: "GPUs appearing and disappearing are picked up at every collection (--collect.interval)"},

		{Name: "configmap-data", Short: "m", Env: "DCGM_EXPORTER_CONFIGMAP_DATA", Kind: Unsupported, Def: "none",
			Note: "mount the ConfigMap as a file and pass it with -f or --collect.counters"},
		{Name: "cpu-devices", Short: "p", Env: "DCGM_EXPORTER_CPU_DEVICES_STR", Kind: Unsupported, Def: "f",
			Note: "CPU metrics are not collected; leave it at f"},
		{Name: "switch-devices", Short: "s", Env: "DCGM_EXPORTER_OTHER_DEVICES_STR", Kind: Unsupported, Def: "f",
			Note: "NVSwitch selection is not supported; leave it at f"},
		// The allowlist comes first: enabling pod labels without one means
		// every label, and defers to an allowlist given with it.
		{Name: "kubernetes-pod-label-allowlist-regex", Env: "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX", Target: "kubernetes.pod-labels"},
		{Name: "kubernetes-enable-pod-labels", Env: "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", Boolean: true, Target: "kubernetes.pod-labels", Convert: ifTrue(".*"),
			DeferTo: "kubernetes-pod-label-allowlist-regex"},
		{Name: "kubernetes-enable-pod-uid", Env: "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", Boolean: true, Target: "kubernetes.pod-uid", Convert: boolean},
		{Name: "fake-gpus", Env: "DCGM_EXPORTER_USE_FAKE_GPUS", Boolean: true, Kind: Unsupported, Def: "false",
			Note: "use --source=sim for simulated GPUs"},
		{Name: "enable-dcgm-log", Env: "DCGM_EXPORTER_ENABLE_DCGM_LOG", Boolean: true, Kind: Unsupported, Def: "false",
			Note: "DCGM's own log is not forwarded; read nv-hostengine's log, and use --log.level=debug for gpu-exporter's"},
		{Name: "dcgm-log-level", Env: "DCGM_EXPORTER_DCGM_LOG_LEVEL", Kind: Unsupported, Def: "NONE",
			Note: "DCGM's own log is not forwarded; read nv-hostengine's log, and use --log.level=debug for gpu-exporter's"},
		{Name: "hpc-job-mapping-dir", Env: "DCGM_HPC_JOB_MAPPING_DIR", Target: "hpc.job-mapping-dir"},
		{Name: "dump-enabled", Env: "DCGM_EXPORTER_DUMP_ENABLED", Boolean: true, Kind: Unsupported, Def: "false",
			Note: "debug dumps are not written; use --log.level=debug"},
		{Name: "dump-directory", Env: "DCGM_EXPORTER_DUMP_DIRECTORY", Kind: Unsupported, Def: "/tmp/dcgm-exporter-debug",
			Note: "debug dumps are not written; use --log.level=debug"},
		{Name: "dump-retention", Env: "DCGM_EXPORTER_DUMP_RETENTION", Kind: Unsupported, Def: "24",
			Note: "debug dumps are not written; use --log.level=debug"},
		{Name: "dump-compression", Env: "DCGM_EXPORTER_DUMP_COMPRESSION", Boolean: true, Kind: Unsupported, Def: "true",
			Note: "debug dumps are not written; use --log.level=debug"},
	}
}

// Use records which dcgm-exporter flags and variables were given.
type Use struct {
	// Given names each flag or variable, as given ("-f", "DCGM_EXPORTER_INTERVAL").
	Given []string
	// Already are the notes of flags gpu-exporter needs no action for.
	Already []string
	// setBy names, per gpu-exporter flag a dcgm-exporter flag or variable
	// set, what set it, for validation errors.
	setBy map[string]string
}

// Explain adds to a validation error naming a gpu-exporter flag the
// dcgm-exporter flag or variable that set it: "-c 1" is refused as
// --collect.interval, and the user should recognise it.
func (u Use) Explain(err error) error {
	for target, where := range u.setBy {
		if strings.Contains(err.Error(), "--"+target) {
			return fmt.Errorf("%w (--%s set by %s)", err, target, where)
		}
	}
	return err
}

// Set is the dcgm-exporter flags declared on a flag set, with the
// values given on the command line, as given.
type Set struct {
	list   []Alias
	values map[string]*string // by alias name
}

// Declare declares dcgm-exporter's flags on fs, after
// gpu-exporter's own: each one a pflag flag with its short form, a second
// long name (-rbmn) as a pflag normalisation, and an aliasValue holding
// what was given until ApplyFlags or ApplyEnv converts it onto the target. Mapped ones
// show in the usage; the others are hidden.
func Declare(fs *pflag.FlagSet) *Set {
	as := &Set{list: Aliases(), values: map[string]*string{}}
	long2 := map[string]string{}
	for _, a := range as.list {
		v := new(string)
		*v = a.Def
		as.values[a.Name] = v
		f := fs.VarPF(aliasValue{v, a.valueType()}, a.Name, a.Short, a.usage())
		if a.Boolean {
			f.NoOptDefVal = "true"
		}
		if a.Kind != Mapped {
			_ = fs.MarkHidden(a.Name)
		}
		if a.Long2 != "" {
			long2[a.Long2] = a.Name
		}
	}
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if n, ok := long2[name]; ok {
			name = n
		}
		return pflag.NormalizedName(name)
	})
	return as
}

// aliasValue holds a dcgm-exporter flag's value as given; its type only
// names the value in the usage text.
type aliasValue struct {
	v   *string
	typ string
}

func (a aliasValue) String() string     { return *a.v }
func (a aliasValue) Set(s string) error { *a.v = s; return nil }
func (a aliasValue) Type() string       { return a.typ }

// valueType names the kind of value a dcgm-exporter flag takes.
func (a Alias) valueType() string {
	switch {
	case a.Boolean:
		return "bool"
	case a.Convert.typ != "":
		return a.Convert.typ
	}
	return "string"
}

// usage is the flag's line in the usage text.
func (a Alias) usage() string {
	usage := "dcgm-exporter's --" + a.Name
	if a.Kind != Mapped {
		return usage + ": " + a.Note + "."
	}
	usage += ": sets --" + a.Target
	if a.Convert.note != "" {
		usage += " (" + a.Convert.note + ")"
	}
	return usage + ". Environment: " + a.Env + "."
}

// ApplyFlags applies the dcgm-exporter flags given on the command line. A
// mapped flag whose gpu-exporter twin is also given is an error.
func (as *Set) ApplyFlags(fs *pflag.FlagSet, use *Use) error {
	for _, a := range as.list {
		if !fs.Changed(a.Name) || (a.DeferTo != "" && fs.Changed(a.DeferTo)) {
			continue
		}
		spelled := "--" + a.Name
		if a.Short != "" {
			spelled = "-" + a.Short + "/--" + a.Name
		}
		if a.Kind == Mapped && fs.Changed(a.Target) {
			return fmt.Errorf("%s and --%s both given; they set the same thing: keep one", spelled, a.Target)
		}
		if err := a.apply(fs, *as.values[a.Name], spelled, use); err != nil {
			return err
		}
	}
	return nil
}

// ApplyEnv fills each flag not given on the command line from the
// environment: first every gpu-exporter flag from its twin envName(flag),
// then, in one loop over the table, each dcgm-exporter variable whose flag
// (ours or dcgm-exporter's) is still unset.
func (as *Set) ApplyEnv(fs *pflag.FlagSet, getenv, envName func(string) string, use *Use) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		v := getenv(envName(f.Name))
		if err != nil || f.Changed || v == "" || as.values[f.Name] != nil {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = fmt.Errorf("environment variable %s=%q (for --%s): %w", envName(f.Name), v, f.Name, serr)
		}
	})
	if err != nil {
		return err
	}
	for _, a := range as.list {
		v := getenv(a.Env)
		if v == "" || fs.Changed(a.Name) || (a.Kind == Mapped && fs.Changed(a.Target)) {
			continue
		}
		if err := a.apply(fs, v, "environment variable "+a.Env, use); err != nil {
			return err
		}
	}
	return nil
}

// apply acts on one dcgm-exporter flag given value v, named where in errors.
func (a Alias) apply(fs *pflag.FlagSet, v, where string, use *Use) error {
	use.Given = append(use.Given, strings.TrimPrefix(where, "environment variable "))
	switch a.Kind {
	case Already:
		use.Already = append(use.Already, "--"+a.Name+": "+a.Note)
		return nil
	case Unsupported:
		if sameAsDefault(a, v) {
			return nil
		}
		return fmt.Errorf("%s=%q (dcgm-exporter) is not supported: %s", where, v, a.Note)
	}
	out, ok := v, true
	if a.Convert.fn != nil {
		var err error
		if out, ok, err = a.Convert.fn(v); err != nil {
			return fmt.Errorf("%s=%q (dcgm-exporter): %w", where, v, err)
		}
	}
	if !ok {
		return nil
	}
	if err := fs.Set(a.Target, out); err != nil {
		return fmt.Errorf("%s=%q (dcgm-exporter, for --%s): %w", where, v, a.Target, err)
	}
	if use.setBy == nil {
		use.setBy = map[string]string{}
	}
	use.setBy[a.Target] = where + "=" + strconv.Quote(v)
	return nil
}

// sameAsDefault reports whether v asks for dcgm-exporter's default.
func sameAsDefault(a Alias, v string) bool {
	if a.Boolean {
		b, err := strconv.ParseBool(v)
		d, _ := strconv.ParseBool(a.Def)
		return err == nil && b == d
	}
	return strings.EqualFold(strings.TrimSpace(v), a.Def)
}

func milliseconds(v string) (string, bool, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return "", false, fmt.Errorf("want a positive number of milliseconds")
	}
	return strconv.Itoa(n) + "ms", true, nil
}

func boolValue(v string) (string, bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return "", false, fmt.Errorf("want true or false")
	}
	return strconv.FormatBool(b), true, nil
}

// ifTrue sets the target to out when the boolean is true, and leaves it
// alone when false.
func ifTrue(out string) Conversion {
	return Conversion{"bool", "to " + out, func(v string) (string, bool, error) {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", false, fmt.Errorf("want true or false")
		}
		return out, b, nil
	}}
}

func gpuIDType(v string) (string, bool, error) {
	switch v {
	case "uid", "device-name":
		return v, true, nil
	}
	return "", false, fmt.Errorf("want uid or device-name")
}

func logFormat(v string) (string, bool, error) {
	switch v {
	case "text":
		return "logfmt", true, nil
	case "json":
		return "json", true, nil
	}
	return "", false, fmt.Errorf("want text or json")
}

// deviceSelection reads dcgm-exporter's -d syntax: f (every GPU, or its MIG
// instances), g (every GPU), g:<ids> with ids like 0,2-4, i or i:<ids> (MIG
// instances). gpu-exporter always exports a GPU and its MIG instances
// together, so it selects GPUs only.
func deviceSelection(v string) (string, bool, error) {
	kind, ids, hasIDs := strings.Cut(strings.TrimSpace(v), ":")
	switch kind {
	case "f":
		if hasIDs {
			return "", false, fmt.Errorf("no range can follow f")
		}
		return "", false, nil
	case "g":
		if !hasIDs {
			return "", false, nil
		}
		if _, err := source.ParseGPUList(ids); err != nil || ids == "" {
			return "", false, fmt.Errorf("want g:<ids> with ids like 0,2-4")
		}
		return ids, true, nil
	case "i":
		return "", false, fmt.Errorf("selecting MIG instances is not supported: gpu-exporter exports every instance of the selected GPUs; use f, g or g:<ids>")
	}
	return "", false, fmt.Errorf("want f, g, g:<ids> (ids like 0,2-4) or i")
}

// LongForms rewrites dcgm-exporter's single-dash long flags
// (-collectors, -rbmn), which its flag library accepts, into the
// double-dash form pflag reads; one-letter flags are left as they are.
func LongForms(args []string) []string {
	long := map[string]bool{}
	for _, a := range Aliases() {
		long[a.Name] = true
		if a.Long2 != "" {
			long[a.Long2] = true
		}
	}
	out := make([]string, 0, len(args))
	for i, arg := range args {
		if arg == "--" {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(arg, "-") && !strings.HasPrefix(arg, "--") {
			name, _, _ := strings.Cut(arg[1:], "=")
			if len(name) > 1 && long[name] {
				arg = "-" + arg
			}
		}
		out = append(out, arg)
	}
	return out
}
