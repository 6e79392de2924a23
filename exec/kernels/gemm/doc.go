// Package gemm is a float32 general matrix multiply, C = alpha*op(A)*op(B) + beta*C on row-major
// matrices, near this CPU's fp32 peak in pure Go and Go assembly.
//
// # Algorithm
//
// It follows the BLIS layering (Van Zee and van de Geijn 2015, "BLIS: A Framework for Rapidly
// Instantiating BLAS Functionality", ACM TOMS 41(3), figure 2; Goto and van de Geijn 2008,
// "Anatomy of High-Performance Matrix Multiplication", ACM TOMS 34(3)): loops over NC columns
// of C, KC of the inner dimension (packing a KC×NC block of op(B) into NR-column panels), MC rows
// (packing an MC×KC block of op(A) into MR-row panels), then an MR×NR register-tile micro-kernel
// over the packed panels. Packing zero-pads the panels to whole tiles, so the micro-kernel always
// runs a full tile; tiles at the right and bottom edges are computed into a scratch tile and
// merged into C.
//
// On amd64 with AVX2 and FMA (detected with CPUID at start-up; build tag purego disables the
// assembly), the micro-kernel is a 6×16 tile in Go assembly: twelve 8-wide ymm accumulators, two
// loads of B and six broadcasts of A per k step, as BLIS's Haswell/Zen sgemm kernel
// (kernels/haswell/3/bli_gemm_haswell_asm_d6x16.c, "s6x16"). Full panels are packed in assembly
// too (row copies, and 8×8 transposes where the operand is stored across the panel's order):
// packed in Go, one copy call per 24- or 64-byte row, packing took 14% of a 1024³ product (CPU
// profile); in assembly the products run 1.01x to 1.17x faster (BenchmarkPacking, one thread, the
// shapes of BenchmarkSgemm). Elsewhere a portable Go kernel runs the same blocked
// algorithm.
//
// Where the CPU also has AVX-512F (and the OS saves zmm state), the same 6×16 tile runs on zmm
// registers (kernel6x16z): a tile row is one 16-wide register, a k step one load of B and six FMAs
// with A broadcast from memory, and even and odd k steps go to two sets of six accumulators so
// that twelve chains cover the FMA latency, as in the ymm kernel. It reads the same packed panels,
// so packing, blocking and threads are shared; two adjacent full tiles go to one call
// (kernel6x32z: both B rows loaded, each A value broadcast once for two FMAs, so A is read once for
// 32 columns; 1.03-1.13x, BenchmarkWideTiles). On a 2-core Intel Xeon VM (family 6 model 207) it
// runs 121-133 GFLOP/s a core on squares 512-2048 (one tile a call) against the AVX2 kernel's
// 82-83 (BenchmarkSgemm, gemm and gemm_avx2 side by side; FMA peaks measured in the same run 174.9
// and 94.7: docs/benchmarks/2026-12-03-xeon.md).
//
// Where the CPU has AVX-512F the default tile is 24×16 (kernel24x16z), after the m16n24 tile of
// OpenBLAS's SkylakeX sgemm kernel (kernel/x86_64/sgemm_kernel_16x4_skylakex_3.c; C's row-major
// layout swaps its roles of A and B): 24 accumulators; a k step loads the B row twice, its even
// values duplicated into one register and its odd ones into another (VMOVSLDUP, VMOVSHDUP), and
// broadcasts each pair of adjacent A rows as one 64-bit value, so that one broadcast serves two
// FMAs and a k step is 14 loads for 24 FMAs (the 6×32 pair: 8 for 12); the store untangles the
// interleaved rows with four unpacks a pair. It reads four consecutive 6-row A panels, so the
// packing is unchanged. Its loop order is Goto and van de Geijn's (macroTall): a block of nbTall
// columns of packed B (half of L2: 1024 columns at KC with 2 MiB) stays in L2 while each row of
// tiles keeps its A panels in L1 and the B panels stream past, where the 6×32 pairs kept a 32 KiB
// B pair in L1 and streamed the A panels from L2; where C has several such column blocks, op(A)
// is packed once a KC step and shared by them. On the Intel Xeon VM (family 6 model 207), one
// KC step's sweep of packed operands ran at 0.99-1.01x of OpenBLAS 0.3.21's own SkylakeX kernel
// (called on its packed buffers, median of 25 interleaved runs), against 0.86-0.89x for the 6×32
// pairs; whole products ran 0.99-1.17x as fast as with the pairs on one core (squares 256-2048
// 0.99-1.14x, the MLP's three products 1.01-1.17x) and 0.99-1.27x on two (BenchmarkTallTiles, two
// runs), and at 0.94-1.10x of
// OpenBLAS's (BenchmarkVsOpenBLAS, build tag openblas: OpenBLAS's cblas_sgemm in the same
// process, alternating with this package's; 0.81-0.99x with the pairs).
//
// Block sizes are BLIS's for AMD Zen 3 (config/zen3/bli_cntx_init_zen3.c, sgemm: MR=6, NR=16,
// MC=144, KC=256, NC=4080): a KC×NR panel of B is 16 KiB and stays in the 32 KiB L1d, an MC×KC
// block of A is 144 KiB and stays in the 512 KiB L2. Two depend on the CPU's caches, read with
// CPUID (package cpufeat): MC is 288 where a core has at least 2 MiB of L2, and C is copied to a
// padded stride (stageC) only where the L1d has at most 8 ways. A width of C up to 1.25 NC is one
// column block, not NC columns and a sliver.
//
// # Threads
//
// Products of at least ParallelMACs multiply-adds are split over MC-row blocks of C (and the
// packing of B over its panels) among up to Threads() goroutines, which pull blocks from a shared
// counter; smaller products run on the calling goroutine. The helpers start once a product and go
// through its KC steps' phases (pack B, multiply) with the caller, each phase starting once the one
// before has finished (runPhases). A product only takes cores that no other product holds: every
// product of at least 32K multiply-adds counts its caller as a busy core, helpers start only while
// fewer than GOMAXPROCS are busy, and a helper stops taking blocks once more are (another rank
// started a product), so ranks multiplying at once share the cores instead of oversubscribing them;
// once two callers' products have overlapped, helpers stay off for 100 ms, so ranks in lockstep
// (dp, tp) run each product on its own goroutine. SetThreads caps the goroutines per product; a
// caller that knows how many cores its ranks leave free (exec: GOMAXPROCS/ranks) may set it.
package gemm
