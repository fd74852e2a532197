package hpcjobs

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// File names as dcgm-exporter's TestGetGPUFiles accepts and rejects them
// (internal/pkg/transformation/hpc_test.go), plus bounds of our own.
func TestParseName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want Key
		ok   bool
	}{
		{"0", Key{GPU: 0, Instance: -1}, true},
		{"42", Key{GPU: 42, Instance: -1}, true},
		{"2.0", Key{GPU: 2, Instance: 0}, true},
		{"3.10", Key{GPU: 3, Instance: 10}, true},
		{"007", Key{}, false}, // dcgm-exporter matches the name as a string: "007" is no GPU's
		{"00", Key{}, false},
		{"3.01", Key{}, false},
		{"0.0", Key{GPU: 0, Instance: 0}, true},
		{"foo", Key{}, false},
		{"bar.txt", Key{}, false},
		{".gitkeep", Key{}, false},
		{"1e5", Key{}, false},
		{"NaN", Key{}, false},
		{"Inf", Key{}, false},
		{"+3", Key{}, false},
		{"-2", Key{}, false},
		{".5", Key{}, false},
		{"5.", Key{}, false},
		{"1.2.3", Key{}, false},
		{"", Key{}, false},
		{"٣", Key{}, false}, // an Arabic-Indic digit: \d in RE2 is ASCII only, as here
		{"99999999999999999999999", Key{}, false},
		{"0.99999999999999999999", Key{}, false},
		// Device names and MIG UUIDs (issue 30, defects 3 and 4).
		{"nvidia1", Key{GPU: 1, Instance: -1, Minor: true}, true},
		{"nvidia3.7", Key{GPU: 3, Instance: 7, Minor: true}, true},
		{"nvidia", Key{}, false},
		{"nvidia01", Key{}, false},
		{"nvidiactl", Key{}, false},
		{"nvidia-uvm", Key{}, false},
		{"MIG-51fa7c7a-4c41-59bf-b08a-9cb4b47525a7", Key{GPU: -1, Instance: -1, MIGUUID: "MIG-51fa7c7a-4c41-59bf-b08a-9cb4b47525a7"}, true},
		{"MIG-51FA7C7A-4C41-59BF-B08A-9CB4B47525A7", Key{GPU: -1, Instance: -1, MIGUUID: "MIG-51fa7c7a-4c41-59bf-b08a-9cb4b47525a7"}, true},
		{"MIG-51fa7c7a", Key{}, false},
		{"MIG-GPU-51fa7c7a-4c41-59bf-b08a-9cb4b47525a7", Key{}, false},
		{"GPU-51fa7c7a-4c41-59bf-b08a-9cb4b47525a7", Key{}, false},
	} {
		got, ok := ParseName(tc.name)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseName(%q) = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
		if back, ok2 := ParseName(got.Name()); ok && (!ok2 || back != got) {
			t.Errorf("ParseName(%v.Name() = %q) = %v, %v", got, got.Name(), back, ok2)
		}
	}
}

