package dcgm

import (
	"math"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

func TestTranslate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   rawValue
		want source.Value
	}{
		{"int", rawValue{fieldType: typeInt64, i: 45}, source.IntValue(45)},
		{"negative int", rawValue{fieldType: typeInt64, i: -3}, source.IntValue(-3)},
		{"large counter", rawValue{fieldType: typeInt64, i: 1 << 40}, source.IntValue(1 << 40)},
		{"timestamp", rawValue{fieldType: typeTimestamp, i: 1700000000000000}, source.IntValue(1700000000000000)},
		{"int64 blank", rawValue{fieldType: typeInt64, i: int64Blank}, source.Value{}},
		{"int64 not found", rawValue{fieldType: typeInt64, i: int64Blank + 1}, source.Value{}},
		{"int64 not supported", rawValue{fieldType: typeInt64, i: int64Blank + 2}, source.Value{}},
		{"int64 not permissioned", rawValue{fieldType: typeInt64, i: int64Blank + 3}, source.Value{}},
		{"int64 max", rawValue{fieldType: typeInt64, i: math.MaxInt64}, source.Value{}},
		{"int32 blank", rawValue{fieldType: typeInt64, i: int32Blank}, source.Value{}},
		{"int32 not found", rawValue{fieldType: typeInt64, i: int32Blank + 1}, source.Value{}},
		{"int32 not supported", rawValue{fieldType: typeInt64, i: int32Blank + 2}, source.Value{}},
		{"int32 not permissioned", rawValue{fieldType: typeInt64, i: int32Blank + 3}, source.Value{}},
		{"just below int32 blank", rawValue{fieldType: typeInt64, i: int32Blank - 1}, source.IntValue(int32Blank - 1)},
		{"just above int32 markers", rawValue{fieldType: typeInt64, i: int32Blank + 4}, source.IntValue(int32Blank + 4)},
		{"double", rawValue{fieldType: typeDouble, f: 250.5}, source.FloatValue(250.5)},
		{"fp64 blank", rawValue{fieldType: typeDouble, f: fp64Blank}, source.Value{}},
		{"fp64 not found", rawValue{fieldType: typeDouble, f: fp64Blank + 1}, source.Value{}},
		{"fp64 not supported", rawValue{fieldType: typeDouble, f: fp64Blank + 2}, source.Value{}},
		{"fp64 not permissioned", rawValue{fieldType: typeDouble, f: fp64Blank + 3}, source.Value{}},
		{"NaN", rawValue{fieldType: typeDouble, f: math.NaN()}, source.Value{}},
		{"-Inf", rawValue{fieldType: typeDouble, f: math.Inf(-1)}, source.Value{}},
		{"string", rawValue{fieldType: typeString, s: "NVIDIA H100"}, source.StringValue("NVIDIA H100")},
		{"string not UTF-8", rawValue{fieldType: typeString, s: "NVIDIA\xffH100"}, source.StringValue("NVIDIA\uFFFDH100")},
		{"string latin-1 run", rawValue{fieldType: typeString, s: "GPU-\xe9\xe8-1"}, source.StringValue("GPU-\uFFFD-1")},
		{"string UTF-8 kept", rawValue{fieldType: typeString, s: "ünï ✓"}, source.StringValue("ünï ✓")},
		{"string blank", rawValue{fieldType: typeString, s: "<<<NULL>>>"}, source.Value{}},
		{"string not found", rawValue{fieldType: typeString, s: "<<<NOT_FOUND>>>"}, source.Value{}},
		{"string not supported", rawValue{fieldType: typeString, s: "<<<NOT_SUPPORTED>>>"}, source.Value{}},
		{"string not permissioned", rawValue{fieldType: typeString, s: "<<<NOT_PERM>>>"}, source.Value{}},
		{"failed status", rawValue{fieldType: typeInt64, status: -17, i: 5}, source.Value{}},
		{"binary", rawValue{fieldType: 'b'}, source.Value{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := translate(tc.in); got != tc.want {
				t.Errorf("translate(%+v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}
