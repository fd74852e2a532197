package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

// aliasKind says what gpu-exporter does with one of dcgm-exporter's flags.
type aliasKind uint8

const (
	// mapped: sets the gpu-exporter flag that means the same.
	mapped aliasKind = iota
	// already: gpu-exporter always behaves the way the flag asks; accepted
	// and noted in the log.
	already
	// unsupported: fails at start-up unless given dcgm-exporter's default.
	unsupported
)

// alias is one of dcgm-exporter's command-line flags (its urfave/cli name,
// short forms and environment variables): one row of the table below.
type alias struct {
	name    string
	short   string // one letter, or "" (pflag shorthands are one letter)
	long2   string // a longer alternative name, e.g. "rbmn", or ""
	env     string
	boolean bool
	kind    aliasKind
	// target is the gpu-exporter flag a mapped alias sets.
	target string
	// convert turns the alias's value into target's; the zero conversion
	// copies it.
	convert conversion
	// def is dcgm-exporter's default; an unsupported alias given it is
	// accepted.
	def string
	// note says what to use instead (unsupported) or why nothing is needed
	// (already).
	note string
	// deferTo names another alias with the same target that wins when both
	// are given.
	deferTo string
}

// conversion turns a dcgm-exporter flag's value into the value of the
// gpu-exporter flag it sets, and says so in the usage text.
type conversion struct {
	typ  string // the value's type in the usage text; "" is string
	note string // what is accepted or done, in the usage text
	// fn returns the target's value; ok false leaves the target alone (a
	// boolean given as false, "all devices"). nil copies the value.
	fn func(v string) (out string, ok bool, err error)
}

