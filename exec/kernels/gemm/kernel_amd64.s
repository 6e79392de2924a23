//go:build amd64 && !purego

#include "textflag.h"

// One k step of the 6x16 tile: B row in Y0, Y1 (16 floats at bo(DI)); each of the six A values
// at ao(SI) is broadcast into Y2 or Y3 and multiplied into accumulators Y4..Y15 (row r in
// Y(4+2r), Y(5+2r)). Go assembly operand order: VFMADD231PS x, y, acc is acc += y*x.
#define YSTEP(bo, ao) \
	VMOVUPS bo(DI), Y0; \
	VMOVUPS (bo+32)(DI), Y1; \
	VBROADCASTSS (ao+0)(SI), Y2; \
	VFMADD231PS Y0, Y2, Y4; \
	VFMADD231PS Y1, Y2, Y5; \
	VBROADCASTSS (ao+4)(SI), Y3; \
	VFMADD231PS Y0, Y3, Y6; \
	VFMADD231PS Y1, Y3, Y7; \
	VBROADCASTSS (ao+8)(SI), Y2; \
	VFMADD231PS Y0, Y2, Y8; \
	VFMADD231PS Y1, Y2, Y9; \
	VBROADCASTSS (ao+12)(SI), Y3; \
	VFMADD231PS Y0, Y3, Y10; \
	VFMADD231PS Y1, Y3, Y11; \
	VBROADCASTSS (ao+16)(SI), Y2; \
	VFMADD231PS Y0, Y2, Y12; \
	VFMADD231PS Y1, Y2, Y13; \
	VBROADCASTSS (ao+20)(SI), Y3; \
	VFMADD231PS Y0, Y3, Y14; \
	VFMADD231PS Y1, Y3, Y15

