#!/usr/bin/env bash
# Step time of `tpsim exec` against PyTorch on the CPU (scripts/peers/torch_ref.py) on the same
# MLPs, SGD and MSE, run one after the other here:
#   seed-mlp  100 -> 1000 -> 10, batch 10 (the tensor-parallel tutorial's; latency-bound)
#   mlp-big   1024 -> 4096 -> 1024, batch 512 (tpsim --model mlp:1024,4096,1024 --batch 512; GEMM-bound)
# for single, dp=2 and tp=2 (fc1 column-parallel, fc2 row-parallel in both).
#
# Threads are pinned, because torch.set_num_threads does not limit Debian's OpenBLAS (it still runs
# 2 threads): OPENBLAS_NUM_THREADS and OMP_NUM_THREADS for PyTorch, GOMAXPROCS for tpsim.
#   per_core     every rank gets one core: 1 thread per process for PyTorch, GOMAXPROCS = ranks
#                for tpsim (its GEMM then runs on its rank's goroutine).
#   per_machine  a single process gets both cores (2 BLAS threads, GOMAXPROCS=2); with 2 ranks the
#                machine is already one core per rank, so dp and tp run as per_core.
# Each configuration runs REPEAT pairs of whole processes and prints the medians of both step
# times (ms) and the min/median/max over pairs of the ratio tpsim/torch. The order within a pair
# alternates (tpsim first, then PyTorch first), so that load from other processes that rises or
# falls during a configuration does not favour the one that always runs second. On a machine
# shared with other work the ratio of one pair can be off by 2x either way (another process takes
# a core from one rank of tp=2, and the other waits for it in every collective); the median over
# pairs is the figure to read, and REPEAT=5 or more makes it steady.
#
# Needs Debian's PyTorch with OpenBLAS: apt-get install -y python3-torch libopenblas0-pthread (run
# with /usr/bin/python3). Without libopenblas0-pthread, torch falls back to the reference BLAS
# (libblas3), some 40x slower at these shapes.
set -euo pipefail
cd "$(dirname "$0")/../.."
ref=${TORCH_REF:-scripts/peers/torch_ref.py} # the PyTorch peer, shipped with the repository
if [ ! -f "$ref" ]; then
	echo "vs_torch.sh: $ref not found; set TORCH_REF to a copy of torch_ref.py" >&2
	exit 2
fi
py=${PYTHON:-/usr/bin/python3}
repeat=${REPEAT:-5}
models=${MODELS:-"seed mlp-big"}
go build -o /tmp/tpsim-vs-torch ./cmd/tpsim

# OpenBLAS picks its kernels by CPUID and falls back to the SSE3 "Prescott" ones on a CPU newer than
# its tables: Debian 12's 0.3.21 does so on Intel family 6 model 207 (Emerald Rapids), where PyTorch's
# 1024³ product then runs at ~30 GFLOP/s against 72 (Haswell, AVX2) or 124-138 (SkylakeX/Cooperlake,
# AVX-512). Beating a mis-detected peer proves nothing, so where OpenBLAS reports a pre-AVX2 core on
# a CPU with AVX2 this script sets OPENBLAS_CORETYPE to the best kernel set the CPU runs (SkylakeX
# with AVX-512, else Haswell); set OPENBLAS_CORETYPE yourself to choose (tpsim runs its AVX-512
# kernel wherever the CPU has AVX-512, so Haswell is like for like only on a CPU without it).
openblas_core() {
	OPENBLAS_VERBOSE=2 OPENBLAS_NUM_THREADS=1 "$py" -c 'import torch; torch.ones(8, 8) @ torch.ones(8, 8)' 2>&1 |
		sed -n 's/^Core: //p' | head -1
}
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
	case $(openblas_core) in
	Prescott | Core2 | Penryn | Dunnington | Nehalem | Atom | "")
		if grep -qw avx512f /proc/cpuinfo; then
			export OPENBLAS_CORETYPE=SkylakeX
		elif grep -qw avx2 /proc/cpuinfo; then
			export OPENBLAS_CORETYPE=Haswell
		fi
		;;
	esac
fi
echo "PyTorch's OpenBLAS kernels: $(openblas_core)${OPENBLAS_CORETYPE:+ (OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE)}"

# model name -> tpsim --model/--batch, torch_ref shape flags, steps, warm-up steps.
model_args() {
	case $1 in
	seed) echo "seed-mlp|10|--inp 100 --hidden 1000 --out 10 --batch 10|${STEPS:-200}|20" ;;
	mlp-big) echo "mlp:1024,4096,1024|512|--inp 1024 --hidden 4096 --out 1024 --batch 512|${STEPS_BIG:-10}|2" ;;
	*) echo "unknown model $1" >&2; exit 2 ;;
	esac
}

stats() { # ratios... -> "min median max"
	"$py" -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print("%.2f %.2f %.2f" % (min(v), statistics.median(v), max(v)))' "$@"
}
median() {
	"$py" -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"
}

printf "%-8s %-8s %-11s %5s %10s %10s %20s\n" model strategy threads ranks tpsim_ms torch_ms "ratio min/med/max"
for name in $models; do
	IFS='|' read -r tmodel batch tshape steps warm <<<"$(model_args "$name")"
	for cfg in "single 1 dp=1 per_core" "single 1 dp=1 per_machine" "dp 2 dp=2 per_core" "tp 2 tp=2 per_core"; do
		set -- $cfg
		strategy=$1 ranks=$2 mesh=$3 mode=$4
		if [ "$mode" = per_core ]; then blas=1 procs=$ranks; else blas=2 procs=2; fi
		tts=() pts=() ratios=()
		run_tpsim() {
			# tpsim's first step is its warm-up; give it as many as torch's.
			GOMAXPROCS=$procs /tmp/tpsim-vs-torch exec --model "$tmodel" --batch "$batch" --mesh "$mesh" \
				--plan "0=colwise,2=rowwise" --steps $((steps + 1)) --json 2>/dev/null |
				"$py" -c 'import json,sys; print(json.load(sys.stdin)["time_s"]["step"])'
		}
		run_torch() {
			OPENBLAS_NUM_THREADS=$blas OMP_NUM_THREADS=$blas "$py" "$ref" --strategy "$strategy" --world "$ranks" \
				$tshape --threads "$blas" --steps "$steps" --warmup "$warm" | tail -1 |
				"$py" -c 'import json,sys; print(json.load(sys.stdin)["step_s_median"])'
		}
		for i in $(seq "$repeat"); do
			if [ $((i % 2)) = 1 ]; then
				t=$(run_tpsim) p=$(run_torch)
			else
				p=$(run_torch) t=$(run_tpsim)
			fi
			tts+=("$t") pts+=("$p") ratios+=("$("$py" -c "print($t/$p)")")
		done
		read -r lo mid hi <<<"$(stats "${ratios[@]}")"
		printf "%-8s %-8s %-11s %5s %10.3f %10.3f %20s\n" "$name" "$strategy" "$mode" "$ranks" \
			"$("$py" -c "print($(median "${tts[@]}")*1e3)")" "$("$py" -c "print($(median "${pts[@]}")*1e3)")" "$lo/$mid/$hi"
	done
done
