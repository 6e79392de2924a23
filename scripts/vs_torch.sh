#!/usr/bin/env bash
# Step time of `tpsim exec` against PyTorch on the CPU (../shared/peers/torch_ref.py) on the same
# MLP shapes (seed-mlp: 100 -> 1000 -> 10, batch 10, SGD, MSE), run one after the other here.
# Needs Debian's PyTorch: apt-get install -y python3-torch (run with /usr/bin/python3).
# Prints one line per strategy: both medians and tpsim's time as a fraction of PyTorch's.
set -euo pipefail
cd "$(dirname "$0")/.."
ref=${TORCH_REF:-../shared/peers/torch_ref.py}
py=${PYTHON:-/usr/bin/python3}
steps=${STEPS:-200}
go build -o /tmp/tpsim-vs-torch ./cmd/tpsim
printf "%-8s %-6s %12s %12s %8s\n" strategy ranks tpsim_ms torch_ms ratio
for s in "single 1 dp=1" "dp 2 dp=2" "tp 2 tp=2"; do
	set -- $s
	t=$(/tmp/tpsim-vs-torch exec --model seed-mlp --mesh "$3" --plan "0=colwise,2=rowwise" --steps "$steps" --json 2>/dev/null |
		"$py" -c 'import json,sys; print(json.load(sys.stdin)["time_s"]["step"])')
	p=$("$py" "$ref" --strategy "$1" --world "$2" --steps "$steps" --warmup 20 | tail -1 |
		"$py" -c 'import json,sys; print(json.load(sys.stdin)["step_s_median"])')
	"$py" -c "print('%-8s %-6s %12.3f %12.3f %8.2f' % ('$1', '$2', $t*1e3, $p*1e3, $t/$p))"
done