// dcgmExporterAliases lists dcgm-exporter's flags, as its pkg/cmd/app.go
// declares them.
func dcgmExporterAliases() []alias {
	var (
		ms      = conversion{"milliseconds", "milliseconds", milliseconds}
		boolean = conversion{"bool", "true or false", boolValue}
	)
	return []alias{
		{name: "collectors", short: "f", env: "DCGM_EXPORTER_COLLECTORS", target: "collect.counters"},
		{name: "address", short: "a", env: "DCGM_EXPORTER_LISTEN", target: "web.listen-address"},
		{name: "collect-interval", short: "c", env: "DCGM_EXPORTER_INTERVAL", target: "collect.interval", convert: ms},
		{name: "kubernetes", short: "k", env: "DCGM_EXPORTER_KUBERNETES", boolean: true, target: "kubernetes.enabled", convert: boolean},
		{name: "kubernetes-gpu-id-type", env: "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", target: "kubernetes.gpu-id-type", convert: conversion{"", "uid or device-name", gpuIDType}},
		{name: "remote-hostengine-info", short: "r", env: "DCGM_REMOTE_HOSTENGINE_INFO", target: "dcgm.remote-address"},
		{name: "devices", short: "d", env: "DCGM_EXPORTER_DEVICES_STR", target: "collect.gpus", convert: conversion{"", "f, g or g:<ids>; MIG instances come with their GPU", deviceSelection}},
		{name: "use-old-namespace", short: "o", env: "DCGM_EXPORTER_USE_OLD_NAMESPACE", boolean: true, target: "naming.old-namespace", convert: boolean},
		{name: "no-hostname", short: "n", env: "DCGM_EXPORTER_NO_HOSTNAME", boolean: true, target: "naming.hostname-label", convert: ifTrue("none")},
		{name: "xid-count-window-size", short: "x", env: "DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE", target: "naming.xid-count-window", convert: ms},
		{name: "clock-events-count-window-size", env: "DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE", target: "naming.clock-events-count-window", convert: ms},
		{name: "replace-blanks-in-model-name", long2: "rbmn", env: "DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME", boolean: true, target: "naming.replace-blanks-in-model-name", convert: boolean},
		{name: "web-config-file", env: "DCGM_EXPORTER_WEB_CONFIG_FILE", target: "web.config.file"},
		{name: "web-systemd-socket", env: "DCGM_EXPORTER_SYSTEMD_SOCKET", boolean: true, target: "web.systemd-socket", convert: boolean},
		{name: "pod-resources-kubelet-socket", env: "DCGM_POD_RESOURCES_KUBELET_SOCKET", target: "kubernetes.pod-resources-socket"},
		{name: "nvidia-resource-names", env: "NVIDIA_RESOURCE_NAMES", target: "kubernetes.resource-names"},
		{name: "debug", env: "DCGM_EXPORTER_DEBUG", boolean: true, target: "log.level", convert: ifTrue("debug")},
		{name: "log-format", env: "DCGM_EXPORTER_LOG_FORMAT", target: "log.format", convert: conversion{"", "text or json", logFormat}},
		{name: "enable-pprof", env: "DCGM_EXPORTER_ENABLE_PPROF", boolean: true, target: "web.enable-pprof", convert: boolean},
		// Every container sharing a GPU has its own series anyway; the flag
		// adds dcgm-exporter's vgpu label to them.
		{name: "kubernetes-virtual-gpus", env: "KUBERNETES_VIRTUAL_GPUS", boolean: true, target: "naming.vgpu-label", convert: boolean},

		{name: "kubernetes-enable-dra", env: "KUBERNETES_ENABLE_DRA", boolean: true, kind: already,
			note: "DRA allocations are read with --kubernetes.gpu-id-type=auto (the default) or dra"},
		{name: "disable-startup-validate", env: "DISABLE_STARTUP_VALIDATE", boolean: true, kind: already,
			note: "there is no start-up validation to disable"},
		{name: "enable-gpu-bind-unbind-watch", env: "DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH", boolean: true, kind: already,
			note: "GPUs appearing and disappearing are picked up at every collection"},
		{name: "gpu-bind-unbind-poll-interval", env: "DCGM_EXPORTER_GPU_BIND_UNBIND_POLL_INTERVAL", kind: already,
			note: "GPUs appearing and disappearing are picked up at every collection (--collect.interval)"},

		{name: "configmap-data", short: "m", env: "DCGM_EXPORTER_CONFIGMAP_DATA", kind: unsupported, def: "none",
			note: "mount the ConfigMap as a file and pass it with -f or --collect.counters"},
		{name: "cpu-devices", short: "p", env: "DCGM_EXPORTER_CPU_DEVICES_STR", kind: unsupported, def: "f",
			note: "CPU metrics are not collected; leave it at f"},
		{name: "switch-devices", short: "s", env: "DCGM_EXPORTER_OTHER_DEVICES_STR", kind: unsupported, def: "f",
			note: "NVSwitch selection is not supported; leave it at f"},
		// The allowlist comes first: enabling pod labels without one means
		// every label, and defers to an allowlist given with it.
		{name: "kubernetes-pod-label-allowlist-regex", env: "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX", target: "kubernetes.pod-labels"},
		{name: "kubernetes-enable-pod-labels", env: "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", boolean: true, target: "kubernetes.pod-labels", convert: ifTrue(".*"),
			deferTo: "kubernetes-pod-label-allowlist-regex"},
		{name: "kubernetes-enable-pod-uid", env: "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", boolean: true, target: "kubernetes.pod-uid", convert: boolean},
		{name: "fake-gpus", env: "DCGM_EXPORTER_USE_FAKE_GPUS", boolean: true, kind: unsupported, def: "false",
			note: "use --source=sim for simulated GPUs"},
		{name: "enable-dcgm-log", env: "DCGM_EXPORTER_ENABLE_DCGM_LOG", boolean: true, kind: unsupported, def: "false",
			note: "DCGM's own log is not forwarded; read nv-hostengine's log, and use --log.level=debug for gpu-exporter's"},
		{name: "dcgm-log-level", env: "DCGM_EXPORTER_DCGM_LOG_LEVEL", kind: unsupported, def: "NONE",
			note: "DCGM's own log is not forwarded; read nv-hostengine's log, and use --log.level=debug for gpu-exporter's"},
		{name: "hpc-job-mapping-dir", env: "DCGM_HPC_JOB_MAPPING_DIR", target: "hpc.job-mapping-dir"},
		{name: "dump-enabled", env: "DCGM_EXPORTER_DUMP_ENABLED", boolean: true, kind: unsupported, def: "false",
			note: "debug dumps are not written; use --log.level=debug"},
		{name: "dump-directory", env: "DCGM_EXPORTER_DUMP_DIRECTORY", kind: unsupported, def: "/tmp/dcgm-exporter-debug",
			note: "debug dumps are not written; use --log.level=debug"},
		{name: "dump-retention", env: "DCGM_EXPORTER_DUMP_RETENTION", kind: unsupported, def: "24",
			note: "debug dumps are not written; use --log.level=debug"},
		{name: "dump-compression", env: "DCGM_EXPORTER_DUMP_COMPRESSION", boolean: true, kind: unsupported, def: "true",
			note: "debug dumps are not written; use --log.level=debug"},
	}
}

