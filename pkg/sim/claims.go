package sim

import "go.yaml.in/yaml/v3"

// DefaultDRADriver is the driver a scenario's claim device has when it
// names none: NVIDIA's DRA driver.
const DefaultDRADriver = "gpu.nvidia.com"

// Claim is one DRA ResourceClaim a container uses, as the kubelet reports
// it in DynamicResources: the claim and the devices allocated through it.
type Claim struct {
	Namespace, Name string
	Devices         []ClaimDevice
}

// ClaimDevice is one device of a claim, named as the kubelet names it
// (ClaimResource: driver_name, pool_name, device_name, share_id). NVIDIA's
// DRA driver names its pool after the node and its devices gpu-<minor> and
// gpu-<minor>-mig-<profile>-<profile id>-<placement start>.
type ClaimDevice struct {
	Driver, Pool, Device string
	// ShareID is set for a device allocated with consumable capacity.
	ShareID string
}

func (c Claim) clone() Claim {
	c.Devices = append([]ClaimDevice(nil), c.Devices...)
	return c
}

// claims reads a container's claims: [{name, namespace (default: the
// pod's), devices: [{driver (default DefaultDRADriver), pool, device,
// share_id}]}].
func (b *builder) claims(n *yaml.Node, p, podNamespace string) ([]Claim, error) {
	d := b.d
	items, err := d.list(n, p)
	if err != nil {
		return nil, err
	}
	var out []Claim
	for i, item := range items {
		ip := indexPath(p, i)
		o, err := d.object(item, ip, "name", "namespace", "devices")
		if err != nil {
			return nil, err
		}
		if err := o.require("name", "devices"); err != nil {
			return nil, err
		}
		c := Claim{Namespace: podNamespace}
		if c.Name, err = o.str("name"); err != nil {
			return nil, err
		}
		if v, _ := o.at("namespace"); v != nil {
			if c.Namespace, err = o.str("namespace"); err != nil {
				return nil, err
			}
		}
		dn, dp := o.at("devices")
		devs, err := d.list(dn, dp)
		if err != nil {
			return nil, err
		}
		if len(devs) == 0 {
			return nil, d.errf(resolve(dn), dp, "a claim needs at least one device")
		}
		for j, dv := range devs {
			jp := indexPath(dp, j)
			do, err := d.object(dv, jp, "driver", "pool", "device", "share_id")
			if err != nil {
				return nil, err
			}
			if err := do.require("pool", "device"); err != nil {
				return nil, err
			}
			cd := ClaimDevice{Driver: DefaultDRADriver}
			if v, _ := do.at("driver"); v != nil {
				if cd.Driver, err = do.str("driver"); err != nil {
					return nil, err
				}
			}
			if cd.Pool, err = do.str("pool"); err != nil {
				return nil, err
			}
			if cd.Device, err = do.str("device"); err != nil {
				return nil, err
			}
			if cd.ShareID, err = do.str("share_id"); err != nil {
				return nil, err
			}
			c.Devices = append(c.Devices, cd)
		}
		out = append(out, c)
	}
	return out, nil
}
