package costmodel

import (
	"testing"

	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/units"
)

// NCCL's tuning model by hand (src/graph/tuning.cc at 01afd20a: baseLat, hwLat, the protocols'
// bandwidth shares) for an all-reduce over the 8 GPUs of a DGX-A100 (bus bandwidth 300 GB/s x
// 0.767): LL is fastest for small messages, LL128 in the middle, Simple for large ones, and the
// time is the chosen protocol's latency plus bytes over its bandwidth.
func TestNCCLProtocolsBySize(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	cases := []struct {
		n     units.Bytes
		proto string
		want  float64 // seconds, computed by hand from tuning.cc's figures
	}{
		// LL: 3.6 us + 14 x 0.47 us + 4 x 1.75 n / 230.1 GB/s
		{64 << 10, "LL", 1.2173707e-05},
		// LL128: 10 us + 14 x 1.9 us + 1.75 n / (0.92 x 230.1 GB/s)
		{8 << 20, "LL128", 1.0594633e-04},
		// Simple: 8.4 us + 14 x 3.4 us + 1.75 n / 230.1 GB/s
		{256 << 20, "Simple", 2.0975561e-03},
	}
	for _, c := range cases {
		got := CollectiveTime(hw, program.OpAllReduce, 8, 1, c.n)
		if p := CollectiveProtocol(hw, program.OpAllReduce, 8, 1, c.n); p != c.proto {
			t.Errorf("all-reduce of %v: protocol %s, want %s", c.n, p, c.proto)
		}
		if !near(float64(got), c.want, 1e-6) {
			t.Errorf("all-reduce of %v: %.8g s, want %.8g", c.n, float64(got), c.want)
		}
	}
}

// An all-gather over 2 DGX-A100 nodes (16 ranks, 8 per node) is priced as itself: 15 ring steps,
// one of them across nodes, the bytes inside the node at NVLink's bus bandwidth and 1/8 of them
// across at each GPU's NIC. Simple: 8.4 us + 14 x 3.4 us + 1 x 9.6 us + 7/8 n / 230.1 GB/s +
// 1/2 (n/8) / 24 GB/s.
func TestNCCLAllGatherAcrossNodes(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	n := units.Bytes(64 << 20)
	got := CollectiveTime(hw, program.OpAllGather, 16, 1, n)
	if want := 4.9555717e-04; !near(float64(got), want, 1e-6) {
		t.Errorf("all-gather: %.8g s, want %.8g", float64(got), want)
	}
	// The reduce-scatter of the same tensor moves the same bytes in the same steps; an all-reduce
	// (reduce-scatter then all-gather) takes about twice as long, not the same.
	rs := CollectiveTime(hw, program.OpReduceScatter, 16, 1, n)
	ar := CollectiveTime(hw, program.OpAllReduce, 16, 1, n)
	if rs != got || !(float64(ar) > 1.8*float64(got)) {
		t.Errorf("reduce-scatter %v, all-gather %v, all-reduce %v", rs, got, ar)
	}
}

// The bus bandwidth a collective gets grows with its size towards the level's large-message
// figure (nccl-tests' busbw curves, collectives.json): latency dominates small messages.
func TestNCCLBusBandwidthGrowsWithSize(t *testing.T) {
	hw := loadHW(t, "h100-sxm")
	prev := 0.0
	for n := units.Bytes(1 << 10); n <= 1<<32; n *= 4 {
		tm := float64(CollectiveTime(hw, program.OpAllReduce, 8, 1, n))
		busbw := 2 * 7.0 / 8 * float64(n) / tm
		if busbw < prev {
			t.Errorf("bus bandwidth falls from %.4g to %.4g at %v", prev, busbw, n)
		}
		prev = busbw
	}
	l := hw.Levels[0]
	if peak := float64(l.Bandwidth) * l.Efficiency; !(prev > 0.97*peak && prev <= peak) {
		t.Errorf("4 GiB all-reduce bus bandwidth %.4g, want just under the level's %.4g", prev, peak)
	}
}

// A pipeline send between DGX-A100 nodes (tp=8 fills a node, so the stages meet over InfiniBand
// at 25 GB/s x 0.96): without sequence parallelism each of the 8 tensor-parallel ranks holds the
// whole activation and sends 1/8 of it, then the 8 pieces are all-gathered over NVLink
// (Narayanan et al. 2021 §4.1); with sequence parallelism, or tp=1, the rank's n crosses whole.
func TestPipelineSendScatterGather(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	const n = units.Bytes(100 << 20)
	ib := hw.Levels[1]
	link := func(b units.Bytes) float64 {
		return float64(ib.Latency) + float64(b)/(float64(ib.Bandwidth)*ib.Efficiency)
	}
	for _, c := range []struct {
		s    string
		want float64
	}{
		{"tp=8,pp=2,mbs=1,gbs=8", link(n/8) + float64(CollectiveTime(hw, program.OpAllGather, 8, 1, n))},
		{"tp=8,pp=2,mbs=1,gbs=8,sp=on", link(n)},
		{"dp=8,pp=2,mbs=1,gbs=8", link(n)},
	} {
		got := float64(PipelineSendTime(hw, mustParse(t, c.s), n))
		if !near(got, c.want, 1e-9) {
			t.Errorf("%s: send of %v takes %.6g s, want %.6g", c.s, n, got, c.want)
		}
	}
	// By hand: 12.5 MiB over IB is 2.7 us + 13107200 / 24e9 = 548.8 us; the NVLink all-gather of
	// 100 MiB, Simple, is 8.4 us + 7 x 3.4 us + 7/8 x 104857600 / 230.1e9 = 431 us: 0.98 ms, where
	// the whole 100 MiB over IB would be 4.37 ms.
	if got := float64(PipelineSendTime(hw, mustParse(t, "tp=8,pp=2,mbs=1,gbs=8"), n)); !near(got, 0.98e-3, 0.01) {
		t.Errorf("scatter/gather send of 100 MiB: %.4g s, want 0.98 ms", got)
	}
}
