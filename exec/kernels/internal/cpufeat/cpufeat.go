// Package cpufeat reports the CPU features the assembly kernels of package kernels and package
// gemm need, from CPUID on amd64 (false elsewhere and with build tag purego).
package cpufeat

// AVX2FMA is true where the CPU has AVX2 and FMA3 and the OS saves ymm state, so that the AVX2
// kernels may run. Tests may set it to false to run the portable Go code instead.
var AVX2FMA = hasAVX2FMA()
