// Package processes attributes GPU use on shared GPUs (time-slicing, MPS)
// to the containers that cause it, through per-process accounting: a
// Sampler lists the processes on each GPU and MIG device with their memory
// and utilization (NVML, or the simulator), a Resolver maps each PID to its
// pod and container through /proc/<pid>/cgroup, and an Accountant sums the
// processes of each container once per collection. Nothing here runs on
// the scrape path.
package processes
