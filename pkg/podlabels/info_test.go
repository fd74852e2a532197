package podlabels

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// validName is the Prometheus (legacy) label name syntax.
var validName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

func TestSanitize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, key, want string
	}{
		{"plain", "team", "label_team"},
		{"underscore kept", "cost_center", "label_cost_center"},
		{"dots and slash", "app.kubernetes.io/name", "label_app_kubernetes_io_name"},
		{"dashes", "team-name", "label_team_name"},
		{"leading digit", "1st-tier", "label_1st_tier"},
		{"only digits", "2024", "label_2024"},
		{"camel case split", "appName", "label_app_name"},
		{"digit before capital", "v2Beta", "label_v2_beta"},
		{"capital run not split", "HTTPServer", "label_httpserver"},
		{"capital after underscore", "a_B", "label_a_b"},
		{"capital after replaced char", "a.B", "label_a_b"},
		{"upper only", "TEAM", "label_team"},
		{"unicode letter is one underscore", "équipe", "label__quipe"},
		{"multi-byte runes", "日本", "label___"},
		{"emoji", "a😀b", "label_a_b"},
		{"invalid utf-8 byte", "a\xffb", "label_a_b"},
		{"double underscore prefix stays prefixed", "__name__", "label___name__"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := sanitize(tt.key)
			if got != tt.want {
				t.Errorf("sanitize(%q) = %q, want %q", tt.key, got, tt.want)
			}
			if !validName.MatchString(got) {
				t.Errorf("sanitize(%q) = %q is not a valid label name", tt.key, got)
			}
		})
	}
}

// builtinLabels are the names the exporter sets itself, in both namings
// (pkg/exposition and the dcgm-exporter compatible one) and from
// Prometheus target labelling.
var builtinLabels = []string{
	"gpu", "uuid", "device", "model", "gpu_instance", "mig_profile", "mig_uuid",
	"namespace", "pod", "container", "pod_uid", "reason", "xid", "shared",
	"link", "nvswitch", "driver_version", "pci_bus_id",
	"UUID", "modelName", "Hostname", "GPU_I_PROFILE", "GPU_I_ID", "DCGM_FI_DRIVER_VERSION",
	"err_code", "err_msg",
	"__name__", "job", "instance", "node", "cluster",
}

// TestNoCollisionWithBuiltinLabels proves pod labels cannot replace a label
// the exporter sets: every pod label name starts with LabelPrefix (here for
// keys spelling each builtin, FuzzNames for any key) and no builtin does.
func TestNoCollisionWithBuiltinLabels(t *testing.T) {
	t.Parallel()
	labels := map[string]string{}
	for _, b := range builtinLabels {
		if strings.HasPrefix(b, LabelPrefix) {
			t.Fatalf("built-in label %q starts with %q", b, LabelPrefix)
		}
		labels[b] = "v"
		labels[strings.ToUpper(b)] = "v"
		labels["example.com/"+b] = "v"
	}
	pod := &apiPod{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	info, _ := podInfo(pod, regexp.MustCompile(".*"), false, len(labels))
	if len(info.Labels) != len(labels) {
		t.Fatalf("got %d labels, want %d", len(info.Labels), len(labels))
	}
	seen := map[string]bool{}
	for _, l := range info.Labels {
		if slices.Contains(builtinLabels, l.Name) {
			t.Errorf("pod label %q collides with a built-in label", l.Name)
		}
		if !strings.HasPrefix(l.Name, LabelPrefix) || !validName.MatchString(l.Name) {
			t.Errorf("pod label name %q is not %q + a valid name", l.Name, LabelPrefix)
		}
		if seen[l.Name] {
			t.Errorf("pod label name %q appears twice", l.Name)
		}
		seen[l.Name] = true
	}
}

func TestUniqueNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		keys []string // sorted, as podInfo passes them
		want []string
	}{
		{"no collision", []string{"app", "team"}, []string{"label_app", "label_team"}},
		{
			"two keys, one name: both suffixed in key order",
			[]string{"a.b", "a/b"},
			[]string{"label_a_b_conflict1", "label_a_b_conflict2"},
		},
		{
			"three keys",
			[]string{"a-b", "a.b", "a/b"},
			[]string{"label_a_b_conflict1", "label_a_b_conflict2", "label_a_b_conflict3"},
		},
		{
			"case folding collides",
			[]string{"App", "app"},
			[]string{"label_app_conflict1", "label_app_conflict2"},
		},
		{
			"camel case and snake case collide",
			[]string{"appName", "app_name"},
			[]string{"label_app_name_conflict1", "label_app_name_conflict2"},
		},
		{
			"a suffixed name already taken by a key is skipped",
			[]string{"a.b", "a/b", "a_b_conflict1"},
			[]string{"label_a_b_conflict2", "label_a_b_conflict3", "label_a_b_conflict1"},
		},
		{
			"other names untouched",
			[]string{"a.b", "a/b", "team"},
			[]string{"label_a_b_conflict1", "label_a_b_conflict2", "label_team"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := uniqueNames(tt.keys); !slices.Equal(got, tt.want) {
				t.Errorf("uniqueNames(%q) = %q, want %q", tt.keys, got, tt.want)
			}
		})
	}
}

