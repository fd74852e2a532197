package sim

import (
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/hpcjobs"
)

const maxJobs = 10000

// Job is an HPC job of the simulated scheduler: what a Slurm prolog writes
// into the job-mapping directory while the job runs.
type Job struct {
	hpcjobs.Job
	// GPUs are the GPUs and MIG instances it holds, as mapping-file keys.
	GPUs []hpcjobs.Key
}

// jobTemplate is a job and when it runs.
type jobTemplate struct {
	job Job
	window
	repeat time.Duration
}

// JobsAt returns the jobs running at elapsed time t, in scenario order.
// The result is the caller's to keep or modify.
func (s *Scenario) JobsAt(t time.Duration) []Job {
	t = max(t, 0)
	var out []Job
	for i := range s.jobs {
		jt := &s.jobs[i]
		at := t
		if jt.repeat > 0 {
			at %= jt.repeat
		}
		if jt.contains(at) {
			j := jt.job
			j.GPUs = append([]hpcjobs.Key(nil), j.GPUs...)
			out = append(out, j)
		}
	}
	return out
}

// HasJobs reports whether the scenario declares HPC jobs.
func (s *Scenario) HasJobs() bool { return len(s.jobs) > 0 }

func (b *builder) jobs(n *yaml.Node, p string) error {
	items, err := b.d.list(n, p)
	if err != nil {
		return err
	}
	if len(items) > maxJobs {
		return b.d.errf(resolve(n), p, "more than %d jobs", maxJobs)
	}
	seen := map[string]string{}
	for i, item := range items {
		ip := indexPath(p, i)
		jt, err := b.job(item, ip)
		if err != nil {
			return err
		}
		if prev, dup := seen[jt.job.ID]; dup {
			return b.d.errf(resolve(item), ip, "job %s is also %s", jt.job.ID, prev)
		}
		seen[jt.job.ID] = ip
		b.scn.jobs = append(b.scn.jobs, *jt)
	}
	return nil
}

func (b *builder) job(n *yaml.Node, p string) (*jobTemplate, error) {
	d := b.d
	o, err := d.object(n, p, "id", "user", "partition", "from", "until", "repeat", "gpus", "mig")
	if err != nil {
		return nil, err
	}
	if err := o.require("id"); err != nil {
		return nil, err
	}
	jt := &jobTemplate{window: window{open: true}}
	for _, f := range []struct {
		key string
		dst *string
	}{{"id", &jt.job.ID}, {"user", &jt.job.User}, {"partition", &jt.job.Partition}} {
		if *f.dst, err = o.str(f.key); err != nil {
			return nil, err
		}
		if v, vp := o.at(f.key); v != nil && !word(*f.dst) {
			return nil, d.errf(v, vp, "%q is not one word of a mapping-file line (no blanks, '=', control characters or leading '#')", *f.dst)
		}
	}
	// The same window rules as pods.
	pt := &podTemplate{window: jt.window}
	if err := b.podWindow(o, pt); err != nil {
		return nil, err
	}
	jt.window, jt.repeat = pt.window, pt.repeat
	if gn, gp := o.at("gpus"); gn != nil {
		items, err := d.list(gn, gp)
		if err != nil {
			return nil, err
		}
		for i, item := range items {
			g, err := b.gpuIndex(item, indexPath(gp, i))
			if err != nil {
				return nil, err
			}
			jt.job.GPUs = append(jt.job.GPUs, hpcjobs.Key{GPU: g, Instance: -1})
		}
	}
	if mn, mp := o.at("mig"); mn != nil {
		items, err := d.list(mn, mp)
		if err != nil {
			return nil, err
		}
		for i, item := range items {
			ip := indexPath(mp, i)
			mo, err := d.object(item, ip, "gpu", "gpu_instance")
			if err != nil {
				return nil, err
			}
			if _, err := b.instanceID(mo); err != nil { // the instance exists
				return nil, err
			}
			g, _ := b.gpuRef(mo, "gpu")
			gi, _ := mo.integer("gpu_instance", 0, maxInstanceID)
			jt.job.GPUs = append(jt.job.GPUs, hpcjobs.Key{GPU: g, Instance: int(gi)})
		}
	}
	if len(jt.job.GPUs) == 0 {
		return nil, d.errf(o.node, p, "a job needs gpus or mig")
	}
	return jt, nil
}

// word reports whether s can be one word of a mapping-file line.
func word(s string) bool {
	return !strings.HasPrefix(s, "#") && !strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == '='
	})
}
