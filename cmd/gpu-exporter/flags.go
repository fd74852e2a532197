package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/dcgmflags"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
)

// envPrefix prefixes the environment twin of every flag:
// --collect.interval is GPU_EXPORTER_COLLECT_INTERVAL.
const envPrefix = "GPU_EXPORTER_"

// options holds every command-line setting.
type options struct {
	listenAddresses []string
	webConfigFile   string
	systemdSocket   bool
	telemetryPath   string
	writeTimeout    time.Duration
	enablePprof     bool
	healthAddress   string
	shutdownGrace   time.Duration

	source      string
	interval    time.Duration
	timeout     time.Duration
	countersCSV string
	maxSeries   int
	gpus        string
	scenario    string
	processes   string // --collect.processes
	procfs      string // --path.procfs

	nvlinkInterval time.Duration // --collect.nvlink-interval

	naming            string
	hostnameLabel     string
	oldNamespace      bool
	replaceBlanks     bool
	vgpuLabel         bool
	xidWindow         time.Duration
	clockEventsWindow time.Duration

	k8sEnabled     string
	k8sSocket      string
	k8sRefresh     time.Duration
	k8sResources   []string
	k8sIDType      string
	k8sCallTimeout time.Duration
	podLabels      string
	podUID         bool
	podLabelsLimit int
	podAllow       *regexp.Regexp // compiled --kubernetes.pod-labels

	hpcJobDir  string
	hpcRefresh time.Duration

	dcgmMode          string
	dcgmRemoteAddress string

	logLevel  *promslog.Level
	logFormat *promslog.Format

	version bool

	// Parsed from the flags above by validate.
	namingMode exposition.Naming
	gpuList    []int
	// processMode is --collect.processes parsed.
	processMode processes.Mode
	// nodeName is $NODE_NAME, the hostname label's value in dcgm naming.
	nodeName string
	// dcgmExporter records the dcgm-exporter flags and environment
	// variables given, for the start-up log.
	dcgmExporter dcgmflags.Use
}

// promslogValue adapts promslog's level and format to pflag.
type promslogValue struct {
	v interface {
		String() string
		Set(string) error
	}
	typ string
}

func (p promslogValue) String() string     { return p.v.String() }
func (p promslogValue) Set(s string) error { return p.v.Set(s) }
func (p promslogValue) Type() string       { return p.typ }

