package comm_test

import (
	"context"
	"fmt"

	"github.com/tpsim/tpsim/exec/comm"
)

// Each rank of a dp=2,tp=2 mesh all-reduces a two-element buffer over its tp group: ranks {0,1}
// and {2,3}. Rank 0 sends 2(p-1)/p * 8 = 8 bytes.
func Example() {
	w, err := comm.NewWorld([]comm.Dim{{Name: "dp", Size: 2}, {Name: "tp", Size: 2}})
	if err != nil {
		panic(err)
	}
	out := make([][]float32, w.Size())
	err = w.Run(context.Background(), func(c *comm.Comm) error {
		tp, err := c.Group("tp")
		if err != nil {
			return err
		}
		buf := []float32{float32(c.Rank()), 1}
		if err := tp.AllReduce(buf); err != nil {
			return err
		}
		out[c.Rank()] = buf
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	fmt.Print(w.Comm(0).Stats())
	// Output:
	// [[1 2] [1 2] [5 2] [5 2]]
	// tp all_reduce: 1 calls, 2 messages, 8 B
}

// A rank that panics does not hang the others: the all-reduce waiting for it fails and says why.
func ExampleWorld_Run_failure() {
	w, err := comm.NewWorld([]comm.Dim{{Name: "tp", Size: 2}})
	if err != nil {
		panic(err)
	}
	err = w.Run(context.Background(), func(c *comm.Comm) error {
		if c.Rank() == 1 {
			panic("boom")
		}
		return c.WorldGroup().AllReduce(make([]float32, 4))
	})
	fmt.Println(err)
	// Output:
	// rank 1 panicked: boom
	// rank 0: comm: all_reduce on world group [0 1]: rank 1 did not arrive (it failed: rank 1 panicked: boom)
}
