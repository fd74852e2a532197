package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

var unitFile = filepath.Join(repoRoot, "deployment", "systemd", "gpu-exporter.service")

// unitDirectives parses a unit file into section -> key -> values (a key
// may repeat).
func unitDirectives(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	units := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			units[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: cannot parse %q", path, line)
			}
			units[section][k] = append(units[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return units
}

// TestSystemdUnitStructure checks the sandboxing and restart policy the
// unit promises, without systemd.
func TestSystemdUnitStructure(t *testing.T) {
	t.Parallel()
	u := unitDirectives(t, unitFile)
	svc := u["Service"]
	if svc == nil {
		t.Fatal("no [Service] section")
	}
	for key, want := range map[string]string{
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"DynamicUser": "yes", "DevicePolicy": "closed", "Restart": "on-failure", "CapabilityBoundingSet": "",
		"AmbientCapabilities": "", "ProtectKernelTunables": "yes", "ProtectControlGroups": "yes",
	} {
		if got := svc[key]; len(got) == 0 || got[len(got)-1] != want {
			t.Errorf("[Service] %s = %q, want %q", key, got, want)
		}
	}
	if slices.Contains(svc["PrivateDevices"], "yes") {
		t.Error("PrivateDevices=yes would hide /dev/nvidia*")
	}
	checkDeviceAllow(t, svc["DeviceAllow"])
	if got := svc["ExecStart"]; len(got) != 1 || !strings.HasPrefix(got[0], "/usr/local/bin/gpu-exporter") {
		t.Errorf("ExecStart = %q", got)
	}
	if got := svc["EnvironmentFile"]; len(got) != 1 || got[0] != "-/etc/default/gpu-exporter" {
		t.Errorf("EnvironmentFile = %q, want the optional /etc/default/gpu-exporter", got)
	}
	if !slices.Contains(svc["ExecReload"], "/bin/kill -HUP $MAINPID") {
		t.Errorf("ExecReload = %q: SIGHUP reloads the counters file", svc["ExecReload"])
	}
	if !slices.Contains(u["Install"]["WantedBy"], "multi-user.target") {
		t.Errorf("[Install] WantedBy = %q", u["Install"]["WantedBy"])
	}
}

// TestSystemdAnalyze runs systemd's own checks on the unit, with ExecStart
// pointed at a freshly built exporter (verify wants the binary to exist).
func TestSystemdAnalyze(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testbin.Missing(t, "systemd-analyze not installed (apt-get install systemd)")
	}
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "gpu-exporter.service")
	text := strings.Replace(string(data), "ExecStart=/usr/local/bin/gpu-exporter", "ExecStart="+exporterBinary(t), 1)
	if err := os.WriteFile(unit, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// verify warns on stderr and still exits 0 for an unknown directive.
	if out, err := exec.Command(analyze, "verify", "--man=no", unit).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// Exposure 0.0 (sandboxed) to 10.0 (unprotected), in tenths; the unit
	// scores 1.5 now.
	if out, err := run(nil, analyze, "security", "--offline=true", "--threshold=25", unit); err != nil {
		t.Errorf("systemd-analyze security: exposure above 2.5: %v\n%s", err, out)
	}
}

// driverDevices are the character-device names the NVIDIA kernel modules
// register in /proc/devices that the exporter opens, with the access it
// needs. systemd's DeviceAllow=char-<name> matches these names. Source:
// NVIDIA/open-gpu-kernel-modules (595.45.04), kernel-open/: nv.c
// registers "nvidia" and "nvidiactl" (since 545.23.06; before, nv-frontend.c
// registered both as "nvidia-frontend"), nvidia-uvm/uvm.c
// NVIDIA_UVM_DEVICE_NAME "nvidia-uvm", nv-caps.c "nvidia-caps",
// export_nvswitch.h NVSWITCH_DRIVER_NAME "nvidia-nvswitch", nvlink_linux.h
// NVLINK_DEVICE_NAME "nvidia-nvlink".
var driverDevices = []struct{ name, access string }{
	{"nvidia", "rw"},          // /dev/nvidia<N>
	{"nvidiactl", "rw"},       // /dev/nvidiactl
	{"nvidia-frontend", "rw"}, // both, on drivers before 545
	{"nvidia-uvm", "rw"},      // /dev/nvidia-uvm (DCGM profiling)
	{"nvidia-caps", "r"},      // /dev/nvidia-caps/* (MIG capabilities)
	{"nvidia-nvswitch", "rw"}, // /dev/nvidia-nvswitch*
	{"nvidia-nvlink", "rw"},   // /dev/nvidia-nvlink
}

// checkDeviceAllow fails unless DeviceAllow grants each driver device
// exactly its access, and nothing outside the driver's names.
func checkDeviceAllow(t *testing.T, allow []string) {
	t.Helper()
	got := map[string]string{}
	for _, a := range allow {
		dev, access, _ := strings.Cut(a, " ")
		got[strings.TrimPrefix(dev, "char-")] = access
		if !strings.HasPrefix(dev, "char-nvidia") {
			t.Errorf("DeviceAllow=%s: not an NVIDIA driver device", a)
		}
	}
	for _, d := range driverDevices {
		if got[d.name] != d.access {
			t.Errorf("DeviceAllow=char-%s %q, want %q: the driver registers %s in /proc/devices", d.name, got[d.name], d.access, d.name)
		}
	}
}
