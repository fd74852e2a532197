// Package sim is a deterministic GPU simulator that implements
// source.Source. A scenario file (YAML; the built-in ones live in etc/sim)
// describes the GPUs of one node, their MIG layout, the value of every field
// as a pure function of the time elapsed since the simulation started, the
// pods that hold the GPUs, and faults (XID errors, outages, lost GPUs,
// failing health watches). The same scenario read at the same elapsed time
// always gives the same values, so tests drive a Source with WithClock and
// never sleep.
//
// # Scenario format
//
// Unknown keys are errors, and every error names file:line.
//
//	name: demo                    # optional; seeds the derived ids (default: file name)
//	driver_version: "550.54.15"   # optional
//	defaults:                     # optional
//	  fields: {FIELD: SPEC, ...}      # every GPU, unless the GPU sets the field
//	  mig_fields: {FIELD: SPEC, ...}  # every MIG instance, unless it sets the field
//	gpus:                         # required (may be empty); GPU index = position after count expansion
//	  - model: "NVIDIA H100 80GB HBM3"  # required
//	    memory_mib: 81559         # required, > 0
//	    count: 8                  # optional, >= 1: repeat this GPU
//	    uuid: GPU-…               # optional, only with count 1 (default derived from name and index)
//	    pci_bus_id: …             # optional, only with count 1 (default derived from index)
//	    fields: {FIELD: SPEC, ...}
//	    mig:                      # optional: MIG mode with these GPU instances
//	      - {profile: 1g.10gb, gpu_instance: 7, memory_mib: 9984, uuid: MIG-…, fields: {...}}
//	    sharing: {replicas: 4, resource: nvidia.com/gpu.shared}  # optional, not with mig: the device plugin
//	                              # advertises it as replicas "GPU-…::0".."::3" (resource default nvidia.com/gpu);
//	                              # with any GPU so, the kubelet serves GetAllocatableResources (allocatable.go)
//	fabric:                       # optional: an NVLink fabric (see fabric.go)
//	  nvswitches: 4               # 0-12; GPU link l goes to switch l mod nvswitches
//	  links_per_gpu: 18           # 1-36
//	  link_fields: {FIELD: SPEC, ...}    # every GPU link
//	  switch_fields: {FIELD: SPEC, ...}  # every NVSwitch
//	  port_fields: {FIELD: SPEC, ...}    # every NVSwitch port
//	  links: [{gpu: 3, link: 7, fields: {...}, down: 60s}]  # one link's own fields; its state is down from 60s
//	pods:                         # optional: what the simulated kubelet reports
//	  - namespace: ml             # required
//	    name: trainer-0           # required
//	    uid: …                    # optional (default derived)
//	    from: 0s                  # optional: present from this elapsed time
//	    until: 10m                # optional: gone from this elapsed time
//	    repeat: 2m                # optional: the from/until window recurs with this period
//	    owner: {kind: ReplicaSet, name: web-5d8f7}  # optional: its controller (apiVersion optional for the core workload kinds)
//	    labels: {kueue.x-k8s.io/queue-name: q}      # optional: labels the workload resolution reads (Kueue, JobSet, LeaderWorkerSet) and KAI Scheduler's runai-gpu-group
//	    annotations: {gpu-fraction-container-name: main}  # optional: annotations (KAI Scheduler's fraction container; scenario kai)
//	    containers:
//	      - name: main
//	        devices:
//	          - resource: nvidia.com/gpu
//	            gpus: [0, 1]                           # whole GPUs -> "GPU-…"
//	            mig: [{gpu: 0, gpu_instance: 7}]       # MIG instances -> "MIG-…"
//	            replicas: [{gpu: 2, replica: 1}]       # time-sliced -> "GPU-…::1" (with gpu_instance: "MIG-…::1")
//	            ids: ["nvidia3"]                       # passed through verbatim
//	jobs:                         # optional: HPC jobs, written to the job-mapping directory (--hpc.job-mapping-dir)
//	  - id: "4242"                # required, one word
//	    user: alice               # optional
//	    partition: gpu            # optional
//	    from: 0s                  # optional; until and repeat as for pods
//	    gpus: [0, 1]              # whole GPUs -> files "0", "1"
//	    mig: [{gpu: 0, gpu_instance: 7}]  # MIG instances -> file "0.7"
//	        processes:            # optional: what it runs on GPUs (process accounting)
//	          - {pid: 4101, gpu: 0, type: compute, memory_mib: 30000, sm: SPEC}  # or mig: {gpu: 0, gpu_instance: 7}; type compute, graphics or mps
//	            # env: {CUDA_DEVICE_SM_LIMIT: "50"}  optional: the environment it started with (/proc/<pid>/environ), e.g. MPS's, HAMi's or KAI's limits
//	    cgroup: v2/systemd/containerd  # optional: its processes' /proc/<pid>/cgroup layout (default: pods take every layout in turn)
//	objects:                      # optional: the pods' owners as the Kubernetes API serves them (gpu_workload_info)
//	  - {kind: ReplicaSet, namespace: ml, name: web-5d8f7, owner: {kind: Deployment, name: web}}
//	  - {kind: Job, namespace: ml, name: j-1, owner: {kind: CronJob, name: j}, labels: {kueue.x-k8s.io/queue-name: q}}
//	  - {kind: JobSet, namespace: ml, name: js, labels: {kueue.x-k8s.io/queue-name: q}}
//	  - {kind: LocalQueue, namespace: ml, name: q, clusterQueue: cq}  # kinds: ReplicaSet, Job, JobSet, LocalQueue
//	host_processes:               # optional: processes outside every pod
//	  - {pid: 2101, name: Xorg, type: graphics, gpu: 0, memory_mib: 120, sm: 1, cgroup: "0::/system.slice/display-manager.service"}
//	faults:                       # optional
//	  - {at: 1m, gpu: 7, xid: 79}                # DCGM_FI_DEV_XID_ERRORS reads 79 from then on; one XID event
//	  - {at: 5m, duration: 30s, outage: true}    # Inventory and Read fail with source.ErrUnavailable
//	  - {at: 8m, gpu: 5, lost: true}             # the GPU leaves the inventory (for duration, if given); LostGPUs lists it
//	  - {at: 9m, gpu: 3, health: pcie, status: warn}  # HealthIncidents reports the subsystem (warn or fail; for duration, if given)
//
// FIELD is any name fields.Catalog.Lookup accepts: a DCGM_FI_* name, an
// alias or the exported name. Values are in DCGM's native units (percent,
// MiB, MHz, mJ, W, °C, µs; profiling ratios 0-1), so the exporter's scaling
// is exercised as with real DCGM. A field given nowhere is Blank, with two
// derivations: DCGM_FI_DEV_FB_TOTAL defaults to memory_mib, and
// DCGM_FI_DEV_FB_FREE defaults to total - used - reserved when
// DCGM_FI_DEV_FB_USED is given. Under MIG, DCGM_FI_DEV_GPU_UTIL is Blank for
// the GPU, as DCGM reports it (setting it on such a GPU is an error; a default
// is dropped); instance activity comes from the instances' profiling fields.
// Device ids are listed in the order written; a pod may not be present twice
// at once under one namespace/name.
//
// Processes (processes.go, sampler.go): memory_mib and sm are field specs
// in MiB and percent. Source.ProcessSampler serves them as NVML would
// (per-process utilization on whole GPUs, none under MIG) and writes a fake
// procfs tree of them, so that the real cgroup parser and resolver run; a
// pod that comes back (repeat) runs a new process under the same PID. A
// GPU with processes reports their summed SM as DCGM_FI_DEV_GPU_UTIL.
//
// # Field specs
//
// A SPEC is a number (a constant) or a mapping with exactly one generator
// and optional modifiers. Times are elapsed time since the start, written as
// Go durations ("90s", "5m", "1h30m").
//
//	constant: 1980
//	ramp: {from: 0, to: 100, over: 5m, at: 0s, repeat: false}   # holds `to` after, or a sawtooth with repeat
//	sine: {mean: 80, amplitude: 15, period: 5m, phase: 0s}      # phase shifts time
//	step: [{at: 0s, value: 0}, {at: 30s, value: 32}]            # the first value holds before its time
//	step: {steps: [...], repeat: 2m}                            # the steps recur with this period
//	noise: {mean: 50, stddev: 5, seed: 1, bucket: 1s}           # one near-Gaussian draw per bucket
//	counter: {start: 0, rate: 0.5}                              # start + rate per second
//	sum: [SPEC, SPEC, ...]                                      # e.g. a sine plus noise
//	blank: true                                                 # Blank, e.g. to drop a default
//
// Modifiers: min and max clamp the value; jitter: S adds noise with standard
// deviation S, re-drawn every second; integer: true produces Int values
// (rounded to nearest; a counter is floored so it stays monotonic). Bitmask
// fields (clock event reasons) are always integers. Noise is a hash of its
// seed, the entity and the time bucket, so GPUs repeated with count do not
// move in lockstep; it is bounded to ±3.46 standard deviations. Counter
// fields of the catalog must use a non-decreasing spec.
//
// YAML anchors, aliases and merge keys (<<: *base) work everywhere, so GPUs
// can share field sets.
package sim
