package processes

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Probe is what one sample of a Sampler, with its processes resolved
// through procfs, says about process accounting on this node. gpu-exporter
// doctor shows it.
type Probe struct {
	// Devices is the number of GPUs and MIG devices listed.
	Devices int
	// Processes is the number of distinct PIDs listed (a process on two
	// devices counts once); the next four fields add up to it.
	Processes int
	// Containers is how many run in a pod's container, Host how many
	// outside every pod.
	Containers, Host int
	// Missing is how many are not in procfs: they exited between the
	// listing and the read, or procfs shows another PID namespace than the
	// sampler's PIDs.
	Missing int
	// Unreadable is how many have a cgroup or stat file that could not be
	// read or understood; Errors holds the first few of their errors.
	Unreadable int
	Errors     []string
}

// probeErrors bounds Probe.Errors.
const probeErrors = 3

// ProbeSampler samples every device once with sampler and resolves each
// listed process through procfs with a Resolver, as one collection of an
// Accountant does, without self-metrics and without keeping anything. The
// error is the sampler's: it wraps ErrUnavailable when the sampler cannot
// reach the GPUs at all (NVML cannot be loaded or initialised); when only
// some devices failed it comes with the others' Probe.
func ProbeSampler(ctx context.Context, sampler Sampler, procfs string) (Probe, error) {
	r, err := NewResolver(procfs, 0)
	if err != nil {
		return Probe{}, err
	}
	devs, sampleErr := sampler.Sample(ctx)
	if sampleErr != nil && len(devs) == 0 {
		return Probe{}, sampleErr
	}
	p := Probe{Devices: len(devs)}
	var pids []uint32
	for _, d := range devs {
		for _, proc := range d.Processes {
			pids = append(pids, proc.PID)
		}
	}
	slices.Sort(pids)
	pids = slices.Compact(pids)
	p.Processes = len(pids)
	r.Begin()
	for _, pid := range pids {
		owner, err := r.Resolve(ctx, pid)
		switch {
		case errors.Is(err, ErrExited):
			p.Missing++
		case err != nil:
			p.Unreadable++
			if len(p.Errors) < probeErrors {
				p.Errors = append(p.Errors, err.Error())
			}
		case owner.Host():
			p.Host++
		default:
			p.Containers++
		}
	}
	if sampleErr != nil {
		return p, fmt.Errorf("some devices: %w", sampleErr)
	}
	return p, nil
}
