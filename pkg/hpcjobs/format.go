// Package hpcjobs attributes GPUs to HPC scheduler jobs (Slurm and others)
// on bare-metal nodes. It reads the job-mapping directory format of
// dcgm-exporter (--hpc-job-mapping-dir): a scheduler prolog writes one file
// per GPU, or per MIG GPU instance, listing the jobs that hold it; the
// epilog removes its job again. A Reader polls the directory on its own
// goroutine and publishes an immutable Table; the collector joins it with
// the sample as it joins the kubelet's table. Nothing here runs per scrape.
//
// The format, as dcgm-exporter reads it (internal/pkg/transformation/hpc.go
// and its README "How to include HPC jobs in metric labels"):
//
//   - a file is named after a GPU index ("0", "1") or a GPU index and a MIG
//     GPU instance id joined by a dot ("2.0", "3.10"), the names matching
//     ^\d+(\.\d+)?$; other names and directories are skipped (gpu-exporter
//     also reads "nvidia<minor>[.<gpu instance>]" and "MIG-<uuid>", see
//     ParseName: dcgm-exporter skips them);
//   - each line of a file holds one job id;
//   - a GPU file attributes the GPU's series, a GPU.instance file the
//     series of that MIG instance; a GPU in several jobs yields one series
//     per job.
//
// gpu-exporter extends a line, backward compatibly, with optional
// key=value fields after the job id, separated by blanks:
//
//	4242 user=alice partition=gpu
//
// user and partition become hpc_user and hpc_partition; keys this version
// does not know are ignored, so newer prolog scripts work with older
// exporters. Blank lines and lines starting with # are skipped. A plain
// dcgm-exporter file (one job id a line) reads the same as there.
package hpcjobs

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reasons a mapping file is counted as malformed: the values of the reason
// label of gpu_exporter_hpc_job_mapping_malformed_files.
const (
	// ReasonName: the file name is neither a GPU index nor
	// <GPU index>.<GPU instance id> (in decimal without leading zeros). Names starting with a dot (the
	// temporary files of atomic writes) are skipped without counting.
	ReasonName = "name"
	// ReasonUnreadable: the file could not be read (not a regular file,
	// larger than MaxFileBytes, permission denied, vanished mid-read is not
	// counted: it is a job ending).
	ReasonUnreadable = "unreadable"
	// ReasonEncoding: a line is not valid UTF-8; the line is skipped.
	ReasonEncoding = "encoding"
	// ReasonSyntax: a line is not "<job id> [key=value]...", holds control
	// characters, repeats a key or is longer than MaxLineBytes; the line is
	// skipped.
	ReasonSyntax = "syntax"
)

// Reasons lists every malformed-file reason, in the order metrics and
// tests use.
func Reasons() []string {
	return []string{ReasonName, ReasonUnreadable, ReasonEncoding, ReasonSyntax}
}

// MaxFileBytes caps one mapping file: a GPU is held by a handful of jobs,
// each line a few dozen bytes.
const MaxFileBytes = 64 << 10

// MaxLineBytes caps one line, and so the length of a label value.
const MaxLineBytes = 1024

// Keys of the optional fields of a line.
const (
	keyUser      = "user"
	keyPartition = "partition"
)

// Job is one job holding a GPU or MIG instance.
type Job struct {
	// ID is the scheduler's job id ("4242", Slurm array "4242_7",
	// heterogeneous "4242+1"), written as the hpc_job label.
	ID string
	// User and Partition are empty unless the file says them.
	User, Partition string
}

// Key names what a mapping file attributes: a GPU, or one of its MIG GPU
// instances (Instance >= 0), by index (dcgm-exporter's names), by device
// minor number (Minor), or a MIG device by its UUID (MIGUUID).
type Key struct {
	// GPU is the GPU's index, or its minor number when Minor is set; -1
	// for a MIGUUID key.
	GPU      int
	Instance int // -1 for the whole GPU
	// Minor is set for files named after the device node, "nvidia<minor>"
	// or "nvidia<minor>.<gpu instance>": with gres.conf File=/dev/nvidia[…]
	// Slurm numbers GPUs in device-file order, which is the minor number,
	// not NVML's index (docs/hpc.md).
	Minor bool
	// MIGUUID is the MIG device UUID of a file named "MIG-<uuid>", with its
	// hex digits in lower case: what Slurm puts in CUDA_VISIBLE_DEVICES for
	// a MIG slice. GPU and Instance are -1.
	MIGUUID string
}

// validName is dcgm-exporter's file-name rule (validGPUFile in its
// internal/pkg/transformation/hpc.go): digits, optionally a dot and digits.
var validName = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// maxIndex bounds the numbers of a file name; no host has more GPUs or MIG
// instances, and it keeps Atoi from overflowing.
const maxIndex = 1 << 16