// func kernel6x16(k int, a, b, c *float32, ldc int, alpha, beta float32, accumulate int)
TEXT ·kernel6x16(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	// Prefetch the six rows of the C tile (64 bytes each, so two lines when unaligned); the
	// stores at the end then find them in L1.
	MOVQ DX, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	MOVQ CX, R9
	SHRQ $2, R9
	JZ tail

loop4:
	PREFETCHT0 384(SI)
	PREFETCHT0 512(DI)
	YSTEP(0, 0)
	YSTEP(64, 24)
	YSTEP(128, 48)
	YSTEP(192, 72)
	ADDQ $96, SI
	ADDQ $256, DI
	DECQ R9
	JNZ loop4

tail:
	ANDQ $3, CX
	JZ store

loop1:
	YSTEP(0, 0)
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JNZ loop1

store:
	VBROADCASTSS alpha+40(FP), Y0
	VMULPS Y0, Y4, Y4
	VMULPS Y0, Y5, Y5
	VMULPS Y0, Y6, Y6
	VMULPS Y0, Y7, Y7
	VMULPS Y0, Y8, Y8
	VMULPS Y0, Y9, Y9
	VMULPS Y0, Y10, Y10
	VMULPS Y0, Y11, Y11
	VMULPS Y0, Y12, Y12
	VMULPS Y0, Y13, Y13
	VMULPS Y0, Y14, Y14
	VMULPS Y0, Y15, Y15
	MOVQ accumulate+48(FP), AX
	TESTQ AX, AX
	JNZ accum
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y12, (DX)
	VMOVUPS Y13, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y14, (DX)
	VMOVUPS Y15, 32(DX)
	VZEROUPPER
	RET

accum:
	VBROADCASTSS beta+44(FP), Y1
	VMOVUPS (DX), Y2
	VMOVUPS 32(DX), Y3
	VFMADD231PS Y2, Y1, Y4
	VFMADD231PS Y3, Y1, Y5
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ R8, DX
	VMOVUPS (DX), Y2
	VMOVUPS 32(DX), Y3
	VFMADD231PS Y2, Y1, Y6
	VFMADD231PS Y3, Y1, Y7
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ R8, DX
	VMOVUPS (DX), Y2
	VMOVUPS 32(DX), Y3
	VFMADD231PS Y2, Y1, Y8
	VFMADD231PS Y3, Y1, Y9
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ R8, DX
	VMOVUPS (DX), Y2
	VMOVUPS 32(DX), Y3
	VFMADD231PS Y2, Y1, Y10
	VFMADD231PS Y3, Y1, Y11
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	ADDQ R8, DX
	VMOVUPS (DX), Y2
	VMOVUPS 32(DX), Y3
	VFMADD231PS Y2, Y1, Y12
	VFMADD231PS Y3, Y1, Y13
	VMOVUPS Y12, (DX)
	VMOVUPS Y13, 32(DX)
	ADDQ R8, DX
	VMOVUPS (DX), Y2
	VMOVUPS 32(DX), Y3
	VFMADD231PS Y2, Y1, Y14
	VFMADD231PS Y3, Y1, Y15
	VMOVUPS Y14, (DX)
	VMOVUPS Y15, 32(DX)
	VZEROUPPER
	RET

// TRANSPOSE8 transposes the 8x8 block of floats in rows Y0..Y7 into Y8..Y15 (row j of the result,
// Y(8+j), holds element j of every input row): unpack pairs, shuffle quads, permute 128-bit
// halves. It clobbers Y0..Y7.
#define TRANSPOSE8 \
	VUNPCKLPS Y1, Y0, Y8; \
	VUNPCKHPS Y1, Y0, Y9; \
	VUNPCKLPS Y3, Y2, Y10; \
	VUNPCKHPS Y3, Y2, Y11; \
	VUNPCKLPS Y5, Y4, Y12; \
	VUNPCKHPS Y5, Y4, Y13; \
	VUNPCKLPS Y7, Y6, Y14; \
	VUNPCKHPS Y7, Y6, Y15; \
	VSHUFPS $0x44, Y10, Y8, Y0; \
	VSHUFPS $0xEE, Y10, Y8, Y1; \
	VSHUFPS $0x44, Y11, Y9, Y2; \
	VSHUFPS $0xEE, Y11, Y9, Y3; \
	VSHUFPS $0x44, Y14, Y12, Y4; \
	VSHUFPS $0xEE, Y14, Y12, Y5; \
	VSHUFPS $0x44, Y15, Y13, Y6; \
	VSHUFPS $0xEE, Y15, Y13, Y7; \
	VPERM2F128 $0x20, Y4, Y0, Y8; \
	VPERM2F128 $0x20, Y5, Y1, Y9; \
	VPERM2F128 $0x20, Y6, Y2, Y10; \
	VPERM2F128 $0x20, Y7, Y3, Y11; \
	VPERM2F128 $0x31, Y4, Y0, Y12; \
	VPERM2F128 $0x31, Y5, Y1, Y13; \
	VPERM2F128 $0x31, Y6, Y2, Y14; \
	VPERM2F128 $0x31, Y7, Y3, Y15

// TBLOCK8 transposes the 8x8 block at src (rows src, src+R8, ..., src+7*R8; R9 = 3*R8) into
// dst, dst+64, ..., dst+448 (row l of the result, 32 bytes, at dst+64*l): the layout of 8 columns
// of a 16-column panel, for the panel's first 8 rows at dst or its last 8 at dst+32. It clobbers
// R10 and Y0..Y15.
#define TBLOCK8(src, dst) \
	LEAQ (src)(R8*4), R10; \
	VMOVUPS (src), Y0; \
	VMOVUPS (src)(R8*1), Y1; \
	VMOVUPS (src)(R8*2), Y2; \
	VMOVUPS (src)(R9*1), Y3; \
	VMOVUPS (R10), Y4; \
	VMOVUPS (R10)(R8*1), Y5; \
	VMOVUPS (R10)(R8*2), Y6; \
	VMOVUPS (R10)(R9*1), Y7; \
	TRANSPOSE8; \
	VMOVUPS Y8, (dst); \
	VMOVUPS Y9, 64(dst); \
	VMOVUPS Y10, 128(dst); \
	VMOVUPS Y11, 192(dst); \
	VMOVUPS Y12, 256(dst); \
	VMOVUPS Y13, 320(dst); \
	VMOVUPS Y14, 384(dst); \
	VMOVUPS Y15, 448(dst)

// func transposePanel16(dst, src *float32, lds, blocks int)
// For each of blocks blocks of 8 columns of the 16 source rows src[j*lds : j*lds+8*blocks]
// (j < 16), writes dst[l*16 + j] = src[j*lds + l] for the 8 columns l of the block: two 8×8
// transposes (unpack, shuffle, 128-bit permute) per block. Blocks go in pairs, 16 columns of
// each of 8 rows before the next 8 rows: a whole 64-byte line of each row is used while it is in
// L1. Block by block, when lds is a multiple of 1 KiB floats (the weights of a 1024- or
// 4096-wide layer) the 16 rows' lines fall in one set of the 8-way L1d, and the second half of
// each line had to be fetched again: the packing took 5.7% of the CPU profile of the MLP's
// forward product (BenchmarkSgemm mlp_fwd, one thread), and takes 3.6% in pairs.
TEXT ·transposePanel16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	MOVQ blocks+24(FP), CX
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	CMPQ CX, $2
	JLT tsingle

tpair:
	// Rows 0-7, columns 0-7 and 8-15; then rows 8-15, the same columns.
	MOVQ SI, R11
	TBLOCK8(R11, DI)
	LEAQ 32(SI), R11
	LEAQ 512(DI), R12
	TBLOCK8(R11, R12)
	LEAQ (SI)(R8*8), R11
	LEAQ 32(DI), R12
	TBLOCK8(R11, R12)
	LEAQ 32(R11), R11
	LEAQ 544(DI), R12
	TBLOCK8(R11, R12)
	ADDQ $64, SI
	ADDQ $1024, DI
	SUBQ $2, CX
	CMPQ CX, $2
	JGE tpair

tsingle:
	TESTQ CX, CX
	JZ tdone
	MOVQ SI, R11
	TBLOCK8(R11, DI)
	LEAQ (SI)(R8*8), R11
	LEAQ 32(DI), R12
	TBLOCK8(R11, R12)

tdone:
	VZEROUPPER
	RET

// func copyPanel16(dst, src *float32, lds, k int)
// dst[l*16 + j] = src[l*lds + j] for j < 16 and l < k (k >= 1): packing a full 16-column panel of
// an untransposed B, one row of 64 bytes per l.
TEXT ·copyPanel16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	MOVQ k+24(FP), CX
	SHLQ $2, R8

c16loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ R8, SI
	ADDQ $64, DI
	DECQ CX
	JNZ c16loop
	VZEROUPPER
	RET

// func copyPanels16x4(dst, src *float32, lds, k, dstride int)
// For the four 16-column panels q < 4: dst[q*dstride + l*16 + j] = src[l*lds + q*16 + j] for
// j < 16 and l < k (k >= 1): four adjacent panels of an untransposed B in one pass, so that each
// row of B is read as 256 contiguous bytes (four lines) instead of one line per pass.
TEXT ·copyPanels16x4(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	MOVQ k+24(FP), CX
	MOVQ dstride+32(FP), R9
	SHLQ $2, R8
	SHLQ $2, R9
	LEAQ (DI)(R9*1), R10
	LEAQ (R10)(R9*1), R11
	LEAQ (R11)(R9*1), R12

c16x4loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMOVUPS 128(SI), Y4
	VMOVUPS 160(SI), Y5
	VMOVUPS 192(SI), Y6
	VMOVUPS 224(SI), Y7
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, (R10)
	VMOVUPS Y3, 32(R10)
	VMOVUPS Y4, (R11)
	VMOVUPS Y5, 32(R11)
	VMOVUPS Y6, (R12)
	VMOVUPS Y7, 32(R12)
	ADDQ R8, SI
	ADDQ $64, DI
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	DECQ CX
	JNZ c16x4loop
	VZEROUPPER
	RET

// func copyPanel6(dst, src *float32, lds, k int)
// dst[l*6 + r] = src[l*lds + r] for r < 6 and l < k (k >= 1): packing a full 6-row panel of a
// transposed A, 24 bytes per l (16 in an xmm, 8 in a general register).
TEXT ·copyPanel6(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	MOVQ k+24(FP), CX
	SHLQ $2, R8

c6loop:
	VMOVUPS (SI), X0
	MOVQ 16(SI), AX
	VMOVUPS X0, (DI)
	MOVQ AX, 16(DI)
	ADDQ R8, SI
	ADDQ $24, DI
	DECQ CX
	JNZ c6loop
	RET

// func transposePanel6(dst, src *float32, lds, blocks int)
// For each of blocks blocks of 8 columns of the 6 source rows src[r*lds : r*lds+8*blocks]
// (r < 6), writes dst[l*6 + r] = src[r*lds + l] for the 8 columns l of the block: the packing of
// a full 6-row panel of an untransposed A. TRANSPOSE8 with zero rows 6 and 7; the eight output
// rows are stored 24 bytes apart, each 32-byte store's last two (zero) values overwritten by the
// next, and the block's last row stored as 16 + 8 bytes, so that nothing past dst[48*blocks] is
// written.
TEXT ·transposePanel6(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	MOVQ blocks+24(FP), CX
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9

t6block:
	LEAQ (SI)(R8*4), R10
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	VMOVUPS (R10), Y4
	VMOVUPS (R10)(R8*1), Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TRANSPOSE8
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, 24(DI)
	VMOVUPS Y10, 48(DI)
	VMOVUPS Y11, 72(DI)
	VMOVUPS Y12, 96(DI)
	VMOVUPS Y13, 120(DI)
	VMOVUPS Y14, 144(DI)
	VMOVUPS X15, 168(DI)
	VEXTRACTF128 $1, Y15, X1
	VMOVQ X1, 184(DI)
	ADDQ $32, SI
	ADDQ $192, DI
	DECQ CX
	JNZ t6block
	VZEROUPPER
	RET

// func prefetchL2(p *float32, lines int)
// PREFETCHT1 of the lines 64-byte lines from p (lines >= 1).
TEXT ·prefetchL2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ lines+8(FP), CX
pfl2_loop:
	PREFETCHT1 (SI)
	ADDQ $64, SI
	DECQ CX
	JNZ pfl2_loop
	RET

// func fmaPeak(iters int)
// Runs iters rounds of twelve independent VFMADD231PS on ymm registers (192 flops a round) and
// nothing else: the FMA throughput this core reaches, the ceiling kernel6x16's twelve
// accumulators are built for. BenchmarkSgemm times it to report the fraction of this machine's
// measured peak beside the datasheet one.
TEXT ·fmaPeak(SB), NOSPLIT, $0-8
	MOVQ iters+0(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
fma_loop:
	VFMADD231PS Y14, Y15, Y0
	VFMADD231PS Y14, Y15, Y1
	VFMADD231PS Y14, Y15, Y2
	VFMADD231PS Y14, Y15, Y3
	VFMADD231PS Y14, Y15, Y4
	VFMADD231PS Y14, Y15, Y5
	VFMADD231PS Y14, Y15, Y6
	VFMADD231PS Y14, Y15, Y7
	VFMADD231PS Y14, Y15, Y8
	VFMADD231PS Y14, Y15, Y9
	VFMADD231PS Y14, Y15, Y10
	VFMADD231PS Y14, Y15, Y11
	DECQ CX
	JNZ fma_loop
	VZEROUPPER
	RET

// func fmaPeakZ(iters int)
// fmaPeak on zmm registers: 12 independent 16-wide FMAs a round (384 flops), the AVX-512 ceiling
// kernel6x16z is built for.
TEXT ·fmaPeakZ(SB), NOSPLIT, $0-8
	MOVQ iters+0(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
fmaz_loop:
	VFMADD231PS Z14, Z15, Z0
	VFMADD231PS Z14, Z15, Z1
	VFMADD231PS Z14, Z15, Z2
	VFMADD231PS Z14, Z15, Z3
	VFMADD231PS Z14, Z15, Z4
	VFMADD231PS Z14, Z15, Z5
	VFMADD231PS Z14, Z15, Z6
	VFMADD231PS Z14, Z15, Z7
	VFMADD231PS Z14, Z15, Z8
	VFMADD231PS Z14, Z15, Z9
	VFMADD231PS Z14, Z15, Z10
	VFMADD231PS Z14, Z15, Z11
	DECQ CX
	JNZ fmaz_loop
	VZEROUPPER
	RET

// ZSTEP0 and ZSTEP1 are one k step of kernel6x16z: the B row at bo(DI) into Z0 (Z1), times each
// of the six A values at ao(SI) broadcast from memory, into the even-step accumulators Z4..Z9
// (the odd-step Z10..Z15), row r in Z(4+r) (Z(10+r)).
#define ZSTEP0(bo, ao) \
	VMOVUPS bo(DI), Z0; \
	VFMADD231PS.BCST (ao+0)(SI), Z0, Z4; \
	VFMADD231PS.BCST (ao+4)(SI), Z0, Z5; \
	VFMADD231PS.BCST (ao+8)(SI), Z0, Z6; \
	VFMADD231PS.BCST (ao+12)(SI), Z0, Z7; \
	VFMADD231PS.BCST (ao+16)(SI), Z0, Z8; \
	VFMADD231PS.BCST (ao+20)(SI), Z0, Z9

#define ZSTEP1(bo, ao) \
	VMOVUPS bo(DI), Z1; \
	VFMADD231PS.BCST (ao+0)(SI), Z1, Z10; \
	VFMADD231PS.BCST (ao+4)(SI), Z1, Z11; \
	VFMADD231PS.BCST (ao+8)(SI), Z1, Z12; \
	VFMADD231PS.BCST (ao+12)(SI), Z1, Z13; \
	VFMADD231PS.BCST (ao+16)(SI), Z1, Z14; \
	VFMADD231PS.BCST (ao+20)(SI), Z1, Z15

// func kernel6x16z(k int, a, b, c *float32, ldc int, alpha, beta float32, accumulate int)
// kernel6x16's contract on AVX-512: one 16-float zmm per row of the tile, so a k step is one load
// of B and six FMAs whose A operand is broadcast from memory ({1to16}). Six accumulators alone
// would wait on the FMA's 4-cycle latency, so even k steps go to Z4..Z9 and odd ones to Z10..Z15
// (twelve chains, as kernel6x16's twelve ymm accumulators), summed before the store. The same
// packed panels as kernel6x16 (A: 6 floats a k step, B: 16).
TEXT ·kernel6x16z(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	MOVQ DX, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 60(R10)
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ CX, R9
	SHRQ $2, R9
	JZ ztail

zloop4:
	PREFETCHT0 384(SI)
	PREFETCHT0 512(DI)
	ZSTEP0(0, 0)
	ZSTEP1(64, 24)
	ZSTEP0(128, 48)
	ZSTEP1(192, 72)
	ADDQ $96, SI
	ADDQ $256, DI
	DECQ R9
	JNZ zloop4

ztail:
	ANDQ $3, CX
	JZ zstore

zloop1:
	ZSTEP0(0, 0)
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JNZ zloop1

zstore:
	VADDPS Z10, Z4, Z4
	VADDPS Z11, Z5, Z5
	VADDPS Z12, Z6, Z6
	VADDPS Z13, Z7, Z7
	VADDPS Z14, Z8, Z8
	VADDPS Z15, Z9, Z9
	VBROADCASTSS alpha+40(FP), Z0
	VMULPS Z0, Z4, Z4
	VMULPS Z0, Z5, Z5
	VMULPS Z0, Z6, Z6
	VMULPS Z0, Z7, Z7
	VMULPS Z0, Z8, Z8
	VMULPS Z0, Z9, Z9
	MOVQ accumulate+48(FP), AX
	TESTQ AX, AX
	JNZ zaccum
	VMOVUPS Z4, (DX)
	ADDQ R8, DX
	VMOVUPS Z5, (DX)
	ADDQ R8, DX
	VMOVUPS Z6, (DX)
	ADDQ R8, DX
	VMOVUPS Z7, (DX)
	ADDQ R8, DX
	VMOVUPS Z8, (DX)
	ADDQ R8, DX
	VMOVUPS Z9, (DX)
	VZEROUPPER
	RET

zaccum:
	VBROADCASTSS beta+44(FP), Z1
	VFMADD231PS (DX), Z1, Z4
	VMOVUPS Z4, (DX)
	ADDQ R8, DX
	VFMADD231PS (DX), Z1, Z5
	VMOVUPS Z5, (DX)
	ADDQ R8, DX
	VFMADD231PS (DX), Z1, Z6
	VMOVUPS Z6, (DX)
	ADDQ R8, DX
	VFMADD231PS (DX), Z1, Z7
	VMOVUPS Z7, (DX)
	ADDQ R8, DX
	VFMADD231PS (DX), Z1, Z8
	VMOVUPS Z8, (DX)
	ADDQ R8, DX
	VFMADD231PS (DX), Z1, Z9
	VMOVUPS Z9, (DX)
	VZEROUPPER
	RET

// ZPAIRSTEP is one k step of kernel6x32z: the rows of the two B panels at bo(DI) and bo(R11) into
// Z0 and Z1; each of the six A values at ao(SI) is broadcast into Z2 or Z3 and multiplied into
// both halves' accumulators, row r in Z(4+r) (left) and Z(10+r) (right).
#define ZPAIRSTEP(bo, ao) \
	VMOVUPS bo(DI), Z0; \
	VMOVUPS bo(R11), Z1; \
	VBROADCASTSS (ao+0)(SI), Z2; \
	VFMADD231PS Z0, Z2, Z4; \
	VFMADD231PS Z1, Z2, Z10; \
	VBROADCASTSS (ao+4)(SI), Z3; \
	VFMADD231PS Z0, Z3, Z5; \
	VFMADD231PS Z1, Z3, Z11; \
	VBROADCASTSS (ao+8)(SI), Z2; \
	VFMADD231PS Z0, Z2, Z6; \
	VFMADD231PS Z1, Z2, Z12; \
	VBROADCASTSS (ao+12)(SI), Z3; \
	VFMADD231PS Z0, Z3, Z7; \
	VFMADD231PS Z1, Z3, Z13; \
	VBROADCASTSS (ao+16)(SI), Z2; \
	VFMADD231PS Z0, Z2, Z8; \
	VFMADD231PS Z1, Z2, Z14; \
	VBROADCASTSS (ao+20)(SI), Z3; \
	VFMADD231PS Z0, Z3, Z9; \
	VFMADD231PS Z1, Z3, Z15

// func kernel6x32z(k int, a, b, c *float32, ldc int, alpha, beta float32, accumulate int)
// Two adjacent tiles of kernel6x16z at once: the 6×32 tile of C from one packed A panel and the
// two packed B panels at b and b+16k (consecutive in the packed block). Row r of the left half
// accumulates in Z(4+r), of the right half in Z(10+r); a k step loads both B rows and broadcasts
// each A value once for two FMAs, so A is read once for 32 columns and twelve chains cover the
// FMA latency without splitting k.
TEXT ·kernel6x32z(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	MOVQ CX, R11
	SHLQ $6, R11
	ADDQ DI, R11
	MOVQ DX, R10
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 124(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 124(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 124(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 124(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 124(R10)
	ADDQ R8, R10
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 124(R10)
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ CX, R9
	SHRQ $2, R9
	JZ wtail

wloop4:
	PREFETCHT0 384(SI)
	PREFETCHT0 512(DI)
	PREFETCHT0 512(R11)
	ZPAIRSTEP(0, 0)
	ZPAIRSTEP(64, 24)
	ZPAIRSTEP(128, 48)
	ZPAIRSTEP(192, 72)
	ADDQ $96, SI
	ADDQ $256, DI
	ADDQ $256, R11
	DECQ R9
	JNZ wloop4

wtail:
	ANDQ $3, CX
	JZ wstore

wloop1:
	ZPAIRSTEP(0, 0)
	ADDQ $24, SI
	ADDQ $64, DI
	ADDQ $64, R11
	DECQ CX
	JNZ wloop1

wstore:
	VBROADCASTSS alpha+40(FP), Z0
	VMULPS Z0, Z4, Z4
	VMULPS Z0, Z5, Z5
	VMULPS Z0, Z6, Z6
	VMULPS Z0, Z7, Z7
	VMULPS Z0, Z8, Z8
	VMULPS Z0, Z9, Z9
	VMULPS Z0, Z10, Z10
	VMULPS Z0, Z11, Z11
	VMULPS Z0, Z12, Z12
	VMULPS Z0, Z13, Z13
	VMULPS Z0, Z14, Z14
	VMULPS Z0, Z15, Z15
	MOVQ accumulate+48(FP), AX
	TESTQ AX, AX
	JNZ waccum
	VMOVUPS Z4, (DX)
	VMOVUPS Z10, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z5, (DX)
	VMOVUPS Z11, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z6, (DX)
	VMOVUPS Z12, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z7, (DX)
	VMOVUPS Z13, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z8, (DX)
	VMOVUPS Z14, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z9, (DX)
	VMOVUPS Z15, 64(DX)
	VZEROUPPER
	RET

waccum:
	VBROADCASTSS beta+44(FP), Z1
	VFMADD231PS (DX), Z1, Z4
	VFMADD231PS 64(DX), Z1, Z10
	VMOVUPS Z4, (DX)
	VMOVUPS Z10, 64(DX)
	ADDQ R8, DX
	VFMADD231PS (DX), Z1, Z5
	VFMADD231PS 64(DX), Z1, Z11
	VMOVUPS Z5, (DX)
	VMOVUPS Z11, 64(DX)
	ADDQ R8, DX
	VFMADD231PS (DX), Z1, Z6
	VFMADD231PS 64(DX), Z1, Z12
	VMOVUPS Z6, (DX)
	VMOVUPS Z12, 64(DX)
	ADDQ R8, DX
	VFMADD231PS (DX), Z1, Z7
	VFMADD231PS 64(DX), Z1, Z13
	VMOVUPS Z7, (DX)
	VMOVUPS Z13, 64(DX)
	ADDQ R8, DX
	VFMADD231PS (DX), Z1, Z8
	VFMADD231PS 64(DX), Z1, Z14
	VMOVUPS Z8, (DX)
	VMOVUPS Z14, 64(DX)
	ADDQ R8, DX
	VFMADD231PS (DX), Z1, Z9
	VFMADD231PS 64(DX), Z1, Z15
	VMOVUPS Z9, (DX)
	VMOVUPS Z15, 64(DX)
	VZEROUPPER
	RET

// ZTSTEP is one k step of kernel24x16z. The 16 values of the B row at bo(DI) are loaded twice,
// with the even-indexed values duplicated into Z4 ([b0 b0 b2 b2 …], VMOVSLDUP) and the odd ones
// into Z5 ([b1 b1 b3 b3 …], VMOVSHDUP). Each of the twelve row pairs (2p, 2p+1) broadcasts its two
// adjacent A values as one 64-bit pair ([a0 a1 a0 a1 …], VBROADCASTSD) into Z6 or Z7: the pairs
// of A panel q (rows 6q..6q+5) are at ao+0, 8, 16 of SI + q×R12 (R13 = 3×R12). One broadcast
// serves two FMAs: Z(8+2p) accumulates rows 2p, 2p+1 of the even columns, interleaved
// ([c(2p,0) c(2p+1,0) c(2p,2) …]), Z(9+2p) those of the odd columns; ZTSAVE untangles them.
#define ZTPAIR(addr, p0, p1, t) \
	VBROADCASTSD addr, t; \
	VFMADD231PS Z4, t, p0; \
	VFMADD231PS Z5, t, p1

#define ZTSTEP(bo, ao) \
	VMOVSLDUP bo(DI), Z4; \
	VMOVSHDUP bo(DI), Z5; \
	ZTPAIR((ao+0)(SI), Z8, Z9, Z6); \
	ZTPAIR((ao+8)(SI), Z10, Z11, Z7); \
	ZTPAIR((ao+16)(SI), Z12, Z13, Z6); \
	ZTPAIR((ao+0)(SI)(R12*1), Z14, Z15, Z7); \
	ZTPAIR((ao+8)(SI)(R12*1), Z16, Z17, Z6); \
	ZTPAIR((ao+16)(SI)(R12*1), Z18, Z19, Z7); \
	ZTPAIR((ao+0)(SI)(R12*2), Z20, Z21, Z6); \
	ZTPAIR((ao+8)(SI)(R12*2), Z22, Z23, Z7); \
	ZTPAIR((ao+16)(SI)(R12*2), Z24, Z25, Z6); \
	ZTPAIR((ao+0)(SI)(R13*1), Z26, Z27, Z7); \
	ZTPAIR((ao+8)(SI)(R13*1), Z28, Z29, Z6); \
	ZTPAIR((ao+16)(SI)(R13*1), Z30, Z31, Z7)

// ZTROWS turns the accumulators ev, od of a row pair into its two rows, Z6 (row 2p) and Z7
// (2p+1), scaled by alpha (Z0): within each 128-bit lane, unpacking the floats of ev and od gives
// [c(2p,j) c(2p,j+1) c(2p+1,j) c(2p+1,j+1)] for j = 4l and 4l+2, and unpacking those as doubles
// gives the four consecutive columns of each row.
#define ZTROWS(ev, od) \
	VUNPCKLPS od, ev, Z4; \
	VUNPCKHPS od, ev, Z5; \
	VUNPCKLPD Z5, Z4, Z6; \
	VUNPCKHPD Z5, Z4, Z7; \
	VMULPS Z0, Z6, Z6; \
	VMULPS Z0, Z7, Z7

// ZTSAVE stores the rows of a pair at DX and DX+R8 and advances DX two rows; ZTSAVEACC adds
// beta (Z1) times C first.
#define ZTSAVE(ev, od) \
	ZTROWS(ev, od); \
	VMOVUPS Z6, (DX); \
	VMOVUPS Z7, (DX)(R8*1); \
	LEAQ (DX)(R8*2), DX

#define ZTSAVEACC(ev, od) \
	ZTROWS(ev, od); \
	VFMADD231PS (DX), Z1, Z6; \
	VFMADD231PS (DX)(R8*1), Z1, Z7; \
	VMOVUPS Z6, (DX); \
	VMOVUPS Z7, (DX)(R8*1); \
	LEAQ (DX)(R8*2), DX

// func kernel24x16z(k int, a, b, c *float32, ldc int, alpha, beta float32, accumulate int)
// The 24×16 tile of C from four consecutive packed 6-row A panels at a (6k floats apart) and the
// packed 16-column B panel at b, with kernel6x16's store rule (AVX-512). Twenty-four accumulators
// take fourteen loads a k step for 24 FMAs, against eight for twelve in kernel6x32z; macroTall
// keeps the A panels in L1 across a block of B panels that sits in L2.
TEXT ·kernel24x16z(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	// R12 = the byte distance of two A panels (6k floats), R13 = three of them.
	LEAQ (CX)(CX*2), R12
	SHLQ $3, R12
	LEAQ (R12)(R12*2), R13
	// Prefetch the 24 rows of the C tile (64 bytes each).
	MOVQ DX, R10
	MOVQ $24, AX

tprefc:
	PREFETCHT0 (R10)
	ADDQ R8, R10
	DECQ AX
	JNZ tprefc
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31
	MOVQ CX, R9
	SHRQ $2, R9
	JZ ttail

tloop4:
	// The B panel streams from L2: fetch the four lines of the k steps eight ahead.
	PREFETCHT0 512(DI)
	PREFETCHT0 576(DI)
	PREFETCHT0 640(DI)
	PREFETCHT0 704(DI)
	ZTSTEP(0, 0)
	ZTSTEP(64, 24)
	ZTSTEP(128, 48)
	ZTSTEP(192, 72)
	ADDQ $96, SI
	ADDQ $256, DI
	DECQ R9
	JNZ tloop4

ttail:
	ANDQ $3, CX
	JZ tstore

tloop1:
	ZTSTEP(0, 0)
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JNZ tloop1

tstore:
	VBROADCASTSS alpha+40(FP), Z0
	MOVQ accumulate+48(FP), AX
	TESTQ AX, AX
	JNZ taccum
	ZTSAVE(Z8, Z9)
	ZTSAVE(Z10, Z11)
	ZTSAVE(Z12, Z13)
	ZTSAVE(Z14, Z15)
	ZTSAVE(Z16, Z17)
	ZTSAVE(Z18, Z19)
	ZTSAVE(Z20, Z21)
	ZTSAVE(Z22, Z23)
	ZTSAVE(Z24, Z25)
	ZTSAVE(Z26, Z27)
	ZTSAVE(Z28, Z29)
	ZTSAVE(Z30, Z31)
	VZEROUPPER
	RET

taccum:
	VBROADCASTSS beta+44(FP), Z1
	ZTSAVEACC(Z8, Z9)
	ZTSAVEACC(Z10, Z11)
	ZTSAVEACC(Z12, Z13)
	ZTSAVEACC(Z14, Z15)
	ZTSAVEACC(Z16, Z17)
	ZTSAVEACC(Z18, Z19)
	ZTSAVEACC(Z20, Z21)
	ZTSAVEACC(Z22, Z23)
	ZTSAVEACC(Z24, Z25)
	ZTSAVEACC(Z26, Z27)
	ZTSAVEACC(Z28, Z29)
	ZTSAVEACC(Z30, Z31)
	VZEROUPPER
	RET
