package podlabels

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// LabelPrefix starts every exported pod label name. No label the exporter
// sets itself starts with it, so pod labels can never replace one.
const LabelPrefix = "label_"

// Label is one exported pod label.
type Label struct {
	// Name is LabelPrefix and the sanitized Kubernetes key.
	Name string
	// Value is the Kubernetes label value, unchanged if it is UTF-8.
	Value string
}

// Info is what Lookup knows about a pod.
type Info struct {
	// UID is the pod UID; empty unless Config.UID is set.
	UID string
	// Labels are the allowlisted pod labels sorted by Name, at most
	// Config.MaxLabels of them. The slice is shared: do not modify it.
	Labels []Label
	// Workload is the pod's workload when Config.Workloads is set and its
	// owners are known (Kind empty otherwise).
	Workload Workload

	// seed is what the pod itself tells of its workload (Config.Workloads).
	seed workloadSeed
	// kai is the pod's part in KAI Scheduler's GPU sharing (kai.go).
	kai kaiRole
	// vgpu is the GPUs HAMi's or Volcano's scheduler chose (vgpu.go).
	vgpu vgpuAlloc
}

// equal reports whether a and b hold the same content.
func (a Info) equal(b Info) bool {
	return a.UID == b.UID && slices.Equal(a.Labels, b.Labels) && a.seed == b.seed && a.Workload == b.Workload && a.kai.equal(b.kai) &&
		a.vgpu.equal(b.vgpu)
}

// podInfo computes the Info of pod under allow, keeping at most max labels,
// and returns the keys it dropped for the cap.
//
// Naming follows kube-state-metrics' kube_pod_labels, so the two join on
// equal names: every character outside [a-zA-Z0-9_] becomes "_", an
// upper-case letter that follows a lower-case letter or a digit gets a "_"
// before it, and the result is lower-cased ("app.kubernetes.io/name" →
// label_app_kubernetes_io_name, "appName" → label_app_name). Keys whose
// names collide are all renamed (see uniqueNames). Names are given over
// every allowlisted key; then the cap keeps the first max keys in byte
// order of the Kubernetes key, so which labels survive does not depend on
// map order.
func podInfo(pod *apiPod, allow *regexp.Regexp, uid bool, limit int) (Info, []string) {
	var info Info
	if uid {
		info.UID = validText(string(pod.UID))
	}
	if allow == nil || len(pod.Labels) == 0 {
		return info, nil
	}
	var keys []string
	for k := range pod.Labels {
		if allow.MatchString(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return info, nil
	}
	slices.Sort(keys)
	names := uniqueNames(keys)
	var dropped []string
	if len(keys) > limit {
		dropped = keys[limit:]
		keys, names = keys[:limit], names[:limit]
	}
	info.Labels = make([]Label, len(keys))
	for i, k := range keys {
		info.Labels[i] = Label{Name: names[i], Value: validText(pod.Labels[k])}
	}
	slices.SortFunc(info.Labels, func(a, b Label) int { return cmp.Compare(a.Name, b.Name) })
	return info, dropped
}

// uniqueNames returns the label name of each of keys (sorted, distinct).
//
// Collisions: when several keys sanitize to the same name N, none of them
// keeps N; in key byte order they become N_conflict1, N_conflict2, …, as
// kube-state-metrics names them. A suffixed name that another key already
// has as its own name is skipped (the next number is taken), so the result
// never holds a name twice, whatever the keys.
func uniqueNames(keys []string) []string {
	names := make([]string, len(keys))
	count := make(map[string]int, len(keys))
	for i, k := range keys {
		names[i] = sanitize(k)
		count[names[i]]++
	}
	if len(count) == len(keys) {
		return names
	}
	used := make(map[string]bool, len(keys))
	for n, c := range count {
		if c == 1 {
			used[n] = true
		}
	}
	next := make(map[string]int)
	// Ranging over keys, in order, makes the numbering deterministic.
	for i := range names {
		base := names[i]
		if count[base] == 1 {
			continue
		}
		for {
			next[base]++
			candidate := base + "_conflict" + strconv.Itoa(next[base])
			if !used[candidate] {
				names[i] = candidate
				used[candidate] = true
				break
			}
		}
	}
	return names
}

// sanitize maps a Kubernetes label key to LabelPrefix and a valid
// Prometheus label name (see podInfo for the rules).
func sanitize(key string) string {
	var b strings.Builder
	b.Grow(len(LabelPrefix) + len(key) + 4)
	b.WriteString(LabelPrefix)
	var prev rune // the previous character after replacement, before lower-casing
	for _, r := range key {
		switch {
		case r >= 'A' && r <= 'Z':
			if isLowerOrDigit(prev) {
				b.WriteByte('_')
			}
			b.WriteRune(r - 'A' + 'a')
		case isLowerOrDigit(r) || r == '_':
			b.WriteRune(r)
		default:
			// One "_" per character, multi-byte ones and invalid bytes included.
			r = '_'
			b.WriteByte('_')
		}
		prev = r
	}
	return b.String()
}

// validText replaces each run of bytes that is not UTF-8 with U+FFFD. The
// API server validates label values and UIDs, but nothing guarantees what a
// proxy or another API implementation sends, and a label value that is not
// UTF-8 makes Prometheus reject the whole scrape. Valid text is returned as
// is, without allocating.
func validText(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

func isLowerOrDigit(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
}