func TestParseContent(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("9", MaxLineBytes+1)
	for _, tc := range []struct {
		name     string
		data     string
		want     []Job
		problems []Problem
	}{
		{name: "empty file: the job ended", data: "", want: nil},
		{name: "dcgm-exporter form, one job", data: "job1-0\n", want: []Job{{ID: "job1-0"}}},
		{name: "dcgm-exporter form, two jobs", data: "job1-1\njob2-1\n", want: []Job{{ID: "job1-1"}, {ID: "job2-1"}}},
		{name: "no final newline", data: "job3.0-0", want: []Job{{ID: "job3.0-0"}}},
		{name: "CRLF line ends", data: "41\r\n42\r\n", want: []Job{{ID: "41"}, {ID: "42"}}},
		{name: "blank and comment lines", data: "\n  \n# written by prolog\n4242\n\n", want: []Job{{ID: "4242"}}},
		{name: "surrounding blanks", data: "  4242 \t\n", want: []Job{{ID: "4242"}}},
		{name: "Slurm array and heterogeneous ids", data: "4242_7\n4243+1\n", want: []Job{{ID: "4242_7"}, {ID: "4243+1"}}},
		{name: "user and partition", data: "4242 user=alice partition=gpu\n", want: []Job{{ID: "4242", User: "alice", Partition: "gpu"}}},
		{name: "fields in any order, tab separated", data: "4242\tpartition=gpu\tuser=alice\n", want: []Job{{ID: "4242", User: "alice", Partition: "gpu"}}},
		{name: "user only", data: "4242 user=alice\n", want: []Job{{ID: "4242", User: "alice"}}},
		{name: "unknown keys are ignored", data: "4242 user=alice account=physics\n", want: []Job{{ID: "4242", User: "alice"}}},
		{name: "UTF-8 user name", data: "4242 user=zoë\n", want: []Job{{ID: "4242", User: "zoë"}}},
		{name: "a job listed twice: the first line wins", data: "4242 user=alice\n4242 user=bob\n", want: []Job{{ID: "4242", User: "alice"}}},
		{
			name: "invalid UTF-8 line skipped, the others kept",
			data: "4242\n\xff\xfejob\n4243\n",
			want: []Job{{ID: "4242"}, {ID: "4243"}}, problems: []Problem{{ReasonEncoding, 2}},
		},
		{
			name: "binary garbage",
			data: "\x00\x01\x02\xff\n\x7fELF\x02\x01\x01\n",
			want: nil, problems: []Problem{{ReasonEncoding, 1}, {ReasonSyntax, 2}},
		},
		{name: "two ids on one line", data: "4242 4243\n", problems: []Problem{{ReasonSyntax, 1}}},
		{name: "key without value", data: "4242 user=\n", problems: []Problem{{ReasonSyntax, 1}}},
		{name: "value without key", data: "4242 =alice\n", problems: []Problem{{ReasonSyntax, 1}}},
		{name: "repeated key", data: "4242 user=a user=b\n", problems: []Problem{{ReasonSyntax, 1}}},
		{name: "no job id", data: "user=alice\n", problems: []Problem{{ReasonSyntax, 1}}},
		{name: "control character", data: "42\x1b[31m\n", problems: []Problem{{ReasonSyntax, 1}}},
		{name: "line too long", data: long + "\n4242\n", want: []Job{{ID: "4242"}}, problems: []Problem{{ReasonSyntax, 1}}},
		{
			name: "each reason noted once, at its first line",
			data: "a b\n\xff\nc d\n\xfe\n4242\n",
			want: []Job{{ID: "4242"}}, problems: []Problem{{ReasonSyntax, 1}, {ReasonEncoding, 2}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, problems := ParseContent([]byte(tc.data))
			if !slices.Equal(got, tc.want) {
				t.Errorf("jobs = %+v, want %+v", got, tc.want)
			}
			if !slices.Equal(problems, tc.problems) {
				t.Errorf("problems = %+v, want %+v", problems, tc.problems)
			}
		})
	}
}

// Line writes what ParseContent reads back.
func TestLineRoundTrip(t *testing.T) {
	t.Parallel()
	for _, j := range []Job{{ID: "1"}, {ID: "4242_7", User: "alice"}, {ID: "9", Partition: "gpu"}, {ID: "9+1", User: "zoë", Partition: "a100"}} {
		got, problems := ParseContent([]byte(Line(j) + "\n"))
		if len(problems) != 0 || !slices.Equal(got, []Job{j}) {
			t.Errorf("Line(%+v) = %q reads back as %+v, %v", j, Line(j), got, problems)
		}
	}
}

func FuzzParseContent(f *testing.F) {
	for _, s := range []string{"4242\n", "4242 user=a partition=b\n", "\xff\n", "a b\n", "# c\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, _ := ParseContent(data)
		for _, j := range jobs {
			if j.ID == "" {
				t.Fatalf("empty job id from %q", data)
			}
			// Every value is a label value: valid UTF-8, one word.
			for _, s := range []string{j.ID, j.User, j.Partition} {
				if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
					t.Fatalf("job %+v from %q", j, data)
				}
			}
		}
	})
}
