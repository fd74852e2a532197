package fields

import (
	"strings"
	"testing"
)

// Every name a DCGM or go-dcgm release gave an id the catalog has finds
// that row, whatever its case: dcgm_names.txt is the alias table.
func TestEveryReleaseNameFindsItsRow(t *testing.T) {
	t.Parallel()
	c := MustNew()
	names, err := parseNames(dcgmNamesText)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 1000 {
		t.Fatalf("%d names, want DCGM's whole history", len(names))
	}
	found := 0
	for _, n := range names {
		_, metric := c.ByID(n.id)
		label := false
		for _, l := range c.Labels() {
			label = label || l.ID == n.id
		}
		for _, spelling := range []string{n.name, strings.ToLower(n.name), strings.ToUpper(n.name)} {
			var f Field
			var ok bool
			switch {
			case metric:
				f, ok = c.Lookup(spelling)
			case label:
				f, ok = c.LookupLabel(spelling)
			default:
				_, ok = c.Lookup(spelling)
				if ok {
					t.Errorf("%s (id %d, not in the catalog) finds a catalog row", spelling, n.id)
				}
				if id, known := c.DCGMFieldID(spelling); !known || id != n.id {
					t.Errorf("DCGMFieldID(%q) = %d, %v; want %d", spelling, id, known, n.id)
				}
				continue
			}
			if !ok || f.ID != n.id {
				t.Errorf("lookup of %q = id %d, %v; want id %d", spelling, f.ID, ok, n.id)
			}
			found++
		}
	}
	if found == 0 {
		t.Error("no release name names a catalog row")
	}
}

// The names the catalog prints are names a DCGM or go-dcgm release used for
// the same id, never a spelling of our own.
func TestCatalogNamesAreReleaseNames(t *testing.T) {
	t.Parallel()
	names, err := parseNames(dcgmNamesText)
	if err != nil {
		t.Fatal(err)
	}
	release := map[string]uint16{}
	for _, n := range names {
		if !n.ours {
			release[n.name] = n.id
		}
	}
	c := MustNew()
	for _, f := range append(c.All(), c.Labels()...) {
		for _, n := range append([]string{f.DCGMName, f.LegacyName}, f.Aliases...) {
			if n == "" {
				continue
			}
			if id, ok := release[n]; !ok || id != f.ID {
				t.Errorf("field %d is printed or documented as %s, which no release uses for it (release id %d, %v)", f.ID, n, id, ok)
			}
		}
	}
}

// The names issue 15 found refused or wrong: DCGM's own names of the
// slowdown and shutdown temperatures are the catalog's; our old spellings
// still load but are not documented as aliases.
func TestTemperatureLimitAndRecoveryNames(t *testing.T) {
	t.Parallel()
	c := MustNew()
	cases := []struct {
		name     string
		id       uint16
		dcgmName string
	}{
		{"DCGM_FI_DEV_SLOWDOWN_TEMP", 158, "DCGM_FI_DEV_SLOWDOWN_TEMP"},
		{"DCGM_FI_DEV_SHUTDOWN_TEMP", 159, "DCGM_FI_DEV_SHUTDOWN_TEMP"},
		{"DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS", 158, "DCGM_FI_DEV_SLOWDOWN_TEMP"},
		{"DCGM_FI_DEV_GPU_TEMP_SLOWDOWN", 158, "DCGM_FI_DEV_SLOWDOWN_TEMP"},
		{"DCGM_FI_DEV_GPU_TEMP_SHUTDOWN", 159, "DCGM_FI_DEV_SHUTDOWN_TEMP"},
		{"DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION", 1523, "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION"},
		{"DCGM_FI_DEV_GPU_RECOVERY_ACTION", 1523, "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION"},
		{"gpu_recovery_action", 1523, "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION"},
	}
	for _, tc := range cases {
		f, ok := c.Lookup(tc.name)
		if !ok || f.ID != tc.id || f.DCGMName != tc.dcgmName {
			t.Errorf("Lookup(%q) = %d %s, %v; want %d %s", tc.name, f.ID, f.DCGMName, ok, tc.id, tc.dcgmName)
		}
		for _, a := range f.Aliases {
			if a == "DCGM_FI_DEV_GPU_TEMP_SLOWDOWN" || a == "DCGM_FI_DEV_GPU_TEMP_SHUTDOWN" {
				t.Errorf("%s documents our own spelling %s as an alias", f.Name, a)
			}
		}
	}
}

// Aliases live in dcgm_names.txt only: the table rows carry none.
func TestAliasesHaveOneTable(t *testing.T) {
	t.Parallel()
	for _, f := range append(table(), labelTable()...) {
		if len(f.Aliases) > 0 || f.LegacyName != "" {
			t.Errorf("%s: aliases or legacy name in the field table; add them to dcgm_names.txt", f.DCGMName)
		}
	}
}

func TestParseNamesErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"no id", "# c\nDCGM_FI_X\n", "dcgm_names.txt:2"},
		{"bad id", "DCGM_FI_X 70000\n", "dcgm_names.txt:1: id"},
		{"bad marker", "DCGM_FI_X 7 ours\n", "dcgm_names.txt:1"},
	}
	for _, tc := range cases {
		if _, err := parseNames(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := attachNames([]fieldName{{name: "A", id: 1}, {name: "a", id: 2}}, nil, nil); err == nil {
		t.Error("a name with two ids was accepted")
	}
}
