package podresources

import (
	"errors"
	"strings"
	"testing"
)

const (
	uuid0 = "GPU-5fd4ee69-8d8f-2ad8-63d5-d3c6e7d5d4cc"
	uuid1 = "GPU-1a2b3c4d-0000-1111-2222-333344445555"
	mig0  = "MIG-7c3e0a1b-9f2d-5e6a-8b4c-112233445566"
	mig1  = "MIG-00000000-aaaa-bbbb-cccc-ddddeeeeffff"
)

// id builds an expected DeviceID: every number -1 unless set.
func id(kind DeviceKind, set func(*DeviceID)) DeviceID {
	d := DeviceID{Kind: kind, GPU: -1, GPUInstance: -1, ComputeInstance: -1, MIGIndex: -1,
		ProfileID: -1, PlacementStart: -1, PlacementSize: -1, Replica: -1}
	if set != nil {
		set(&d)
	}
	return d
}

func TestParseDeviceID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		id     string
		idType IDType
		want   DeviceID
	}{
		{"gpu uuid", uuid0, IDTypeUID, id(KindGPUUUID, func(d *DeviceID) { d.UUID = uuid0 })},
		{"gpu uuid upper-case hex", "GPU-5FD4EE69-8D8F-2AD8-63D5-D3C6E7D5D4CC", IDTypeAuto,
			id(KindGPUUUID, func(d *DeviceID) { d.UUID = "GPU-5FD4EE69-8D8F-2AD8-63D5-D3C6E7D5D4CC" })},
		{"time-sliced replica", uuid0 + "::3", IDTypeUID, id(KindGPUUUID, func(d *DeviceID) { d.UUID, d.Replica = uuid0, 3 })},
		{"replica zero", uuid0 + "::0", IDTypeAuto, id(KindGPUUUID, func(d *DeviceID) { d.UUID, d.Replica = uuid0, 0 })},
		{"mig uuid", mig0, IDTypeUID, id(KindMIGUUID, func(d *DeviceID) { d.UUID = mig0 })},
		{"mig uuid replica", mig0 + "::12", IDTypeUID, id(KindMIGUUID, func(d *DeviceID) { d.UUID, d.Replica = mig0, 12 })},
		{"legacy mig", "MIG-" + uuid0 + "/7/0", IDTypeUID,
			id(KindLegacyMIG, func(d *DeviceID) { d.UUID, d.GPUInstance, d.ComputeInstance = uuid0, 7, 0 })},
		{"legacy mig replica", "MIG-" + uuid0 + "/1/2::4", IDTypeAuto,
			id(KindLegacyMIG, func(d *DeviceID) { d.UUID, d.GPUInstance, d.ComputeInstance, d.Replica = uuid0, 1, 2, 4 })},
		{"index", "0", IDTypeUID, id(KindIndex, func(d *DeviceID) { d.GPU = 0 })},
		{"index 12", "12", IDTypeAuto, id(KindIndex, func(d *DeviceID) { d.GPU = 12 })},
		{"mig index", "1:3", IDTypeUID, id(KindMIGIndex, func(d *DeviceID) { d.GPU, d.MIGIndex = 1, 3 })},
		{"device name", "nvidia0", IDTypeDeviceName, id(KindDeviceName, func(d *DeviceID) { d.GPU = 0 })},
		{"device name auto", "nvidia15", IDTypeAuto, id(KindDeviceName, func(d *DeviceID) { d.GPU = 15 })},
		{"gke time-sharing", "nvidia2/vgpu5", IDTypeDeviceName, id(KindDeviceName, func(d *DeviceID) { d.GPU, d.Replica = 2, 5 })},
		{"gke mig", "nvidia0/gi1", IDTypeDeviceName, id(KindGKEMIG, func(d *DeviceID) { d.GPU, d.GPUInstance = 0, 1 })},
		{"gke mig shared", "nvidia0/gi13/vgpu2", IDTypeAuto,
			id(KindGKEMIG, func(d *DeviceID) { d.GPU, d.GPUInstance, d.Replica = 0, 13, 2 })},
		{"dra gpu", "gpu-0", IDTypeDRA, id(KindDRAGPU, func(d *DeviceID) { d.GPU = 0 })},
		{"dra gpu auto", "gpu-7", IDTypeAuto, id(KindDRAGPU, func(d *DeviceID) { d.GPU = 7 })},
		{"dra mig", "gpu-0-mig-1g10gb-19-0", IDTypeDRA,
			id(KindDRAMIG, func(d *DeviceID) { d.GPU, d.Profile, d.ProfileID, d.PlacementStart = 0, "1g10gb", 19, 0 })},
		// ToCanonicalName in cmd/gpu-kubelet-plugin/mig.go
		// (NVIDIA/k8s-dra-driver-gpu@22407113): "gpu-%d-mig-%s-%d-%d" of the
		// parent minor, the profile without dots made RFC 1123 compliant
		// (lower case, anything else than [a-z0-9-.] a dash), the GI profile
		// id and the placement start.
		{"dra mig 1g.6gb", "gpu-1-mig-1g6gb-14-0", IDTypeDRA,
			id(KindDRAMIG, func(d *DeviceID) { d.GPU, d.Profile, d.ProfileID, d.PlacementStart = 1, "1g6gb", 14, 0 })},
		{"dra mig 1g.10gb+me", "gpu-1-mig-1g10gb-me-20-0", IDTypeAuto,
			id(KindDRAMIG, func(d *DeviceID) { d.GPU, d.Profile, d.ProfileID, d.PlacementStart = 1, "1g10gb-me", 20, 0 })},
		{"dra mig 7g.80gb", "gpu-12-mig-7g80gb-0-0", IDTypeAuto,
			id(KindDRAMIG, func(d *DeviceID) { d.GPU, d.Profile, d.ProfileID, d.PlacementStart = 12, "7g80gb", 0, 0 })},
		{"dra mig dashed profile", "gpu-3-mig-1g24gb-gfx-47-6", IDTypeDRA,
			id(KindDRAMIG, func(d *DeviceID) { d.GPU, d.Profile, d.ProfileID, d.PlacementStart = 3, "1g24gb-gfx", 47, 6 })},
		{"dra mig early form", "gpu-1-mig-9-4-2", IDTypeDRA,
			id(KindDRAMIG, func(d *DeviceID) { d.GPU, d.ProfileID, d.PlacementStart, d.PlacementSize = 1, 9, 4, 2 })},
		{"dra vfio", "gpu-vfio-2", IDTypeDRA, id(KindDRAVFIO, func(d *DeviceID) { d.GPU = 2 })},
		// HAMi and Volcano vGPU: "<GPU uuid>-<slot>" (issue 30, defect 2).
		{"hami split slot", uuid0 + "-0", IDTypeUID, id(KindGPUSplit, func(d *DeviceID) { d.UUID, d.Replica = uuid0, 0 })},
		{"hami split slot 17", uuid1 + "-17", IDTypeAuto, id(KindGPUSplit, func(d *DeviceID) { d.UUID, d.Replica = uuid1, 17 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDeviceID(tt.id, tt.idType)
			if err != nil {
				t.Fatalf("ParseDeviceID(%q, %s): %v", tt.id, tt.idType, err)
			}
			if got != tt.want {
				t.Errorf("ParseDeviceID(%q, %s)\n got %+v\nwant %+v", tt.id, tt.idType, got, tt.want)
			}
			if s := got.String(); s != tt.id {
				t.Errorf("String() = %q, want %q", s, tt.id)
			}
			if got.Shared() != (tt.want.Replica >= 0) {
				t.Errorf("Shared() = %v", got.Shared())
			}
		})
	}
}

func TestParseDeviceIDErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		id     string
		idType IDType
	}{
		{"empty", "", IDTypeAuto},
		{"short uuid", "GPU-5fd4ee69", IDTypeAuto},
		{"uuid bad hex", "GPU-5fd4ee69-8d8f-2ad8-63d5-d3c6e7d5d4cz", IDTypeAuto},
		{"uuid misplaced dash", "GPU-5fd4ee698-d8f-2ad8-63d5-d3c6e7d5d4cc", IDTypeAuto},
		{"lower-case prefix", "gpu-5fd4ee69-8d8f-2ad8-63d5-d3c6e7d5d4cc", IDTypeAuto},
		{"replica empty", uuid0 + "::", IDTypeAuto},
		{"replica negative", uuid0 + "::-1", IDTypeAuto},
		{"replica twice", uuid0 + "::1::2", IDTypeAuto},
		{"replica leading zero", uuid0 + "::01", IDTypeAuto},
		{"legacy mig missing ci", "MIG-" + uuid0 + "/1", IDTypeAuto},
		{"legacy mig extra part", "MIG-" + uuid0 + "/1/0/0", IDTypeAuto},
		{"legacy mig bad gi", "MIG-" + uuid0 + "/x/0", IDTypeAuto},
		{"legacy mig bad uuid", "MIG-GPU-1234/1/0", IDTypeAuto},
		{"index leading zero", "01", IDTypeAuto},
		{"index sign", "+1", IDTypeAuto},
		{"index too long", "1234567890", IDTypeAuto},
		{"mig index empty", "1:", IDTypeAuto},
		{"unknown form", "card0", IDTypeAuto},
		{"device name no number", "nvidia", IDTypeAuto},
		{"device name ctl", "nvidiactl", IDTypeAuto},
		{"gke bad gi", "nvidia0/gix", IDTypeAuto},
		{"gke trailing", "nvidia0/gi1/vgpu2/x", IDTypeAuto},
		{"gke vgpu before gi", "nvidia0/vgpu2/gi1", IDTypeAuto},
		{"device name replica colon", "nvidia0::1", IDTypeAuto},
		{"dra no number", "gpu-", IDTypeAuto},
		{"dra mig short", "gpu-0-mig-1g10gb", IDTypeAuto},
		{"dra mig upper profile", "gpu-0-mig-1G10GB-19-0", IDTypeAuto},
		{"dra mig profile no letter", "gpu-0-mig-1-2-19-0", IDTypeAuto},
		{"dra vfio bad", "gpu-vfio-x", IDTypeAuto},
		{"uid id under device-name", uuid0, IDTypeDeviceName},
		{"device name under uid", "nvidia0", IDTypeUID},
		{"dra name under uid", "gpu-0", IDTypeUID},
		{"index under dra", "0", IDTypeDRA},
		{"unknown id type", uuid0, IDType(99)},
		{"too long", "GPU-" + strings.Repeat("a", 300), IDTypeAuto},
		{"split slot empty", uuid0 + "-", IDTypeAuto},
		{"split slot leading zero", uuid0 + "-01", IDTypeAuto},
		{"split slot with replica", uuid0 + "-1::2", IDTypeAuto},
		{"split slot of a mig uuid", mig0 + "-1", IDTypeAuto},
		{"volcano memory unit", uuid0 + "-memory-3", IDTypeAuto},
		{"split slot under device-name", uuid0 + "-1", IDTypeDeviceName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDeviceID(tt.id, tt.idType)
			if err == nil {
				t.Fatalf("ParseDeviceID(%q, %s) = %+v, want an error", tt.id, tt.idType, got)
			}
			if !errors.Is(err, ErrMalformedID) {
				t.Errorf("error %v does not wrap ErrMalformedID", err)
			}
			quoted := tt.id
			if len(quoted) > 32 {
				quoted = quoted[:32]
			}
			if !strings.Contains(err.Error(), quoted) {
				t.Errorf("error %q does not name the id", err)
			}
		})
	}
}