func TestPodInfo(t *testing.T) {
	t.Parallel()
	pod := &apiPod{ObjectMeta: metav1.ObjectMeta{
		UID: "0b6a7c1e-uid",
		Labels: map[string]string{
			"team":                   "ml",
			"app.kubernetes.io/name": "trainer",
			"Zeta":                   "z",
			"alpha":                  "a",
			"secret":                 "not allowlisted",
			"quote":                  "a \"quoted\"\\ value\nwith é",
		},
	}}
	allowAll := regexp.MustCompile(`^(?:team|app\.kubernetes\.io/name|Zeta|alpha|quote)$`)
	tests := []struct {
		name        string
		pod         *apiPod // nil: the pod above
		allow       *regexp.Regexp
		uid         bool
		limit       int
		want        Info
		wantDropped []string
	}{
		{name: "no allowlist, no uid", want: Info{}, limit: 10},
		{name: "uid only", uid: true, limit: 10, want: Info{UID: "0b6a7c1e-uid"}},
		{
			name: "allowlist selects keys, values unchanged, sorted by name", allow: allowAll, limit: 10,
			want: Info{Labels: []Label{
				{"label_alpha", "a"},
				{"label_app_kubernetes_io_name", "trainer"},
				{"label_quote", "a \"quoted\"\\ value\nwith é"},
				{"label_team", "ml"},
				{"label_zeta", "z"},
			}},
		},
		{
			name: "anchored allowlist", allow: regexp.MustCompile(`^(?:tea)$`), limit: 10,
			want: Info{},
		},
		{
			name: "bytes that are not UTF-8 replaced in values and the UID", uid: true, limit: 10,
			pod:   &apiPod{ObjectMeta: metav1.ObjectMeta{UID: "0b6a\xff-uid", Labels: map[string]string{"team": "m\xb0l\xfe\xfd"}}},
			allow: regexp.MustCompile(`^team$`),
			want:  Info{UID: "0b6a\uFFFD-uid", Labels: []Label{{"label_team", "m\uFFFDl\uFFFD"}}},
		},
		{
			// Keys in byte order: Zeta, alpha, app.kubernetes.io/name, quote, team.
			name: "cap keeps the first keys in key order", allow: allowAll, uid: true, limit: 2,
			want: Info{UID: "0b6a7c1e-uid", Labels: []Label{
				{"label_alpha", "a"},
				{"label_zeta", "z"},
			}},
			wantDropped: []string{"app.kubernetes.io/name", "quote", "team"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := pod
			if tt.pod != nil {
				p = tt.pod
			}
			got, dropped := podInfo(p, tt.allow, tt.uid, tt.limit)
			if !got.equal(tt.want) {
				t.Errorf("podInfo() = %+v, want %+v", got, tt.want)
			}
			if !slices.Equal(dropped, tt.wantDropped) {
				t.Errorf("dropped = %q, want %q", dropped, tt.wantDropped)
			}
		})
	}
}

// TestPodInfoDeterministic: map iteration order never shows in the result.
func TestPodInfoDeterministic(t *testing.T) {
	t.Parallel()
	labels := map[string]string{}
	for _, k := range []string{"a.b", "a/b", "a-b", "a_b", "A.b", "x", "y", "z", "team", "tier", "app"} {
		labels[k] = k
	}
	pod := &apiPod{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	first, _ := podInfo(pod, regexp.MustCompile(".*"), false, 6)
	for range 50 {
		if got, _ := podInfo(pod, regexp.MustCompile(".*"), false, 6); !got.equal(first) {
			t.Fatalf("podInfo changed between calls:\n%+v\n%+v", first, got)
		}
	}
}

// FuzzNames: any set of keys gets distinct, valid, prefixed names.
func FuzzNames(f *testing.F) {
	f.Add("app.kubernetes.io/name", "app_kubernetes_io_name", "appName")
	f.Add("a.b", "a/b", "a_b_conflict1")
	f.Add("équipe", "日本", "\xff")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		keys := slices.Compact(slices.Sorted(slices.Values([]string{a, b, c})))
		names := uniqueNames(keys)
		seen := map[string]bool{}
		for i, n := range names {
			if !strings.HasPrefix(n, LabelPrefix) || !validName.MatchString(n) {
				t.Errorf("key %q: name %q is not %q + a valid name", keys[i], n, LabelPrefix)
			}
			if seen[n] {
				t.Errorf("name %q given twice for %q", n, keys)
			}
			seen[n] = true
		}
	})
}
