package fakedcgm

import (
	"errors"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	t.Parallel()
	s := State{
		Down:   true,
		Driver: "550.54.15",
		GPUs: []GPU{{ID: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:3B:00.0", Minor: 2, FBMiB: 81559,
			Status: "lost", Profiling: []int{1001, 1002}, NVLinks: 18, NUMA: 1}},
		Instances:        []Instance{{EntityID: 3, GPU: 0, Instance: 1, Profile: "1g.10gb", ProfileID: 19, Slices: 1, UUID: "MIG-x", FBMiB: 9984}},
		ComputeInstances: []ComputeInstance{{EntityID: 9, GI: 3, Instance: 0, UUID: "MIG-x"}},
		Values: []Value{Int(EntityGPU, 0, 150, 45), Float(EntityGPU, 0, 155, 2.5), Str(EntityGI, 3, 50, "a b"),
			Sentinel(EntityGPU, 0, 203, "i32", "notsupported"), Status(EntityGPU, 0, 204, StNoPermission)},
		XIDs:   []XID{{GPU: 0, Code: 79, Time: time.UnixMicro(1234)}},
		Health: []HealthIncident{{GPU: 0, System: HealthMemory, Result: ResultFail, Code: 42, Message: "row remap failure"}},
		Faults: []Fault{{Func: "*", Code: StConnectionNotValid, Count: 2}, {Func: "dcgmUpdateAllFields", Hang: 1500 * time.Millisecond}},
	}
	want := `down
driver 550.54.15
gpu 0 uuid=GPU-a name="NVIDIA H100 80GB HBM3" bus=00000000:3B:00.0 minor=2 fb=81559 status=lost prof=1001,1002 links=18 numa=1
gi 3 gpu=0 instance=1 profile=1g.10gb profileid=19 slices=1 uuid=MIG-x fb=9984
ci 9 gi=3 instance=0 uuid=MIG-x
value gpu 0 150 i:45
value gpu 0 155 d:2.5
value gi 3 50 s:"a b"
value gpu 0 203 i32:notsupported
value gpu 0 204 status:-17
xid 0 79 1234
health 0 0x10 20 42 row remap failure
fail * -21 n=2
hang dcgmUpdateAllFields 1500
`
	if got := s.Render(); got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
}

func TestBuildWithoutCompiler(t *testing.T) {
	t.Setenv("CC", "no-such-compiler-fakedcgm")
	if _, err := BuildCached(); !errors.Is(err, ErrNoCompiler) {
		t.Errorf("BuildCached = %v, want ErrNoCompiler (tests then skip)", err)
	}
}
