package source

import (
	"slices"
	"strings"
	"testing"
)

func TestParseGPUList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{"", nil, ""},
		{" ", nil, ""},
		{"0", []int{0}, ""},
		{"0,2-3", []int{0, 2, 3}, ""},
		{"3,1-2,3", []int{3, 1, 2}, ""},
		{" 1 , 4 - 5 ", []int{1, 4, 5}, ""},
		{"a", nil, `"a" is not a GPU index or range`},
		{"-1", nil, `"-1" is not a GPU index or range`},
		{"3-1", nil, `"3-1" is not a GPU index or range`},
		{"0,,1", nil, `"" is not a GPU index or range`},
		{"1024", nil, `"1024": GPU indices stop at 1023`},
		{"0-5000", nil, `GPU indices stop at 1023`},
	}
	for _, tt := range tests {
		got, err := ParseGPUList(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseGPUList(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseGPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}
