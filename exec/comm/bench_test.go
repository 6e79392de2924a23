package comm

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tpsim/tpsim/exec/kernels"
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

// BenchmarkRing64MiB measures the all-reduce at p=2 on 64 MiB per rank beside the memory ceiling
// it is held to: copy (a plain copy of the 64 MiB on one goroutine, what moving the data once
// costs) and add (dst += src over 64 MiB, a plain in-memory reduce), each reporting busbw_GB/s
// and frac_copy, its GB/s (busbw for the all-reduce, timed without the paired copies below) over
// copy's. On a shared machine the load
// changes between sub-benchmarks, so allreduce_p2 also times a copy of the same 64 MiB on rank 0
// before every all-reduce (rank 1 waits at a one-element all-reduce meanwhile) and reports
// frac_copy_paired, the median over iterations of the all-reduce's busbw over that copy's
// bandwidth, and frac_copy_best, its best busbw over the best of those copies. The two ranks of
// the all-reduce share the memory: each reads and writes its half of both buffers once (2n
// elements of traffic per rank, a copy's), so where one core alone can use most of the memory's
// bandwidth the ranks' all-reduce cannot match a lone copy. frac_copy_both is the median of the
// all-reduce's busbw over that of both ranks copying their own 64 MiB at once, timed between two
// barriers just before it: the same traffic on the same two cores.
//
//	go test -run '^$' -bench Ring64MiB -benchtime 10x ./exec/comm
func BenchmarkRing64MiB(b *testing.B) {
	const n = 16 << 20 // 64 MiB of float32
	const bytes = 4 * n
	var copyBW float64
	report := func(b *testing.B, busFactor float64, elapsed time.Duration) {
		algbw := float64(bytes) * float64(b.N) / elapsed.Seconds() / 1e9
		b.ReportMetric(algbw*busFactor, "busbw_GB/s")
		if copyBW == 0 {
			copyBW = algbw
		} else {
			b.ReportMetric(algbw*busFactor/copyBW, "frac_copy")
		}
	}
	src, dst := randData(0, n), randData(1, n)
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(bytes)
		for b.Loop() {
			copy(dst, src)
		}
		report(b, 1, b.Elapsed())
	})
	b.Run("add", func(b *testing.B) {
		b.SetBytes(bytes)
		for b.Loop() {
			kernels.AddInPlace(dst, src)
		}
		report(b, 1, b.Elapsed())
	})
	b.Run("allreduce_p2", func(b *testing.B) {
		w, err := NewWorld([]Dim{{"dp", 2}})
		if err != nil {
			b.Fatal(err)
		}
		bufs := [][]float32{src, dst}
		cps := [][]float32{randData(2, n), randData(3, n)}
		var fracs, fracsBoth []float64
		bestAR, bestCopy := time.Duration(1<<62), time.Duration(1<<62)
		b.SetBytes(bytes)
		b.ResetTimer()
		var arTime time.Duration
		err = w.Run(context.Background(), func(c *Comm) error {
			g := group(c, "dp")
			barrier := make([]float32, 1)
			for range b.N {
				var tc time.Duration
				if c.Rank() == 0 {
					t0 := time.Now()
					copy(cps[0], src)
					tc = time.Since(t0)
				}
				if err := g.AllReduce(barrier); err != nil {
					return err
				}
				t0 := time.Now()
				copy(cps[c.Rank()], bufs[c.Rank()])
				if err := g.AllReduce(barrier); err != nil {
					return err
				}
				tb := time.Since(t0)
				if err := g.AllReduce(barrier); err != nil {
					return err
				}
				t0 = time.Now()
				if err := g.AllReduce(bufs[c.Rank()]); err != nil {
					return err
				}
				if c.Rank() == 0 {
					ta := time.Since(t0)
					arTime += ta
					bestAR, bestCopy = min(bestAR, ta), min(bestCopy, tc)
					fracs = append(fracs, tc.Seconds()/ta.Seconds()) // busbw = algbw at p=2
					fracsBoth = append(fracsBoth, tb.Seconds()/ta.Seconds())
				}
			}
			return nil
		})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		report(b, 2*(2-1)/2.0, arTime) // the all-reduces alone, not the paired copies and barriers
		slices.Sort(fracs)
		b.ReportMetric(fracs[len(fracs)/2], "frac_copy_paired")
		slices.Sort(fracsBoth)
		b.ReportMetric(fracsBoth[len(fracsBoth)/2], "frac_copy_both")
		b.ReportMetric(bestCopy.Seconds()/bestAR.Seconds(), "frac_copy_best")
	})
}
