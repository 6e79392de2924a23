//go:build !race

package gemm

// raceEnabled is whether the race detector is on (see asmPacking).
const raceEnabled = false
