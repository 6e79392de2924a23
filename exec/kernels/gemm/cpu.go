package gemm

import "github.com/tpsim/tpsim/exec/kernels/internal/cpufeat"

// useAsm selects the assembly kernels (amd64 with AVX2 and FMA, not under -race: see
// cpufeat.Race); tests clear it to run the Go ones.
var useAsm = cpufeat.AVX2FMA && !cpufeat.Race