func newFlagSet(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("gpu-exporter", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringSliceVar(&o.listenAddresses, "web.listen-address", []string{":9400"}, "Addresses to listen on for HTTP requests (repeatable or comma-separated): host:port, or vsock://:port or vsock://CID:port (virtio-vsock).")
	fs.StringVar(&o.webConfigFile, "web.config.file", "", "Path to a web configuration file enabling TLS and/or basic auth (exporter-toolkit format).")
	fs.BoolVar(&o.systemdSocket, "web.systemd-socket", false, "Use systemd socket activation listeners instead of --web.listen-address.")
	fs.StringVar(&o.telemetryPath, "web.telemetry-path", "/metrics", "Path under which to expose metrics.")
	fs.DurationVar(&o.writeTimeout, "web.write-timeout", 30*time.Second, "Longest time to write one HTTP response; bounds slow readers.")
	fs.BoolVar(&o.enablePprof, "web.enable-pprof", false, "Serve Go profiling endpoints under /debug/pprof/ (behind the same TLS and auth).")
	fs.StringVar(&o.healthAddress, "web.health-listen-address", "", "Address of a second, plain-HTTP listener serving only /healthz and /readyz, without the TLS and basic auth of --web.config.file, for probes (empty: none).")
	fs.DurationVar(&o.shutdownGrace, "web.shutdown-grace", 10*time.Second, "On SIGTERM, longest time in-flight requests may take to finish; connections still open then are closed.")

	fs.StringVar(&o.source, "source", "auto", "GPU data source: auto (DCGM, else NVML), dcgm, nvml or sim (built-in simulator).")
	fs.DurationVar(&o.interval, "collect.interval", 10*time.Second, "Time between two collections from the GPU source (at least 100ms).")
	fs.DurationVar(&o.nvlinkInterval, "collect.nvlink-interval", 30*time.Second, "Time between two updates of the NVLink, NVSwitch and fabric manager fields with the DCGM source (a field group of their own) and the simulator, at least 100ms; links multiply series, so they are sampled less often than the GPUs. The NVML source reads link state and counters at every collection.")
	fs.DurationVar(&o.timeout, "collect.timeout", 0, "Longest time one collection may take before it counts as failed, at most the collect interval (0: the collect interval).")
	fs.StringVar(&o.countersCSV, "collect.counters", "", "Counters file listing the fields to collect, dcgm-exporter CSV format (empty: the built-in default set). Reloaded on SIGHUP.")
	fs.IntVar(&o.maxSeries, "collect.max-series", 0, "Most GPU series on one page; the excess is dropped and counted (0: no limit).")
	fs.StringVar(&o.gpus, "collect.gpus", "", "GPU indices to export, comma-separated, with ranges (0,2-3); their MIG instances come with them (empty: every GPU).")
	fs.StringVar(&o.processes, "collect.processes", "container", "Per-process GPU accounting for shared GPUs (time-slicing, MPS): container (gpu_container_* per pod and container), process (also gpu_process_* per PID) or off. Needs the host's PIDs: hostPID and --path.procfs; Prometheus naming only.")
	fs.StringVar(&o.procfs, "path.procfs", "/proc", "procfs mountpoint where process accounting reads the cgroup and stat files of GPU processes: the host's /proc (with hostPID, the container's /proc is the host's).")
	fs.StringVar(&o.scenario, "sim.scenario", "demo", "Simulator scenario: a built-in name (demo, mig, timeslicing, churn, faults, hpc, hgx, scale-64) or a YAML file path.")

	fs.StringVar(&o.naming, "naming", "prometheus", "Series names, units and labels: prometheus (gpu_* names in base units) or dcgm (dcgm-exporter's DCGM_FI_* names, DCGM units and labels, for existing dashboards and alerts).")
	fs.StringVar(&o.hostnameLabel, "naming.hostname-label", exposition.HostnameLabel, "With --naming=dcgm: name of the hostname label, Hostname (dcgm-exporter up to 4.x) or hostname (later releases), or none to leave it out. Its value is $NODE_NAME, else the host name.")
	fs.BoolVar(&o.oldNamespace, "naming.old-namespace", false, "With --naming=dcgm: dcgm-exporter 1.x label names (uuid, pod_name, pod_namespace, container_name).")
	fs.BoolVar(&o.replaceBlanks, "naming.replace-blanks-in-model-name", false, "With --naming=dcgm: write blanks in the modelName label as dashes.")
	fs.BoolVar(&o.vgpuLabel, "naming.vgpu-label", false, "With --naming=dcgm: label the series of a container holding a replica of a shared GPU (time-slicing, MPS) with vgpu, the replica number, as dcgm-exporter's --kubernetes-virtual-gpus does.")
	fs.DurationVar(&o.xidWindow, "naming.xid-count-window", 5*time.Minute, "With --naming=dcgm: window of DCGM_EXP_XID_ERRORS_COUNT, when the counters file lists it.")
	fs.DurationVar(&o.clockEventsWindow, "naming.clock-events-count-window", 5*time.Minute, "With --naming=dcgm: window of DCGM_EXP_CLOCK_EVENTS_COUNT, when the counters file lists it.")

	fs.StringVar(&o.k8sEnabled, "kubernetes.enabled", "auto", "Attribute GPUs to pods through the kubelet pod-resources API: auto (when the socket exists), true or false.")
	fs.StringVar(&o.k8sSocket, "kubernetes.pod-resources-socket", "/var/lib/kubelet/pod-resources/kubelet.sock", "Path of the kubelet pod-resources unix socket.")
	fs.DurationVar(&o.k8sRefresh, "kubernetes.refresh-interval", 0, "Time between two pod-resources List calls, at least 100ms (0: the collect interval).")
	fs.StringSliceVar(&o.k8sResources, "kubernetes.resource-names", nil, "Extra extended-resource names (globs allowed) that hold GPUs, besides nvidia.com/gpu, nvidia.com/gpu.shared and nvidia.com/mig-*.")
	fs.StringVar(&o.k8sIDType, "kubernetes.gpu-id-type", "auto", "Device id forms to accept from the kubelet: auto (every form), uid (GPU/MIG UUIDs, replicas), device-name (nvidiaN, GKE nvidiaN/giM) or dra.")
	fs.DurationVar(&o.k8sCallTimeout, "kubernetes.timeout", 5*time.Second, "Longest time one pod-resources call may take, at most the refresh interval.")
	fs.StringVar(&o.podLabels, "kubernetes.pod-labels", "", "Regular expression (anchored) of pod label keys to add as label_<key> to attributed series; needs NODE_NAME and list/watch on pods (empty: none).")
	fs.BoolVar(&o.podUID, "kubernetes.pod-uid", false, "Add pod_uid to attributed series; needs NODE_NAME and list/watch on pods.")
	fs.IntVar(&o.podLabelsLimit, "kubernetes.pod-labels-limit", 10, "Most pod labels added per pod (1-12); keys past it are dropped and logged.")
	fs.StringVar(&o.hpcJobDir, "hpc.job-mapping-dir", "", "Directory of HPC job-mapping files (dcgm-exporter's format: one file per GPU index or <gpu>.<gpu_instance>, one job id a line, written by a scheduler prolog) whose jobs label GPU series with hpc_job (empty: off). Absolute path; it may not exist yet.")
	fs.DurationVar(&o.hpcRefresh, "hpc.refresh-interval", 0, "Time between two reads of --hpc.job-mapping-dir, at least 100ms (0: the collect interval).")

	fs.StringVar(&o.dcgmMode, "dcgm.mode", "embedded", "How to reach DCGM: embedded (start a hostengine in the exporter) or remote (connect to --dcgm.remote-address).")
	fs.StringVar(&o.dcgmRemoteAddress, "dcgm.remote-address", "", "Address of a running nv-hostengine: host:port or a unix socket path; setting it implies --dcgm.mode=remote.")

	o.logLevel = promslog.NewLevel()
	o.logFormat = promslog.NewFormat()
	fs.Var(promslogValue{o.logLevel, "level"}, "log.level", "Only log messages with the given severity or above: debug, info, warn, error.")
	fs.Var(promslogValue{o.logFormat, "format"}, "log.format", "Output format of log messages: logfmt or json.")

	fs.BoolVarP(&o.version, "version", "v", false, "Print version information and exit.")
	return fs
}

// envName returns the environment twin of a flag name.
func envName(flag string) string {
	r := strings.NewReplacer(".", "_", "-", "_")
	return envPrefix + strings.ToUpper(r.Replace(flag))
}

// parseFlags parses args, then fills every flag not given on the command
// line from its GPU_EXPORTER_* environment twin, then validates.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (*options, *pflag.FlagSet, error) {
	o := &options{}
	fs := newFlagSet(o)
	aliases := dcgmflags.Declare(fs)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: gpu-exporter [flags]\n\nEvery flag can also be set through its environment twin, e.g. --collect.interval through %s.\n"+
			"dcgm-exporter's flags and environment variables are accepted where they mean something here (listed last).\n\n", envName("collect.interval"))
		fs.PrintDefaults()
	}
	if err := fs.Parse(dcgmflags.LongForms(args)); err != nil {
		return nil, fs, err
	}
	if fs.NArg() > 0 {
		return nil, fs, fmt.Errorf("unexpected argument %q: gpu-exporter takes flags only", fs.Arg(0))
	}
	// Precedence: the command line (our flags or dcgm-exporter's), then
	// GPU_EXPORTER_* variables, then dcgm-exporter's variables.
	if err := aliases.ApplyFlags(fs, &o.dcgmExporter); err != nil {
		return nil, fs, err
	}
	if err := aliases.ApplyEnv(fs, getenv, envName, &o.dcgmExporter); err != nil {
		return nil, fs, err
	}
	o.nodeName = getenv("NODE_NAME")
	if err := o.validate(fs); err != nil {
		return o, fs, o.dcgmExporter.Explain(err)
	}
	return o, fs, nil
}
