// Package cpufeat reports the CPU features the assembly kernels of package kernels and package
// gemm need, from CPUID on amd64 (false elsewhere and with build tag purego).
package cpufeat

// AVX2FMA is true where the CPU has AVX2 and FMA3 and the OS saves ymm state, so that the AVX2
// kernels may run. Tests may set it to false to run the portable Go code instead.
var AVX2FMA = hasAVX2FMA()

// AVX512F is true where, beyond AVX2FMA, the CPU has AVX-512 Foundation and the OS saves zmm and
// opmask state, so that gemm's AVX-512 micro-kernels and the AVX-512 exponential kernels of
// package kernels may run (both use AVX-512F instructions alone).
var AVX512F = hasAVX512F()

// L1DWays is the associativity of the level-1 data cache (8 on AMD Zen 3, 12 on Intel Golden
// Cove), 0 where CPUID does not say. gemm's choice to copy C to a padded stride depends on it.
var L1DWays = l1dWays()

// L2Bytes is the size of one core's level-2 cache (512 KiB on AMD Zen 3, 2 MiB on Intel Golden
// Cove), 0 where CPUID does not say. gemm sizes its blocks of A by it.
var L2Bytes = l2Bytes()
