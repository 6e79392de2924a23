//go:build race

package cpufeat

// Race is true in a -race build. The assembly kernels are then left out (their memory accesses are
// invisible to the race detector), so that the detector checks every access of the Go code that
// runs instead.
const Race = true