// compatUse records which dcgm-exporter flags and variables were given.
type compatUse struct {
	// given names each flag or variable, as given ("-f", "DCGM_EXPORTER_INTERVAL").
	given []string
	// already are the notes of flags gpu-exporter needs no action for.
	already []string
	// setBy names, per gpu-exporter flag a dcgm-exporter flag or variable
	// set, what set it, for validation errors.
	setBy map[string]string
}

// explain adds to a validation error naming a gpu-exporter flag the
// dcgm-exporter flag or variable that set it: "-c 1" is refused as
// --collect.interval, and the user should recognise it.
func (u compatUse) explain(err error) error {
	for target, where := range u.setBy {
		if strings.Contains(err.Error(), "--"+target) {
			return fmt.Errorf("%w (--%s set by %s)", err, target, where)
		}
	}
	return err
}

// aliasSet is the dcgm-exporter flags declared on a flag set, with the
// values given on the command line, as given.
type aliasSet struct {
	list   []alias
	values map[string]*string // by alias name
}

// addDCGMExporterFlags declares dcgm-exporter's flags on fs, after
// gpu-exporter's own: each one a pflag flag with its short form, a second
// long name (-rbmn) as a pflag normalisation, and an aliasValue holding
// what was given until parseFlags converts it onto the target. Mapped ones
// show in the usage; the others are hidden.
func addDCGMExporterFlags(fs *pflag.FlagSet) aliasSet {
	as := aliasSet{list: dcgmExporterAliases(), values: map[string]*string{}}
	long2 := map[string]string{}
	for _, a := range as.list {
		v := new(string)
		*v = a.def
		as.values[a.name] = v
		f := fs.VarPF(aliasValue{v, a.valueType()}, a.name, a.short, a.usage())
		if a.boolean {
			f.NoOptDefVal = "true"
		}
		if a.kind != mapped {
			_ = fs.MarkHidden(a.name)
		}
		if a.long2 != "" {
			long2[a.long2] = a.name
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
func (a alias) valueType() string {
	switch {
	case a.boolean:
		return "bool"
	case a.convert.typ != "":
		return a.convert.typ
	}
	return "string"
}

// usage is the flag's line in the usage text.
func (a alias) usage() string {
	usage := "dcgm-exporter's --" + a.name
	if a.kind != mapped {
		return usage + ": " + a.note + "."
	}
	usage += ": sets --" + a.target
	if a.convert.note != "" {
		usage += " (" + a.convert.note + ")"
	}
	return usage + ". Environment: " + a.env + "."
}

// applyFlags applies the dcgm-exporter flags given on the command line. A
// mapped flag whose gpu-exporter twin is also given is an error.
func (as aliasSet) applyFlags(fs *pflag.FlagSet, use *compatUse) error {
	for _, a := range as.list {
		if !fs.Changed(a.name) || (a.deferTo != "" && fs.Changed(a.deferTo)) {
			continue
		}
		spelled := "--" + a.name
		if a.short != "" {
			spelled = "-" + a.short + "/--" + a.name
		}
		if a.kind == mapped && fs.Changed(a.target) {
			return fmt.Errorf("%s and --%s both given; they set the same thing: keep one", spelled, a.target)
		}
		if err := a.apply(fs, *as.values[a.name], spelled, use); err != nil {
			return err
		}
	}
	return nil
}

// applyEnv fills each flag not given on the command line from the
// environment: first every gpu-exporter flag from its GPU_EXPORTER_* twin,
// then, in one loop over the table, each dcgm-exporter variable whose flag
// (ours or dcgm-exporter's) is still unset.
func (as aliasSet) applyEnv(fs *pflag.FlagSet, getenv func(string) string, use *compatUse) error {
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
		v := getenv(a.env)
		if v == "" || fs.Changed(a.name) || (a.kind == mapped && fs.Changed(a.target)) {
			continue
		}
		if err := a.apply(fs, v, "environment variable "+a.env, use); err != nil {
			return err
		}
	}
	return nil
}

// apply acts on one dcgm-exporter flag given value v, named where in errors.
func (a alias) apply(fs *pflag.FlagSet, v, where string, use *compatUse) error {
	use.given = append(use.given, strings.TrimPrefix(where, "environment variable "))
	switch a.kind {
	case already:
		use.already = append(use.already, "--"+a.name+": "+a.note)
		return nil
	case unsupported:
		if sameAsDefault(a, v) {
			return nil
		}
		return fmt.Errorf("%s=%q (dcgm-exporter) is not supported: %s", where, v, a.note)
	}
	out, ok := v, true
	if a.convert.fn != nil {
		var err error
		if out, ok, err = a.convert.fn(v); err != nil {
			return fmt.Errorf("%s=%q (dcgm-exporter): %w", where, v, err)
		}
	}
	if !ok {
		return nil
	}
	if err := fs.Set(a.target, out); err != nil {
		return fmt.Errorf("%s=%q (dcgm-exporter, for --%s): %w", where, v, a.target, err)
	}
	if use.setBy == nil {
		use.setBy = map[string]string{}
	}
	use.setBy[a.target] = where + "=" + strconv.Quote(v)
	return nil
}

// sameAsDefault reports whether v asks for dcgm-exporter's default.
func sameAsDefault(a alias, v string) bool {
	if a.boolean {
		b, err := strconv.ParseBool(v)
		d, _ := strconv.ParseBool(a.def)
		return err == nil && b == d
	}
	return strings.EqualFold(strings.TrimSpace(v), a.def)
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
func ifTrue(out string) conversion {
	return conversion{"bool", "to " + out, func(v string) (string, bool, error) {
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
		if _, err := parseGPUList(ids); err != nil || ids == "" {
			return "", false, fmt.Errorf("want g:<ids> with ids like 0,2-4")
		}
		return ids, true, nil
	case "i":
		return "", false, fmt.Errorf("selecting MIG instances is not supported: gpu-exporter exports every instance of the selected GPUs; use f, g or g:<ids>")
	}
	return "", false, fmt.Errorf("want f, g, g:<ids> (ids like 0,2-4) or i")
}

// dcgmExporterLongForms rewrites dcgm-exporter's single-dash long flags
// (-collectors, -rbmn), which its flag library accepts, into the
// double-dash form pflag reads; one-letter flags are left as they are.
func dcgmExporterLongForms(args []string) []string {
	long := map[string]bool{}
	for _, a := range dcgmExporterAliases() {
		long[a.name] = true
		if a.long2 != "" {
			long[a.long2] = true
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

// logCompat notes at start-up what dcgm-exporter's flags did, and naming
// flags that have no effect.
func logCompat(logger *slog.Logger, o *options, fs *pflag.FlagSet) {
	use := o.dcgmExporter
	for _, n := range use.already {
		logger.Info("dcgm-exporter flag needs no counterpart in gpu-exporter", "note", n)
	}
	if len(use.given) > 0 && !fs.Changed("naming") {
		logger.Info("dcgm-exporter flags or environment variables in use, but series keep gpu-exporter's names and units; add --naming=dcgm for dcgm-exporter's DCGM_FI_* names, units and labels", "given", strings.Join(use.given, ","))
	}
	if o.namingMode == exposition.NamingDCGM {
		return
	}
	var idle []string
	for _, name := range []string{"naming.hostname-label", "naming.old-namespace", "naming.replace-blanks-in-model-name", "naming.vgpu-label", "naming.xid-count-window", "naming.clock-events-count-window"} {
		if fs.Changed(name) {
			idle = append(idle, "--"+name)
		}
	}
	if len(idle) > 0 {
		logger.Warn("naming flags have no effect with --naming=prometheus", "flags", strings.Join(idle, ","))
	}
}
