#!/usr/bin/env bash
# Hardware check: on a GPU machine, run `gpu-exporter doctor` and compare the
# exporter's /metrics with nvidia-smi, for the NVML source and (where
# libdcgm.so.4 is installed) the DCGM source. Writes everything, and
# report.json, under REPORT_DIR. Exits 0 with "no GPU: skipped" where there is
# no GPU, 1 on a mismatch or a failed doctor check, 2 on a usage error.
# It builds nothing: it runs $GPU_EXPORTER (default bin/gpu-exporter) and the
# comparison from $HARDWARE_COMPARE, bin/hardware-compare, or `go run`.
set -euo pipefail

dir=${1:?usage: tests/hardware/run.sh REPORT_DIR}
mkdir -p "$dir"
bin=${GPU_EXPORTER:-bin/gpu-exporter}
interval=${HARDWARE_INTERVAL_S:-2} # seconds between collections
port=${HARDWARE_PORT:-19400}
summary="$dir/report.json"

skip() {
	echo "no GPU: skipped ($1)"
	printf '{"status":"skipped","reason":"no GPU: %s"}\n' "$1" >"$summary"
	exit 0
}
command -v nvidia-smi >/dev/null 2>&1 || skip "nvidia-smi not found"
nvidia-smi -L >"$dir/nvidia-smi-L.txt" 2>&1 || skip "nvidia-smi -L failed: $(head -n1 "$dir/nvidia-smi-L.txt")"
grep -q '^GPU ' "$dir/nvidia-smi-L.txt" || skip "nvidia-smi lists no GPU"

if [ ! -x "$bin" ]; then
	echo "hardware-check: $bin not found: build it (make build) or set GPU_EXPORTER" >&2
	exit 2
fi
compare=()
if [ -n "${HARDWARE_COMPARE:-}" ]; then
	compare=("$HARDWARE_COMPARE")
elif [ -x bin/hardware-compare ]; then
	compare=(bin/hardware-compare)
elif command -v go >/dev/null 2>&1; then
	compare=(go run ./tests/hardware)
else
	echo "hardware-check: no comparison program: copy one built with 'go build -o bin/hardware-compare ./tests/hardware', or install Go" >&2
	exit 2
fi
fetch() {
	if command -v curl >/dev/null 2>&1; then curl -fsS --max-time 5 "$1"; else wget -q -T 5 -O - "$1"; fi
}

# The driver's own view, for the record (the comparison reads -q -x).
nvidia-smi --query-gpu=index,uuid,name,driver_version,memory.total,memory.used,temperature.gpu,power.draw,clocks.sm,clocks.mem,utilization.gpu,mig.mode.current \
	--format=csv,noheader,nounits >"$dir/nvidia-smi-query.csv" 2>&1 || true

sources=(nvml)
if [ -n "${HARDWARE_SOURCES:-}" ]; then
	read -r -a sources <<<"$HARDWARE_SOURCES" # a dry run elsewhere: HARDWARE_SOURCES=sim
elif ldconfig -p 2>/dev/null | grep -q 'libdcgm\.so\.4' || [ -e /usr/lib/x86_64-linux-gnu/libdcgm.so.4 ] || [ -e /usr/lib64/libdcgm.so.4 ]; then
	sources+=(dcgm)
else
	echo "libdcgm.so.4 not installed: the DCGM source is not checked"
fi

status=pass
results=()
pid=
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

for src in "${sources[@]}"; do
	echo "== --source=$src"
	doctor_rc=0
	"$bin" doctor --source="$src" --kubernetes.enabled=false --log.level=warn --output=json >"$dir/doctor-$src.json" 2>"$dir/doctor-$src.log" || doctor_rc=$?
	"$bin" doctor --source="$src" --kubernetes.enabled=false --log.level=error || true
	[ "$doctor_rc" -eq 0 ] || status=fail

	"$bin" --source="$src" --web.listen-address="127.0.0.1:$port" --collect.interval="${interval}s" \
		--kubernetes.enabled=false >"$dir/exporter-$src.log" 2>&1 &
	pid=$!
	ready=0
	for _ in $(seq 1 120); do
		if fetch "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then ready=1; break; fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	compare_rc=1
	if [ "$ready" -eq 1 ]; then
		# A few collection intervals, so that rates and averages have data.
		sleep "$((3 * interval))"
		fetch "http://127.0.0.1:$port/metrics" >"$dir/metrics-$src.txt"
		nvidia-smi -q -x >"$dir/nvidia-smi-$src.xml"
		compare_rc=0
		"${compare[@]}" -smi "$dir/nvidia-smi-$src.xml" -metrics "$dir/metrics-$src.txt" -report "$dir/compare-$src.json" -source "$src" || compare_rc=$?
	else
		echo "the exporter with --source=$src did not become ready: see $dir/exporter-$src.log" >&2
		tail -n 20 "$dir/exporter-$src.log" >&2 || true
	fi
	cleanup
	pid=
	[ "$compare_rc" -eq 0 ] || status=fail
	results+=("\"$src\":{\"doctor_exit\":$doctor_rc,\"ready\":$([ "$ready" -eq 1 ] && echo true || echo false),\"compare_exit\":$compare_rc}")
done

gpus=$(grep -c '^GPU ' "$dir/nvidia-smi-L.txt")
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)
model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)
printf '{"status":"%s","gpus":%s,"model":"%s","driver_version":"%s","sources":{%s}}\n' \
	"$status" "$gpus" "$model" "$driver" "$(IFS=,; echo "${results[*]}")" >"$summary"
echo "hardware check: $status (report: $summary)"
[ "$status" = pass ]
