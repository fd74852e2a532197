#!/bin/sh
# gpu-exporter Slurm epilog: removes the ending job from the job-mapping
# directory the prolog (gpu-exporter-prolog.sh) wrote. Only this job's lines
# go; other jobs sharing a GPU keep theirs, and a file left with no job is
# removed. Every GPU file is looked at, so the epilog needs no GPU list
# (older Slurm releases give SLURM_JOB_GPUS to the Prolog only).
#
# Environment: SLURM_JOB_ID. Settings: GPU_EXPORTER_HPC_JOB_MAPPING_DIR
# (default /run/gpu-jobs), GPU_JOB_MAPPING_SYSLOG and GPU_JOB_MAPPING_LOCK_WAIT, as
# for the prolog.
#
# It always exits 0: a failing Epilog sets the node DOWN (Slurm's Prolog
# and Epilog Guide, "Failure Handling").

dir=${GPU_EXPORTER_HPC_JOB_MAPPING_DIR:-/run/gpu-jobs}
PATH=/usr/bin:/bin:/usr/sbin:/sbin
umask 022

log() {
	echo "gpu-exporter-epilog: $*" >&2
	if [ "${GPU_JOB_MAPPING_SYSLOG:-yes}" != no ] && command -v logger >/dev/null 2>&1; then
		logger -t gpu-exporter-slurm -- "epilog: $*"
	fi
}

job=${SLURM_JOB_ID:-}
case $job in
'' | *[[:space:]=#]* | *[[:cntrl:]]*)
	log "SLURM_JOB_ID is missing or not a single word; nothing removed"
	exit 0
	;;
esac
[ -d "$dir" ] || exit 0

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

for file in "$dir"/*; do
	name=${file##*/}
	case $name in
	nvidia[0-9]* | MIG-*) ;;    # a GPU by device node, a MIG slice by UUID
	'' | *[!0-9.]*) continue ;; # not a GPU file (or no file at all)
	esac
	[ -f "$file" ] || continue
	awk -v j="$job" '$1 == j { found = 1 } END { exit !found }' "$file" || continue
	tmp="$dir/.$name.$job.$$"
	if awk -v j="$job" '$1 != j' "$file" >"$tmp"; then
		if grep -q '[^[:space:]]' "$tmp"; then
			chmod 644 "$tmp" && mv -f "$tmp" "$file" || log "job $job: cannot rewrite $file"
		else
			rm -f "$file" || log "job $job: cannot remove $file"
		fi
	else
		log "job $job: cannot rewrite $file"
	fi
	rm -f "$tmp"
done
exit 0
