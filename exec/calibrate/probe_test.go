package calibrate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"tpsim/exec/comm"
	"tpsim/exec/kernels"
)

func timeit(f func()) time.Duration {
	f()
	n := 1
	for {
		t := time.Now()
		for range n {
			f()
		}
		d := time.Since(t)
		if d > 50*time.Millisecond {
			return d / time.Duration(n)
		}
		n *= 2
	}
}

func TestProbe(t *testing.T) {
	for _, s := range [][3]int{{10, 100, 1000}, {10, 1000, 10}, {1000, 10, 100}, {256, 64, 192}, {256, 64, 64}, {256, 256, 64}, {256, 64, 256}, {32, 16, 32}, {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}} {
		m, k, n := s[0], s[1], s[2]
		a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
		d := timeit(func() { kernels.MatMul(c, a, b, m, k, n, false, false, 1, 0) })
		f := 2 * float64(m*k*n)
		fmt.Printf("gemm %v %v %.2f GFLOP/s\n", s, d, f/d.Seconds()/1e9)
	}
	for _, n := range []int{1 << 10, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 23} {
		a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
		d := timeit(func() { kernels.Add(c, a, b) })
		d2 := timeit(func() { kernels.GELU(c, a) })
		d3 := timeit(func() { _ = make([]float32, n) })
		d4 := timeit(func() { kernels.ReLU(c, a) })
		fmt.Printf("add n=%d %v %.2f GB/s gelu %v relu %v %.2f GB/s make %v\n", n, d, 12*float64(n)/d.Seconds()/1e9, d2, d4, 8*float64(n)/d4.Seconds()/1e9, d3)
	}
	for _, p := range []int{2, 4, 8} {
		w, _ := comm.NewWorld([]comm.Dim{{Name: "tp", Size: p}})
		for _, n := range []int{1, 1 << 10, 1 << 16, 1 << 20, 1 << 23} {
			reps := 20
			if n >= 1<<20 {
				reps = 3
			}
			var el time.Duration
			w.Run(context.Background(), func(c *comm.Comm) error {
				g := c.WorldGroup()
				buf := make([]float32, n)
				g.AllReduce(buf)
				t0 := time.Now()
				for range reps {
					g.AllReduce(buf)
				}
				if c.Rank() == 0 {
					el = time.Since(t0) / time.Duration(reps)
				}
				return nil
			})
			fmt.Printf("allreduce p=%d n=%d bytes: %v\n", p, 4*n, el)
		}
	}
}
