#!/bin/sh
# gpu-exporter Slurm prolog: records which GPUs of this node the starting
# job holds, in the job-mapping directory gpu-exporter reads
# (--hpc.job-mapping-dir; dcgm-exporter's --hpc-job-mapping-dir format).
#
# For each GPU of the job it adds one line to the file naming the GPU:
#          <job id> user=<user> partition=<partition>
# The file is named after Slurm's GPU index ("3"), after the device node
# ("nvidia3") when GPU_JOB_MAPPING_SLURM_INDEX=minor, or after the MIG
# device UUID ("MIG-…") for a MIG slice; the exporter resolves each to its
# GPU or MIG instance (docs/hpc.md, "Which name the prolog writes").
# keeping the lines of other jobs sharing the GPU. Files are replaced
# atomically (written to a dot-file, then renamed), so the exporter never
# reads half a file. Install: see README.md.
#
# Environment (Slurm's Prolog and Epilog Guide, prolog_epilog.html):
#   SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_PARTITION, and the GPUs from
#   SLURM_JOB_GPUS or, when it is not set, CUDA_VISIBLE_DEVICES.
# Settings:
#   GPU_EXPORTER_HPC_JOB_MAPPING_DIR  the directory (default /run/gpu-jobs);
#                                     the exporter's --hpc.job-mapping-dir twin
#   GPU_JOB_MAPPING_FIELDS=no         write the job id alone, as plain
#                                     dcgm-exporter files (no user=, partition=)
#   GPU_JOB_MAPPING_SYSLOG=no         log to stderr only, not through logger(1)
#   GPU_JOB_MAPPING_LOCK_WAIT         seconds to wait for another prolog or
#                                     epilog before breaking its lock (20)
#   GPU_JOB_MAPPING_SLURM_INDEX       what Slurm's GPU index is: nvml (the
#                                     default; gres.conf AutoDetect=nvml,
#                                     where it is NVML's index) or minor
#                                     (gres.conf File=/dev/nvidia[0-N]
#                                     without AutoDetect, where it is the
#                                     device minor number): see docs/hpc.md
#   GPU_JOB_MAPPING_NVIDIA_CAPS       the driver's capability directory, where
#                                     gpu<minor>/mig/gi<id> exist on a node
#                                     with MIG instances
#                                     (/proc/driver/nvidia/capabilities)
#
# MIG: Slurm counts each MIG slice as one GPU. SLURM_JOB_GPUS is then its
# position in slurmd's list of MIG slices and whole GPUs, not a GPU index,
# and CUDA_VISIBLE_DEVICES holds the slice's MIG UUID (gres_device->index
# and ->unique_id in gres_common_prep_set_env, Slurm's
# src/plugins/gres/common/gres_common.c). So a MIG UUID is recorded as its
# own file, and on a node with MIG instances a bare number is recorded
# nowhere (logged): it may name any GPU.
#
# It always exits 0: a failing Prolog drains the node and requeues the job
# (Slurm's guide, "Failure Handling"); losing a label is the lesser harm.

dir=${GPU_EXPORTER_HPC_JOB_MAPPING_DIR:-/run/gpu-jobs}
PATH=/usr/bin:/bin:/usr/sbin:/sbin
umask 022
set -f # the GPU list is split on commas, never globbed

log() {
	echo "gpu-exporter-prolog: $*" >&2
	if [ "${GPU_JOB_MAPPING_SYSLOG:-yes}" != no ] && command -v logger >/dev/null 2>&1; then
		logger -t gpu-exporter-slurm -- "prolog: $*"
	fi
}

# word VALUE: VALUE is usable as one word of a mapping line.
word() {
	case $1 in
	'' | *[[:space:]=#]* | *[[:cntrl:]]*) return 1 ;;
	esac
	return 0
}

job=${SLURM_JOB_ID:-}
if ! word "$job"; then
	log "SLURM_JOB_ID is missing or not a single word; nothing recorded"
	exit 0
fi
gpus=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}
# A MIG slice's UUID names it; its SLURM_JOB_GPUS number does not.
case ${CUDA_VISIBLE_DEVICES:-} in *MIG-*) gpus=$CUDA_VISIBLE_DEVICES ;; esac
# A job without GPUs; NoDevFiles is what Slurm sets when gres.conf names no
# device files (src/plugins/gres/common/gres_common.c): no index to record.
case $gpus in '' | NoDevFiles) exit 0 ;; esac

