package kernels_test

import (
	"fmt"

	"github.com/tpsim/tpsim/exec/kernels"
)

// A Linear(3, 2) layer on one row, its cross-entropy loss against class 1, and the gradients.
func Example() {
	x := []float32{1, 2, 3}          // [1, 3]
	w := []float32{1, 0, 0, 0, 1, 0} // [2, 3]: y = (x0, x1)
	b := []float32{0.5, -0.5}        // [2]
	y := make([]float32, 2)          // [1, 2]
	kernels.LinearForward(y, x, w, b, 1, 3, 2)
	fmt.Println("y =", y)

	dy := make([]float32, 2)
	loss := kernels.CrossEntropy(dy, y, []int32{1}, 1, 2) // logits equal: ln 2
	fmt.Printf("loss = %.4f, dy = %v\n", loss, dy)

	dx, dw, db := make([]float32, 3), make([]float32, 6), make([]float32, 2)
	kernels.LinearBackward(dx, dw, db, dy, x, w, 1, 3, 2, true) // accumulate into dw and db
	fmt.Println("dx =", dx, "dw =", dw, "db =", db)
	// Output:
	// y = [1.5 1.5]
	// loss = 0.6931, dy = [0.5 -0.5]
	// dx = [0.5 -0.5 0] dw = [0.5 1 1.5 -0.5 -1 -1.5] db = [0.5 -0.5]
}

// With uniform logits every class has probability 1/V, so the loss is ln V.
func ExampleCrossEntropy() {
	logits := make([]float32, 2*256) // two rows, vocabulary 256, all zero
	loss := kernels.CrossEntropy(nil, logits, []int32{7, 200}, 2, 256)
	fmt.Printf("%.5f\n", loss) // ln 256 = 5.54518
	// Output: 5.54518
}
