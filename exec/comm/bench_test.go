package comm

import (
	"context"
	"testing"
)

// The benchmarks run each collective on 4 goroutine ranks with 4 MiB of float32 per rank, beside
// BenchmarkCopy of the same bytes, so that
//
//	go test -run '^$' -bench . ./exec/comm
//
// shows the communicator's bandwidth next to a plain memory copy. Metrics follow nccl-tests
// (doc/PERFORMANCE.md of NVIDIA/nccl-tests): algbw = S/t for the buffer size S (the full n*4 bytes
// for all-gather and reduce-scatter), and busbw = algbw*2(p-1)/p for all-reduce, algbw*(p-1)/p for
// all-gather, reduce-scatter and all-to-all, algbw for broadcast and send/recv.

const (
	benchRanks = 4
	benchElems = 1 << 20 // 4 MiB of float32
	benchBytes = 4 * benchElems
)

func benchCollective(b *testing.B, busFactor float64, fn func(g *Group, full, shard []float32) error) {
	w, err := NewWorld([]Dim{{"tp", benchRanks}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchBytes)
	b.ReportAllocs()
	b.ResetTimer()
	err = w.Run(context.Background(), func(c *Comm) error {
		g := group(c, "tp")
		full := randData(c.Rank(), benchElems)
		lo, hi := ChunkBounds(benchElems, benchRanks, g.Index())
		shard := make([]float32, hi-lo)
		for range b.N {
			if err := fn(g, full, shard); err != nil {
				return err
			}
		}
		return nil
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	reportBW(b, busFactor)
}

func reportBW(b *testing.B, busFactor float64) {
	algbw := float64(benchBytes) * float64(b.N) / b.Elapsed().Seconds() / 1e9
	b.ReportMetric(algbw, "algbw_GB/s")
	b.ReportMetric(algbw*busFactor, "busbw_GB/s")
}

const p = float64(benchRanks)

func BenchmarkAllReduce(b *testing.B) {
	benchCollective(b, 2*(p-1)/p, func(g *Group, full, _ []float32) error { return g.AllReduce(full) })
}

func BenchmarkReduceScatter(b *testing.B) {
	benchCollective(b, (p-1)/p, func(g *Group, full, shard []float32) error { return g.ReduceScatter(shard, full) })
}

func BenchmarkAllGather(b *testing.B) {
	benchCollective(b, (p-1)/p, func(g *Group, full, shard []float32) error { return g.AllGather(full, shard) })
}

func BenchmarkBroadcast(b *testing.B) {
	benchCollective(b, 1, func(g *Group, full, _ []float32) error { return g.Broadcast(full, 0) })
}

func BenchmarkAllToAll(b *testing.B) {
	benchCollective(b, (p-1)/p, func(g *Group, full, _ []float32) error { return g.AllToAll(full, full) })
}

// BenchmarkSendRecv sends 4 MiB from each even rank to the next odd rank.
func BenchmarkSendRecv(b *testing.B) {
	benchCollective(b, 1, func(g *Group, full, _ []float32) error {
		if i := g.Index(); i%2 == 0 {
			return g.Send(i+1, full)
		} else {
			return g.Recv(i-1, full)
		}
	})
}

// BenchmarkCopy copies the same 4 MiB with copy on one goroutine: the bandwidth a collective
// would reach if moving data cost one memory copy.
func BenchmarkCopy(b *testing.B) {
	src := randData(0, benchElems)
	dst := make([]float32, benchElems)
	b.SetBytes(benchBytes)
	b.ReportAllocs()
	for b.Loop() {
		copy(dst, src)
	}
	reportBW(b, 1)
}