index=${GPU_JOB_MAPPING_SLURM_INDEX:-nvml}
case $index in
nvml | minor) ;;
*)
	log "GPU_JOB_MAPPING_SLURM_INDEX='$index' is neither nvml nor minor; job $job not recorded"
	exit 0
	;;
esac

# MIG instances on this node (a MIG UUID in the job's list proves it):
# Slurm's numbers count MIG slices.
mig_node=no
case $gpus in *MIG-*) mig_node=yes ;; esac
set +f # this glob only
for gi in "${GPU_JOB_MAPPING_NVIDIA_CAPS:-/proc/driver/nvidia/capabilities}"/gpu*/mig/gi*; do
	if [ -e "$gi" ]; then
		mig_node=yes
		break
	fi
done
set -f

line=$job
if [ "${GPU_JOB_MAPPING_FIELDS:-yes}" != no ]; then
	if word "${SLURM_JOB_USER:-}"; then line="$line user=$SLURM_JOB_USER"; fi
	if word "${SLURM_JOB_PARTITION:-}"; then line="$line partition=$SLURM_JOB_PARTITION"; fi
fi

if ! mkdir -p "$dir" || ! chmod 755 "$dir"; then
	log "cannot create $dir; job $job not recorded"
	exit 0
fi

# One prolog or epilog at a time changes the directory: mkdir is atomic. A
# lock older than the wait (a killed script) is broken.
lock="$dir/.lock"
tries=0
until mkdir "$lock" 2>/dev/null; do
	tries=$((tries + 1))
	if [ "$tries" -gt "${GPU_JOB_MAPPING_LOCK_WAIT:-20}" ]; then
		log "breaking a stale lock $lock"
		rmdir "$lock" 2>/dev/null
		tries=0
		continue
	fi
	sleep 1
done
trap 'rmdir "$lock" 2>/dev/null' EXIT
trap 'exit 0' HUP INT TERM

old_ifs=$IFS
IFS=,
set -- $gpus
IFS=$old_ifs
for gpu do
	case $gpu in
	MIG-????????-????-????-????-????????????)
		case ${gpu#MIG-} in
		*[!0-9a-fA-F-]*)
			log "job $job: GPU id '$gpu' is not a MIG UUID; not recorded"
			continue
			;;
		esac
		name=$gpu
		;;
	MIG-GPU-*)
		# Drivers before 470.42.01: Slurm writes MIG-GPU-<uuid>/<gi>/<ci>
		# (_handle_mig in src/plugins/gpu/nvml/gpu_nvml.c), no file name.
		log "job $job: legacy MIG id '$gpu' (driver before 470.42.01) names no mapping file; not recorded"
		continue
		;;
	'' | *[!0-9]*)
		log "job $job: GPU id '$gpu' is neither an index nor a MIG UUID; not recorded"
		continue
		;;
	*)
		if [ "$mig_node" = yes ]; then
			log "job $job: GPU number '$gpu' on a node with MIG instances is Slurm's position among MIG slices and GPUs, not a GPU index; not recorded"
			continue
		fi
		# 007 is GPU 7, written to file 7: the exporter, like dcgm-exporter,
		# reads no file name with leading zeros (no $((…)): 08 is not octal).
		while case $gpu in 0?*) true ;; *) false ;; esac do
			gpu=${gpu#0}
		done
		name=$gpu
		if [ "$index" = minor ]; then name=nvidia$gpu; fi
		;;
	esac
	file="$dir/$name"
	tmp="$dir/.$name.$job.$$"
	# Other jobs' lines stay; a line of this job (a prolog run twice) is
	# replaced.
	if { if [ -f "$file" ]; then awk -v j="$job" '$1 != j' "$file"; fi; echo "$line"; } >"$tmp" &&
		chmod 644 "$tmp" && mv -f "$tmp" "$file"; then
		:
	else
		log "job $job: cannot write $file"
		rm -f "$tmp"
	fi
done
exit 0