func TestParseIDType(t *testing.T) {
	t.Parallel()
	for _, want := range []IDType{IDTypeAuto, IDTypeUID, IDTypeDeviceName, IDTypeDRA} {
		got, err := ParseIDType(want.String())
		if err != nil || got != want {
			t.Errorf("ParseIDType(%q) = %v, %v", want.String(), got, err)
		}
	}
	if _, err := ParseIDType("uuid"); err == nil {
		t.Error(`ParseIDType("uuid") succeeded`)
	}
}

// FuzzParseDeviceID: parsing never panics, and a parsed id writes back to
// the same text, parses again to the same fields, and parses the same with
// IDTypeAuto.
func FuzzParseDeviceID(f *testing.F) {
	for _, s := range []string{
		uuid0, uuid0 + "::3", mig0, mig0 + "::1", "MIG-" + uuid0 + "/7/0", "0", "13", "1:3",
		"nvidia0", "nvidia3/vgpu1", "nvidia0/gi1", "nvidia0/gi1/vgpu2",
		"gpu-0", "gpu-0-mig-1g10gb-19-0", "gpu-0-mig-9-0-1", "gpu-vfio-1", "", "::", "GPU-", "nvidia0/gi",
		uuid0 + "-3", uuid0 + "-3::1",
	} {
		for typ := range uint8(5) {
			f.Add(s, typ)
		}
	}
	f.Fuzz(func(t *testing.T, s string, typ uint8) {
		idType := IDType(typ)
		d, err := ParseDeviceID(s, idType)
		if err != nil {
			if !errors.Is(err, ErrMalformedID) {
				t.Fatalf("error %v does not wrap ErrMalformedID", err)
			}
			return
		}
		if d.Kind == KindUnknown {
			t.Fatalf("ParseDeviceID(%q) succeeded with KindUnknown", s)
		}
		if got := d.String(); got != s {
			t.Fatalf("ParseDeviceID(%q).String() = %q", s, got)
		}
		again, err := ParseDeviceID(d.String(), idType)
		if err != nil || again != d {
			t.Fatalf("reparse of %q = %+v, %v; want %+v", s, again, err, d)
		}
		if auto, err := ParseDeviceID(s, IDTypeAuto); err != nil || auto != d {
			t.Fatalf("auto parse of %q = %+v, %v; want %+v", s, auto, err, d)
		}
	})
}