// ParseName reads a mapping file name: "3" is GPU 3, "3.1" MIG GPU
// instance 1 of GPU 3 (dcgm-exporter's names); "nvidia3" and "nvidia3.1"
// are the same for the GPU whose minor number is 3; "MIG-<uuid>" is the
// MIG device of that UUID. A number with leading zeros ("03", "3.01")
// names nothing: dcgm-exporter compares the name with the gpu label as a
// string, so it never matches such a file, and reading "00" as 0 here
// would let it replace the jobs of "0".
func ParseName(name string) (Key, bool) {
	if rest, ok := strings.CutPrefix(name, "MIG-"); ok {
		if !isUUID(rest) {
			return Key{}, false
		}
		return Key{GPU: -1, Instance: -1, MIGUUID: migUUIDKey(name)}, true
	}
	rest, minor := strings.CutPrefix(name, "nvidia")
	k, ok := parseIndexName(rest)
	if !ok {
		return Key{}, false
	}
	k.Minor = minor
	return k, true
}

// migUUIDKey is the MIGUUID of a Key: "MIG-" and the UUID's hex digits in
// lower case, as NVML writes them.
func migUUIDKey(uuid string) string {
	rest, ok := strings.CutPrefix(uuid, "MIG-")
	if !ok {
		return uuid
	}
	return "MIG-" + strings.ToLower(rest)
}

// parseIndexName reads "<n>" or "<n>.<gpu instance>".
func parseIndexName(name string) (Key, bool) {
	if !validName.MatchString(name) {
		return Key{}, false
	}
	gpu, inst, isMIG := strings.Cut(name, ".")
	k := Key{Instance: -1}
	var err error
	if k.GPU, err = strconv.Atoi(gpu); err != nil || k.GPU > maxIndex {
		return Key{}, false
	}
	if isMIG {
		if k.Instance, err = strconv.Atoi(inst); err != nil || k.Instance > maxIndex {
			return Key{}, false
		}
	}
	if k.Name() != name {
		return Key{}, false // leading zeros
	}
	return k, true
}

// Name is the file name of k, the inverse of ParseName (a MIG UUID in
// lower case).
func (k Key) Name() string {
	if k.MIGUUID != "" {
		return k.MIGUUID
	}
	s := strconv.Itoa(k.GPU)
	if k.Minor {
		s = "nvidia" + s
	}
	if k.Instance < 0 {
		return s
	}
	return s + "." + strconv.Itoa(k.Instance)
}

// isUUID reports whether s is 8-4-4-4-12 hex digits, as NVML writes a MIG
// UUID after "MIG-".
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'):
		default:
			return false
		}
	}
	return true
}

// ParseContent reads a mapping file's lines. It returns the jobs in file
// order, each job id once (the first line naming it wins), and the reasons
// some lines were skipped (ReasonEncoding, ReasonSyntax), each once, with
// the 1-based number of the first line skipped for it.
func ParseContent(data []byte) (jobs []Job, problems []Problem) {
	seen := map[string]bool{}
	noted := map[string]bool{}
	note := func(reason string, line int) {
		if !noted[reason] {
			noted[reason] = true
			problems = append(problems, Problem{Reason: reason, Line: line})
		}
	}
	for n := 1; len(data) > 0; n++ {
		var raw []byte
		raw, data, _ = bytes.Cut(data, []byte{'\n'})
		raw = bytes.TrimSuffix(raw, []byte{'\r'})
		if len(raw) > MaxLineBytes {
			note(ReasonSyntax, n)
			continue
		}
		if !utf8.Valid(raw) {
			note(ReasonEncoding, n)
			continue
		}
		line := strings.TrimSpace(string(raw))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		job, ok := parseLine(line)
		if !ok {
			note(ReasonSyntax, n)
			continue
		}
		if seen[job.ID] {
			continue
		}
		seen[job.ID] = true
		jobs = append(jobs, job)
	}
	return jobs, problems
}

// Problem is why lines of a file were skipped, and the first such line.
type Problem struct {
	Reason string
	Line   int
}

// parseLine reads "<job id> [key=value]...".
func parseLine(line string) (Job, bool) {
	if strings.IndexFunc(line, notBlankControl) >= 0 {
		return Job{}, false
	}
	words := strings.Fields(line)
	job := Job{ID: words[0]}
	if strings.Contains(job.ID, "=") {
		return Job{}, false
	}
	seen := map[string]bool{}
	for _, w := range words[1:] {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" || v == "" || seen[k] {
			return Job{}, false
		}
		seen[k] = true
		switch k {
		case keyUser:
			job.User = v
		case keyPartition:
			job.Partition = v
		}
	}
	return job, true
}

// notBlankControl reports control characters other than the tab, which
// separates fields like a space.
func notBlankControl(r rune) bool { return unicode.IsControl(r) && r != '\t' }

// Line writes j as one line of a mapping file, without the newline: the
// job id, then user= and partition= when set. ParseContent reads it back.
func Line(j Job) string {
	s := j.ID
	if j.User != "" {
		s += " " + keyUser + "=" + j.User
	}
	if j.Partition != "" {
		s += " " + keyPartition + "=" + j.Partition
	}
	return s
}
