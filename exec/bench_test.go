package exec

import (
	"context"
	"testing"
	"time"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// BenchmarkPipelineBubble runs a 4-stage pipeline on 8 microbatches (one layer of a Llama-shaped
// model per stage, hidden 256: about 7 ms of compute, forward and backward, per microbatch and
// stage on this machine) and reports the bubble of the steps after the warm-up beside (p-1)/(m+p-1) = 3/11 (Narayanan
// et al. 2021 §2.2, GPipe and 1F1B alike), measured two ways: on the ranks' device clocks
// (Result.DeviceBubbleFraction: each rank's waits for an input its sender had not yet sent; with
// 4 ranks on 2 cores each op is timed by its thread's CPU time) and on the wall clock
// (Result.BubbleFraction: each rank's time in its receives, which with more ranks than cores
// includes the time a rank whose input had arrived waited for a core). The clocks2 case runs the
// 2-stage pipeline, a rank per core, timed by the CPU clock, beside its wall-clock bubble: where
// both clocks apply they should agree. It is a benchmark, not a test: the figures are timings.
//
//	go test -run - -bench PipelineBubble -benchtime 3x ./exec
func BenchmarkPipelineBubble(b *testing.B) {
	m, err := model.Transformer{Hidden: 256, Layers: 4, Heads: 4, KVHeads: 4, HeadDim: 64, FFN: 1024, Vocab: 64, Seq: 64,
		Gated: true, RMSNorm: true, Batch: 8}.Build("llama-bubble", "llama")
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name, strategy string
		cpuClock       bool
	}{
		{"gpipe", "pp=4,schedule=gpipe", false},
		{"1f1b", "pp=4,schedule=1f1b", false},
		{"clocks2", "pp=2,schedule=gpipe", true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			st, err := strategies.Parse(c.strategy + ",mbs=1,optimizer=sgd")
			if err != nil {
				b.Fatal(err)
			}
			defer func(v bool) { alwaysCPUClock = v }(alwaysCPUClock)
			alwaysCPUClock = c.cpuClock
			var wall, dev float64
			for i := 0; i < b.N; i++ {
				res, err := Run(context.Background(), Config{Model: m, Strategy: st.Resolve(m), Steps: 6, Warmup: 1, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				wall += res.BubbleFraction
				dev += res.DeviceBubbleFraction
			}
			pp := float64(st.Mesh.PP)
			b.ReportMetric(100*wall/float64(b.N), "wall_bubble_%")
			b.ReportMetric(100*dev/float64(b.N), "device_bubble_%")
			b.ReportMetric(100*(pp-1)/(8+pp-1), "theory_%")
		})
	}
}

// BenchmarkMailboxSendRecv is one pipeline send and its receive of 16 elements when the slot is
// free and the message there: the path every pipeline transfer takes when its peer is ready,
// which arms no timer (before the fast path it did: 4.2-8.3 us a pair against 1.6-2.1 us after,
// on 2 loaded cores, 2026-12-07).
//
//	go test -run - -bench MailboxSendRecv ./exec
func BenchmarkMailboxSendRecv(b *testing.B) {
	mb := &mailbox{timeout: time.Minute}
	buf, out := make([]float32, 16), make([]float32, 16)
	ctx := context.Background()
	k := p2pKey{from: 0, to: 1}
	for i := 0; i < b.N; i++ {
		if err := mb.send(ctx, k, buf, 0, 1); err != nil {
			b.Fatal(err)
		}
		if _, err := mb.recv(ctx, k, out, 0); err != nil {
			b.Fatal(err)
		}
	}
}
