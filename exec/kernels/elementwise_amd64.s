//go:build amd64 && !purego

#include "textflag.h"

// Constants, eight copies each (one ymm). exp: Cephes expf (Moshier 1989, "Methods and Programs
// for Mathematical Functions", cephes/single/expf.c): x = n ln2 + r with ln2 split in ln2hi + ln2lo,
// exp(r) = 1 + r + r² P(r) with P's coefficients p0..p5, times 2^n built in the exponent bits. gelu:
// 2C and 6C·a for C = sqrt(2/pi), a = 0.044715 (see GELU).
DATA c_one<>+0(SB)/4, $0x3f800000
DATA c_one<>+4(SB)/4, $0x3f800000
DATA c_one<>+8(SB)/4, $0x3f800000
DATA c_one<>+12(SB)/4, $0x3f800000
DATA c_one<>+16(SB)/4, $0x3f800000
DATA c_one<>+20(SB)/4, $0x3f800000
DATA c_one<>+24(SB)/4, $0x3f800000
DATA c_one<>+28(SB)/4, $0x3f800000
GLOBL c_one<>(SB), RODATA|NOPTR, $32
DATA c_explo<>+0(SB)/4, $0xc2aeac50
DATA c_explo<>+4(SB)/4, $0xc2aeac50
DATA c_explo<>+8(SB)/4, $0xc2aeac50
DATA c_explo<>+12(SB)/4, $0xc2aeac50
DATA c_explo<>+16(SB)/4, $0xc2aeac50
DATA c_explo<>+20(SB)/4, $0xc2aeac50
DATA c_explo<>+24(SB)/4, $0xc2aeac50
DATA c_explo<>+28(SB)/4, $0xc2aeac50
GLOBL c_explo<>(SB), RODATA|NOPTR, $32
DATA c_exphi<>+0(SB)/4, $0x42b00000
DATA c_exphi<>+4(SB)/4, $0x42b00000
DATA c_exphi<>+8(SB)/4, $0x42b00000
DATA c_exphi<>+12(SB)/4, $0x42b00000
DATA c_exphi<>+16(SB)/4, $0x42b00000
DATA c_exphi<>+20(SB)/4, $0x42b00000
DATA c_exphi<>+24(SB)/4, $0x42b00000
DATA c_exphi<>+28(SB)/4, $0x42b00000
GLOBL c_exphi<>(SB), RODATA|NOPTR, $32
DATA c_log2e<>+0(SB)/4, $0x3fb8aa3b
DATA c_log2e<>+4(SB)/4, $0x3fb8aa3b
DATA c_log2e<>+8(SB)/4, $0x3fb8aa3b
DATA c_log2e<>+12(SB)/4, $0x3fb8aa3b
DATA c_log2e<>+16(SB)/4, $0x3fb8aa3b
DATA c_log2e<>+20(SB)/4, $0x3fb8aa3b
DATA c_log2e<>+24(SB)/4, $0x3fb8aa3b
DATA c_log2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL c_log2e<>(SB), RODATA|NOPTR, $32
DATA c_ln2hi<>+0(SB)/4, $0x3f318000
DATA c_ln2hi<>+4(SB)/4, $0x3f318000
DATA c_ln2hi<>+8(SB)/4, $0x3f318000
DATA c_ln2hi<>+12(SB)/4, $0x3f318000
DATA c_ln2hi<>+16(SB)/4, $0x3f318000
DATA c_ln2hi<>+20(SB)/4, $0x3f318000
DATA c_ln2hi<>+24(SB)/4, $0x3f318000
DATA c_ln2hi<>+28(SB)/4, $0x3f318000
GLOBL c_ln2hi<>(SB), RODATA|NOPTR, $32
DATA c_ln2lo<>+0(SB)/4, $0xb95e8083
DATA c_ln2lo<>+4(SB)/4, $0xb95e8083
DATA c_ln2lo<>+8(SB)/4, $0xb95e8083
DATA c_ln2lo<>+12(SB)/4, $0xb95e8083
DATA c_ln2lo<>+16(SB)/4, $0xb95e8083
DATA c_ln2lo<>+20(SB)/4, $0xb95e8083
DATA c_ln2lo<>+24(SB)/4, $0xb95e8083
DATA c_ln2lo<>+28(SB)/4, $0xb95e8083
GLOBL c_ln2lo<>(SB), RODATA|NOPTR, $32
DATA c_p0<>+0(SB)/4, $0x39506967
DATA c_p0<>+4(SB)/4, $0x39506967
DATA c_p0<>+8(SB)/4, $0x39506967
DATA c_p0<>+12(SB)/4, $0x39506967
DATA c_p0<>+16(SB)/4, $0x39506967
DATA c_p0<>+20(SB)/4, $0x39506967
DATA c_p0<>+24(SB)/4, $0x39506967
DATA c_p0<>+28(SB)/4, $0x39506967
GLOBL c_p0<>(SB), RODATA|NOPTR, $32
DATA c_p1<>+0(SB)/4, $0x3ab743ce
DATA c_p1<>+4(SB)/4, $0x3ab743ce
DATA c_p1<>+8(SB)/4, $0x3ab743ce
DATA c_p1<>+12(SB)/4, $0x3ab743ce
DATA c_p1<>+16(SB)/4, $0x3ab743ce
DATA c_p1<>+20(SB)/4, $0x3ab743ce
DATA c_p1<>+24(SB)/4, $0x3ab743ce
DATA c_p1<>+28(SB)/4, $0x3ab743ce
GLOBL c_p1<>(SB), RODATA|NOPTR, $32
DATA c_p2<>+0(SB)/4, $0x3c088908
DATA c_p2<>+4(SB)/4, $0x3c088908
DATA c_p2<>+8(SB)/4, $0x3c088908
DATA c_p2<>+12(SB)/4, $0x3c088908
DATA c_p2<>+16(SB)/4, $0x3c088908
DATA c_p2<>+20(SB)/4, $0x3c088908
DATA c_p2<>+24(SB)/4, $0x3c088908
DATA c_p2<>+28(SB)/4, $0x3c088908
GLOBL c_p2<>(SB), RODATA|NOPTR, $32
DATA c_p3<>+0(SB)/4, $0x3d2aa9c1
DATA c_p3<>+4(SB)/4, $0x3d2aa9c1
DATA c_p3<>+8(SB)/4, $0x3d2aa9c1
DATA c_p3<>+12(SB)/4, $0x3d2aa9c1
DATA c_p3<>+16(SB)/4, $0x3d2aa9c1
DATA c_p3<>+20(SB)/4, $0x3d2aa9c1
DATA c_p3<>+24(SB)/4, $0x3d2aa9c1
DATA c_p3<>+28(SB)/4, $0x3d2aa9c1
GLOBL c_p3<>(SB), RODATA|NOPTR, $32
DATA c_p4<>+0(SB)/4, $0x3e2aaaaa
DATA c_p4<>+4(SB)/4, $0x3e2aaaaa
DATA c_p4<>+8(SB)/4, $0x3e2aaaaa
DATA c_p4<>+12(SB)/4, $0x3e2aaaaa
DATA c_p4<>+16(SB)/4, $0x3e2aaaaa
DATA c_p4<>+20(SB)/4, $0x3e2aaaaa
DATA c_p4<>+24(SB)/4, $0x3e2aaaaa
DATA c_p4<>+28(SB)/4, $0x3e2aaaaa
GLOBL c_p4<>(SB), RODATA|NOPTR, $32
DATA c_p5<>+0(SB)/4, $0x3f000000
DATA c_p5<>+4(SB)/4, $0x3f000000
DATA c_p5<>+8(SB)/4, $0x3f000000
DATA c_p5<>+12(SB)/4, $0x3f000000
DATA c_p5<>+16(SB)/4, $0x3f000000
DATA c_p5<>+20(SB)/4, $0x3f000000
DATA c_p5<>+24(SB)/4, $0x3f000000
DATA c_p5<>+28(SB)/4, $0x3f000000
GLOBL c_p5<>(SB), RODATA|NOPTR, $32
DATA c_bias<>+0(SB)/4, $0x0000007f
DATA c_bias<>+4(SB)/4, $0x0000007f
DATA c_bias<>+8(SB)/4, $0x0000007f
DATA c_bias<>+12(SB)/4, $0x0000007f
DATA c_bias<>+16(SB)/4, $0x0000007f
DATA c_bias<>+20(SB)/4, $0x0000007f
DATA c_bias<>+24(SB)/4, $0x0000007f
DATA c_bias<>+28(SB)/4, $0x0000007f
GLOBL c_bias<>(SB), RODATA|NOPTR, $32
DATA c_g2c<>+0(SB)/4, $0x3fcc422a
DATA c_g2c<>+4(SB)/4, $0x3fcc422a
DATA c_g2c<>+8(SB)/4, $0x3fcc422a
DATA c_g2c<>+12(SB)/4, $0x3fcc422a
DATA c_g2c<>+16(SB)/4, $0x3fcc422a
DATA c_g2c<>+20(SB)/4, $0x3fcc422a
DATA c_g2c<>+24(SB)/4, $0x3fcc422a
DATA c_g2c<>+28(SB)/4, $0x3fcc422a
GLOBL c_g2c<>(SB), RODATA|NOPTR, $32
DATA c_g6ca<>+0(SB)/4, $0x3e5b33b6
DATA c_g6ca<>+4(SB)/4, $0x3e5b33b6
DATA c_g6ca<>+8(SB)/4, $0x3e5b33b6
DATA c_g6ca<>+12(SB)/4, $0x3e5b33b6
DATA c_g6ca<>+16(SB)/4, $0x3e5b33b6
DATA c_g6ca<>+20(SB)/4, $0x3e5b33b6
DATA c_g6ca<>+24(SB)/4, $0x3e5b33b6
DATA c_g6ca<>+28(SB)/4, $0x3e5b33b6
GLOBL c_g6ca<>(SB), RODATA|NOPTR, $32

DATA c_magic<>+0(SB)/4, $0x4b40007f
DATA c_magic<>+4(SB)/4, $0x4b40007f
DATA c_magic<>+8(SB)/4, $0x4b40007f
DATA c_magic<>+12(SB)/4, $0x4b40007f
DATA c_magic<>+16(SB)/4, $0x4b40007f
DATA c_magic<>+20(SB)/4, $0x4b40007f
DATA c_magic<>+24(SB)/4, $0x4b40007f
DATA c_magic<>+28(SB)/4, $0x4b40007f
GLOBL c_magic<>(SB), RODATA|NOPTR, $32


// Constants of the activations' exp, which works in base 2 (see EXP2ARG): the clamps
// [-126, 88 log2e] of y = z log2e, GELU's -2C log2e and -2Ca log2e (so that y comes straight
// from x), SiLU's -log2e, ln 2, and the Cephes coefficients rescaled to r' = r/ln2: a5 = p5 ln²2,
// a4 = p4 ln³2, ..., a0 = p0 ln⁷2 (fastmath.go computes the same values as exp2A5..exp2A0).
DATA c_ylo<>+0(SB)/4, $0xc2fc0000
DATA c_ylo<>+4(SB)/4, $0xc2fc0000
DATA c_ylo<>+8(SB)/4, $0xc2fc0000
DATA c_ylo<>+12(SB)/4, $0xc2fc0000
DATA c_ylo<>+16(SB)/4, $0xc2fc0000
DATA c_ylo<>+20(SB)/4, $0xc2fc0000
DATA c_ylo<>+24(SB)/4, $0xc2fc0000
DATA c_ylo<>+28(SB)/4, $0xc2fc0000
GLOBL c_ylo<>(SB), RODATA|NOPTR, $32
DATA c_yhi<>+0(SB)/4, $0x42fdea11
DATA c_yhi<>+4(SB)/4, $0x42fdea11
DATA c_yhi<>+8(SB)/4, $0x42fdea11
DATA c_yhi<>+12(SB)/4, $0x42fdea11
DATA c_yhi<>+16(SB)/4, $0x42fdea11
DATA c_yhi<>+20(SB)/4, $0x42fdea11
DATA c_yhi<>+24(SB)/4, $0x42fdea11
DATA c_yhi<>+28(SB)/4, $0x42fdea11
GLOBL c_yhi<>(SB), RODATA|NOPTR, $32
DATA c_gk0<>+0(SB)/4, $0xc0135761
DATA c_gk0<>+4(SB)/4, $0xc0135761
DATA c_gk0<>+8(SB)/4, $0xc0135761
DATA c_gk0<>+12(SB)/4, $0xc0135761
DATA c_gk0<>+16(SB)/4, $0xc0135761
DATA c_gk0<>+20(SB)/4, $0xc0135761
DATA c_gk0<>+24(SB)/4, $0xc0135761
DATA c_gk0<>+28(SB)/4, $0xc0135761
GLOBL c_gk0<>(SB), RODATA|NOPTR, $32
DATA c_gk1<>+0(SB)/4, $0xbdd2d3e8
DATA c_gk1<>+4(SB)/4, $0xbdd2d3e8
DATA c_gk1<>+8(SB)/4, $0xbdd2d3e8
DATA c_gk1<>+12(SB)/4, $0xbdd2d3e8
DATA c_gk1<>+16(SB)/4, $0xbdd2d3e8
DATA c_gk1<>+20(SB)/4, $0xbdd2d3e8
DATA c_gk1<>+24(SB)/4, $0xbdd2d3e8
DATA c_gk1<>+28(SB)/4, $0xbdd2d3e8
GLOBL c_gk1<>(SB), RODATA|NOPTR, $32
DATA c_nlog2e<>+0(SB)/4, $0xbfb8aa3b
DATA c_nlog2e<>+4(SB)/4, $0xbfb8aa3b
DATA c_nlog2e<>+8(SB)/4, $0xbfb8aa3b
DATA c_nlog2e<>+12(SB)/4, $0xbfb8aa3b
DATA c_nlog2e<>+16(SB)/4, $0xbfb8aa3b
DATA c_nlog2e<>+20(SB)/4, $0xbfb8aa3b
DATA c_nlog2e<>+24(SB)/4, $0xbfb8aa3b
DATA c_nlog2e<>+28(SB)/4, $0xbfb8aa3b
GLOBL c_nlog2e<>(SB), RODATA|NOPTR, $32
DATA c_ln2<>+0(SB)/4, $0x3f317218
DATA c_ln2<>+4(SB)/4, $0x3f317218
DATA c_ln2<>+8(SB)/4, $0x3f317218
DATA c_ln2<>+12(SB)/4, $0x3f317218
DATA c_ln2<>+16(SB)/4, $0x3f317218
DATA c_ln2<>+20(SB)/4, $0x3f317218
DATA c_ln2<>+24(SB)/4, $0x3f317218
DATA c_ln2<>+28(SB)/4, $0x3f317218
GLOBL c_ln2<>(SB), RODATA|NOPTR, $32
DATA c_a5<>+0(SB)/4, $0x3e75fdf0
DATA c_a5<>+4(SB)/4, $0x3e75fdf0
DATA c_a5<>+8(SB)/4, $0x3e75fdf0
DATA c_a5<>+12(SB)/4, $0x3e75fdf0
DATA c_a5<>+16(SB)/4, $0x3e75fdf0
DATA c_a5<>+20(SB)/4, $0x3e75fdf0
DATA c_a5<>+24(SB)/4, $0x3e75fdf0
DATA c_a5<>+28(SB)/4, $0x3e75fdf0
GLOBL c_a5<>(SB), RODATA|NOPTR, $32
DATA c_a4<>+0(SB)/4, $0x3d635846
DATA c_a4<>+4(SB)/4, $0x3d635846
DATA c_a4<>+8(SB)/4, $0x3d635846
DATA c_a4<>+12(SB)/4, $0x3d635846
DATA c_a4<>+16(SB)/4, $0x3d635846
DATA c_a4<>+20(SB)/4, $0x3d635846
DATA c_a4<>+24(SB)/4, $0x3d635846
DATA c_a4<>+28(SB)/4, $0x3d635846
GLOBL c_a4<>(SB), RODATA|NOPTR, $32
DATA c_a3<>+0(SB)/4, $0x3c1d9484
DATA c_a3<>+4(SB)/4, $0x3c1d9484
DATA c_a3<>+8(SB)/4, $0x3c1d9484
DATA c_a3<>+12(SB)/4, $0x3c1d9484
DATA c_a3<>+16(SB)/4, $0x3c1d9484
DATA c_a3<>+20(SB)/4, $0x3c1d9484
DATA c_a3<>+24(SB)/4, $0x3c1d9484
DATA c_a3<>+28(SB)/4, $0x3c1d9484
GLOBL c_a3<>(SB), RODATA|NOPTR, $32
DATA c_a2<>+0(SB)/4, $0x3aaec4a2
DATA c_a2<>+4(SB)/4, $0x3aaec4a2
DATA c_a2<>+8(SB)/4, $0x3aaec4a2
DATA c_a2<>+12(SB)/4, $0x3aaec4a2
DATA c_a2<>+16(SB)/4, $0x3aaec4a2
DATA c_a2<>+20(SB)/4, $0x3aaec4a2
DATA c_a2<>+24(SB)/4, $0x3aaec4a2
DATA c_a2<>+28(SB)/4, $0x3aaec4a2
GLOBL c_a2<>(SB), RODATA|NOPTR, $32
DATA c_a1<>+0(SB)/4, $0x392299bc
DATA c_a1<>+4(SB)/4, $0x392299bc
DATA c_a1<>+8(SB)/4, $0x392299bc
DATA c_a1<>+12(SB)/4, $0x392299bc
DATA c_a1<>+16(SB)/4, $0x392299bc
DATA c_a1<>+20(SB)/4, $0x392299bc
DATA c_a1<>+24(SB)/4, $0x392299bc
DATA c_a1<>+28(SB)/4, $0x392299bc
GLOBL c_a1<>(SB), RODATA|NOPTR, $32
DATA c_a0<>+0(SB)/4, $0x37802bd2
DATA c_a0<>+4(SB)/4, $0x37802bd2
DATA c_a0<>+8(SB)/4, $0x37802bd2
DATA c_a0<>+12(SB)/4, $0x37802bd2
DATA c_a0<>+16(SB)/4, $0x37802bd2
DATA c_a0<>+20(SB)/4, $0x37802bd2
DATA c_a0<>+24(SB)/4, $0x37802bd2
DATA c_a0<>+28(SB)/4, $0x37802bd2
GLOBL c_a0<>(SB), RODATA|NOPTR, $32

// The kernels that take nt store their output with VMOVNTPS when it is nonzero (dst 32-byte
// aligned, see ntStores), bypassing the caches, and end with SFENCE; the storing loop comes in
// two copies, so that neither tests nt per vector (a test and two jumps a vector cost ReLU a third
// of its speed in L1).

// The exp kernels below work on blocks of up to 32 vectors (256 floats) in two passes, with the
// block's reduced arguments in the frame: pass 1 computes each vector's argument z, clamps it and
// splits it as z = n ln2 + r, storing r at 0(SP) and t (n in its low bits) at 1024(SP); pass 2
// evaluates exp(r) 2^n from them and finishes the kernel. One pass holding the whole chain of
// dependent steps (some 80 cycles from load to store) kept too few vectors in flight for the
// out-of-order window and ran at about twice the arithmetic's throughput bound; each half is short
// enough to overlap.
//
// Rounding to n uses the shifter 1.5·2²³ + 127 (c_magic): t = z log2e + shifter in one fused
// multiply-add rounds z log2e to the nearest integer n (ties to even, as VROUNDPS $0) in the low
// bits of t, and n = t - shifter exactly; t << 23 is then the float32 2^n, the +127 being its
// exponent bias (n is in [-126, 127] once z is clamped).

// EXPLOADARG loads the constants of EXPARG into Y10..Y15.
#define EXPLOADARG \
	VMOVUPS c_explo<>(SB), Y15; \
	VMOVUPS c_exphi<>(SB), Y14; \
	VMOVUPS c_log2e<>(SB), Y13; \
	VMOVUPS c_magic<>(SB), Y12; \
	VMOVUPS c_ln2hi<>(SB), Y11; \
	VMOVUPS c_ln2lo<>(SB), Y10

// EXPARG clamps Z to [ln 2⁻¹²⁶, 88] (NaN passes: the clamps return their second source operand Z
// when it is unordered) and sets T = shifter + n and Z = r = z - n ln2hi - n ln2lo, with N as
// scratch.
#define EXPARG(Z, T, N) \
	VMAXPS Z, Y15, Z; \
	VMINPS Z, Y14, Z; \
	VMOVAPS Y13, T; \
	VFMADD213PS Y12, Z, T; \
	VSUBPS Y12, T, N; \
	VFNMADD231PS Y11, N, Z; \
	VFNMADD231PS Y10, N, Z

// EXPLOADPOLY loads the constants of EXPPOLY into Y9..Y15 (Y15 = 1).
#define EXPLOADPOLY \
	VMOVUPS c_one<>(SB), Y15; \
	VMOVUPS c_p5<>(SB), Y14; \
	VMOVUPS c_p4<>(SB), Y13; \
	VMOVUPS c_p3<>(SB), Y12; \
	VMOVUPS c_p2<>(SB), Y11; \
	VMOVUPS c_p1<>(SB), Y10; \
	VMOVUPS c_p0<>(SB), Y9

// EXPPOLY sets E = exp(r) 2^n from R = r (clobbered) and the t at memory operand TM: the Cephes
// polynomial 1 + r + r² P(r), P = p5 + p4 r + ... + p0 r⁵, evaluated in Estrin's form
// P = (p5 + p4 r) + r² ((p3 + p2 r) + r² (p1 + p0 r)), which has half the dependent steps of
// Horner's. A, B and R2 are scratch.
#define EXPPOLY(R, TM, E, A, B, R2) \
	VMULPS R, R, R2; \
	VMOVAPS Y9, E; \
	VFMADD213PS Y10, R, E; \
	VMOVAPS Y11, B; \
	VFMADD213PS Y12, R, B; \
	VMOVAPS Y13, A; \
	VFMADD213PS Y14, R, A; \
	VFMADD213PS B, R2, E; \
	VFMADD213PS A, R2, E; \
	VADDPS Y15, R, R; \
	VFMADD213PS R, R2, E; \
	VMOVUPS TM, A; \
	VPSLLD $23, A, A; \
	VMULPS A, E, E

// EXP2LOADARG loads the constants of EXP2ARG into Y12, Y14 and Y15.
#define EXP2LOADARG \
	VMOVUPS c_ylo<>(SB), Y15; \
	VMOVUPS c_yhi<>(SB), Y14; \
	VMOVUPS c_magic<>(SB), Y12

// EXP2ARG is EXPARG for the activations: Y = y = z log2e is clamped to [-126, 88 log2e] and split
// as y = n + r' with T = shifter + n and Y = r' = y - n (exact, |r'| <= 1/2); N is scratch. It
// saves the two-step multiply by ln 2 of EXPARG: the activation folds log2e into its argument's
// constants, where float32 rounding of y costs what rounding z does (the condition number of
// exp, |y| ln 2 ulp), within the bound TestFastActivationAccuracy holds the activations to.
#define EXP2ARG(Y, T, N) \
	VMAXPS Y, Y15, Y; \
	VMINPS Y, Y14, Y; \
	VADDPS Y12, Y, T; \
	VSUBPS Y12, T, N; \
	VSUBPS N, Y, Y

// EXP2LOADPOLY loads the constants of EXP2POLY into Y8..Y15 (Y15 = 1, Y8 = ln 2).
#define EXP2LOADPOLY \
	VMOVUPS c_one<>(SB), Y15; \
	VMOVUPS c_a5<>(SB), Y14; \
	VMOVUPS c_a4<>(SB), Y13; \
	VMOVUPS c_a3<>(SB), Y12; \
	VMOVUPS c_a2<>(SB), Y11; \
	VMOVUPS c_a1<>(SB), Y10; \
	VMOVUPS c_a0<>(SB), Y9; \
	VMOVUPS c_ln2<>(SB), Y8

// EXP2POLY is EXPPOLY in r' = r/ln2: E = (1 + r' ln2 + r'² P'(r')) 2^n, P' the Cephes P with the
// rescaled coefficients a5..a0, in Estrin's form.
#define EXP2POLY(R, TM, E, A, B, R2) \
	VMULPS R, R, R2; \
	VMOVAPS Y9, E; \
	VFMADD213PS Y10, R, E; \
	VMOVAPS Y11, B; \
	VFMADD213PS Y12, R, B; \
	VMOVAPS Y13, A; \
	VFMADD213PS Y14, R, A; \
	VFMADD213PS B, R2, E; \
	VFMADD213PS A, R2, E; \
	VFMADD213PS Y15, Y8, R; \
	VFMADD213PS R, R2, E; \
	VMOVUPS TM, A; \
	VPSLLD $23, A, A; \
	VMULPS A, E, E

// BLOCK sets DX to the vectors of the next block (at most 32) of the CX left and takes them off CX.
#define BLOCK \
	MOVQ CX, DX; \
	CMPQ DX, $32; \
	JLE 2(PC); \
	MOVQ $32, DX; \
	SUBQ DX, CX

// GELUY sets D = -2u log2e = x(-2C log2e - 2Ca log2e x²) from X = x (u = C(x + a x³), see
// GELU), with the constants in Y9 and Y8 (c_gk1, c_gk0), leaving X2 = x².
#define GELUY(X, X2, D) \
	VMULPS X, X, X2; \
	VMOVAPS Y9, D; \
	VFMADD213PS Y8, X2, D; \
	VMULPS X, D, D

// func geluAVX(dst, x *float32, n int, nt int)
// dst = x / (1 + exp(-2u)), n a multiple of 8.
TEXT ·geluAVX(SB), $2048-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ nt+24(FP), R12
	SHRQ $3, CX
	JZ gelu_done

gelu_block:
	BLOCK
	EXP2LOADARG
	VMOVUPS c_gk1<>(SB), Y9
	VMOVUPS c_gk0<>(SB), Y8
	MOVQ DX, R8
	MOVQ SI, R9
	XORQ R10, R10

gelu_pass1:
	VMOVUPS (R9), Y1
	GELUY(Y1, Y2, Y0)
	EXP2ARG(Y0, Y3, Y4)
	VMOVUPS Y0, 0(SP)(R10*1)
	VMOVUPS Y3, 1024(SP)(R10*1)
	ADDQ $32, R9
	ADDQ $32, R10
	DECQ R8
	JNZ gelu_pass1

	EXP2LOADPOLY
	MOVQ DX, R8
	XORQ R10, R10

	TESTQ R12, R12
	JNZ gelu_pass2_nt

gelu_pass2:
	VMOVUPS 0(SP)(R10*1), Y0
	EXP2POLY(Y0, 1024(SP)(R10*1), Y1, Y2, Y3, Y4)
	VADDPS Y15, Y1, Y1
	VMOVUPS (SI), Y5
	VDIVPS Y1, Y5, Y5
	VMOVUPS Y5, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ R8
	JNZ gelu_pass2
	JMP gelu_pass2_end

gelu_pass2_nt:
	VMOVUPS 0(SP)(R10*1), Y0
	EXP2POLY(Y0, 1024(SP)(R10*1), Y1, Y2, Y3, Y4)
	VADDPS Y15, Y1, Y1
	VMOVUPS (SI), Y5
	VDIVPS Y1, Y5, Y5
	VMOVNTPS Y5, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ R8
	JNZ gelu_pass2_nt

gelu_pass2_end:

	TESTQ CX, CX
	JNZ gelu_block

gelu_done:
	TESTQ R12, R12
	JZ 2(PC)
	SFENCE
	VZEROUPPER
	RET

// func geluBackwardAVX(dx, dy, x *float32, n int, nt int)
// With e = exp(-2u) and s = 1/(1+e) (so 1-s = e s): dx = dy (s + x(2C + 6Ca x²) s(1-s)).
TEXT ·geluBackwardAVX(SB), $2048-40
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), BX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ nt+32(FP), R12
	SHRQ $3, CX
	JZ gelub_done

gelub_block:
	BLOCK
	EXP2LOADARG
	VMOVUPS c_gk1<>(SB), Y9
	VMOVUPS c_gk0<>(SB), Y8
	MOVQ DX, R8
	MOVQ SI, R9
	XORQ R10, R10

gelub_pass1:
	VMOVUPS (R9), Y1
	GELUY(Y1, Y2, Y0)
	EXP2ARG(Y0, Y3, Y4)
	VMOVUPS Y0, 0(SP)(R10*1)
	VMOVUPS Y3, 1024(SP)(R10*1)
	ADDQ $32, R9
	ADDQ $32, R10
	DECQ R8
	JNZ gelub_pass1

	EXP2LOADPOLY
	MOVQ DX, R8
	XORQ R10, R10

	TESTQ R12, R12
	JNZ gelub_pass2_nt

gelub_pass2:
	VMOVUPS 0(SP)(R10*1), Y0
	EXP2POLY(Y0, 1024(SP)(R10*1), Y3, Y2, Y4, Y5)
	VADDPS Y15, Y3, Y4
	VDIVPS Y4, Y15, Y2
	VMULPS Y2, Y3, Y4
	VMULPS Y2, Y4, Y4
	VMOVUPS (SI), Y1
	VMULPS Y1, Y1, Y0
	VMOVUPS c_g6ca<>(SB), Y3
	VFMADD213PS c_g2c<>(SB), Y0, Y3
	VMULPS Y1, Y3, Y3
	VFMADD213PS Y2, Y3, Y4
	VMULPS (BX), Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ R8
	JNZ gelub_pass2
	JMP gelub_pass2_end

gelub_pass2_nt:
	VMOVUPS 0(SP)(R10*1), Y0
	EXP2POLY(Y0, 1024(SP)(R10*1), Y3, Y2, Y4, Y5)
	VADDPS Y15, Y3, Y4
	VDIVPS Y4, Y15, Y2
	VMULPS Y2, Y3, Y4
	VMULPS Y2, Y4, Y4
	VMOVUPS (SI), Y1
	VMULPS Y1, Y1, Y0
	VMOVUPS c_g6ca<>(SB), Y3
	VFMADD213PS c_g2c<>(SB), Y0, Y3
	VMULPS Y1, Y3, Y3
	VFMADD213PS Y2, Y3, Y4
	VMULPS (BX), Y4, Y4
	VMOVNTPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ R8
	JNZ gelub_pass2_nt

gelub_pass2_end:

	TESTQ CX, CX
	JNZ gelub_block

gelub_done:
	TESTQ R12, R12
	JZ 2(PC)
	SFENCE
	VZEROUPPER
	RET

// func siluAVX(dst, x *float32, n int, nt int)
// dst = x / (1 + exp(-x)) = x / (1 + 2^(-x log2e)).
TEXT ·siluAVX(SB), $2048-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ nt+24(FP), R12
	SHRQ $3, CX
	JZ silu_done

silu_block:
	BLOCK
	EXP2LOADARG
	VMOVUPS c_nlog2e<>(SB), Y9
	MOVQ DX, R8
	MOVQ SI, R9
	XORQ R10, R10

silu_pass1:
	VMULPS (R9), Y9, Y0
	EXP2ARG(Y0, Y3, Y4)
	VMOVUPS Y0, 0(SP)(R10*1)
	VMOVUPS Y3, 1024(SP)(R10*1)
	ADDQ $32, R9
	ADDQ $32, R10
	DECQ R8
	JNZ silu_pass1

	EXP2LOADPOLY
	MOVQ DX, R8
	XORQ R10, R10

	TESTQ R12, R12
	JNZ silu_pass2_nt

silu_pass2:
	VMOVUPS 0(SP)(R10*1), Y0
	EXP2POLY(Y0, 1024(SP)(R10*1), Y1, Y2, Y3, Y4)
	VADDPS Y15, Y1, Y1
	VMOVUPS (SI), Y5
	VDIVPS Y1, Y5, Y5
	VMOVUPS Y5, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ R8
	JNZ silu_pass2
	JMP silu_pass2_end

silu_pass2_nt:
	VMOVUPS 0(SP)(R10*1), Y0
	EXP2POLY(Y0, 1024(SP)(R10*1), Y1, Y2, Y3, Y4)
	VADDPS Y15, Y1, Y1
	VMOVUPS (SI), Y5
	VDIVPS Y1, Y5, Y5
	VMOVNTPS Y5, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ R8
	JNZ silu_pass2_nt

silu_pass2_end:

	TESTQ CX, CX
	JNZ silu_block

silu_done:
	TESTQ R12, R12
	JZ 2(PC)
	SFENCE
	VZEROUPPER
	RET

// func siluBackwardAVX(dx, dy, x *float32, n int, nt int)
// With e = exp(-x) and s = 1/(1+e) (so 1-s = e s): dx = dy s (1 + x(1-s)).
TEXT ·siluBackwardAVX(SB), $2048-40
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), BX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ nt+32(FP), R12
	SHRQ $3, CX
	JZ silub_done

silub_block:
	BLOCK
	EXP2LOADARG
	VMOVUPS c_nlog2e<>(SB), Y9
	MOVQ DX, R8
	MOVQ SI, R9
	XORQ R10, R10

silub_pass1:
	VMULPS (R9), Y9, Y0
	EXP2ARG(Y0, Y3, Y4)
	VMOVUPS Y0, 0(SP)(R10*1)
	VMOVUPS Y3, 1024(SP)(R10*1)
	ADDQ $32, R9
	ADDQ $32, R10
	DECQ R8
	JNZ silub_pass1

	EXP2LOADPOLY
	MOVQ DX, R8
	XORQ R10, R10

	TESTQ R12, R12
	JNZ silub_pass2_nt

silub_pass2:
	VMOVUPS 0(SP)(R10*1), Y0
	EXP2POLY(Y0, 1024(SP)(R10*1), Y3, Y2, Y4, Y5)
	VADDPS Y15, Y3, Y4
	VDIVPS Y4, Y15, Y2
	VMULPS Y2, Y3, Y4
	VMOVUPS (SI), Y1
	VFMADD213PS Y15, Y1, Y4
	VMULPS Y2, Y4, Y4
	VMULPS (BX), Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ R8
	JNZ silub_pass2
	JMP silub_pass2_end

silub_pass2_nt:
	VMOVUPS 0(SP)(R10*1), Y0
	EXP2POLY(Y0, 1024(SP)(R10*1), Y3, Y2, Y4, Y5)
	VADDPS Y15, Y3, Y4
	VDIVPS Y4, Y15, Y2
	VMULPS Y2, Y3, Y4
	VMOVUPS (SI), Y1
	VFMADD213PS Y15, Y1, Y4
	VMULPS Y2, Y4, Y4
	VMULPS (BX), Y4, Y4
	VMOVNTPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ R8
	JNZ silub_pass2_nt

silub_pass2_end:

	TESTQ CX, CX
	JNZ silub_block

silub_done:
	TESTQ R12, R12
	JZ 2(PC)
	SFENCE
	VZEROUPPER
	RET

// WIDEN converts the eight float32 lanes of S (XS its low half) to float64 in T0 (low four) and
// T1 (high four), XT1 being T1's low half.
#define WIDEN(S, XS, T0, T1, XT1) \
	VCVTPS2PD XS, T0; \
	VEXTRACTF128 $1, S, XT1; \
	VCVTPS2PD XT1, T1

// HSUMY7 adds the four float64 lanes of Y7 into the low lane of X7 (X8 scratch).
#define HSUMY7 \
	VEXTRACTF128 $1, Y7, X8; \
	VADDPD X8, X7, X7; \
	VPERMILPD $1, X7, X8; \
	VADDSD X8, X7, X7

// func expSumAVX(dst, x *float32, n int, shift float32, bounded bool) float64
// dst = exp(x - shift), returning the sum of dst accumulated in float64 lanes (Y7, Y8). With
// bounded (the caller guarantees x <= shift, so every value is at most 1), each block's values are
// first summed in eight float32 lanes (Y6), at most 32 values per lane, and the lane sums added to
// the float64 lanes once per block: a float32 partial sum of k values in [0, 1] is within
// (k-1)·2⁻²⁴ of its exact value relative to it, so the sum is within 2e-6 relative (32 values),
// and the conversions that cost two of the ten cycles a vector takes are paid once per block.
TEXT ·expSumAVX(SB), $2048-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVBLZX bounded+28(FP), R11
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	SHRQ $3, CX
	JZ exps_done

exps_block:
	BLOCK
	EXPLOADARG
	VBROADCASTSS shift+24(FP), Y9
	MOVQ DX, R8
	MOVQ SI, R9
	XORQ R10, R10

exps_pass1:
	VMOVUPS (R9), Y0
	VSUBPS Y9, Y0, Y0
	EXPARG(Y0, Y3, Y4)
	VMOVUPS Y0, 0(SP)(R10*1)
	VMOVUPS Y3, 1024(SP)(R10*1)
	ADDQ $32, R9
	ADDQ $32, R10
	DECQ R8
	JNZ exps_pass1

	EXPLOADPOLY
	MOVQ DX, R8
	XORQ R10, R10
	MOVQ R9, SI
	TESTQ R11, R11
	JNZ exps_pass2b

exps_pass2:
	VMOVUPS 0(SP)(R10*1), Y0
	EXPPOLY(Y0, 1024(SP)(R10*1), Y1, Y2, Y3, Y4)
	VMOVUPS Y1, (DI)
	WIDEN(Y1, X1, Y2, Y3, X3)
	VADDPD Y2, Y7, Y7
	VADDPD Y3, Y8, Y8
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ R8
	JNZ exps_pass2
	JMP exps_next

exps_pass2b:
	VXORPS Y6, Y6, Y6

exps_pass2b_loop:
	VMOVUPS 0(SP)(R10*1), Y0
	EXPPOLY(Y0, 1024(SP)(R10*1), Y1, Y2, Y3, Y4)
	VMOVUPS Y1, (DI)
	VADDPS Y1, Y6, Y6
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ R8
	JNZ exps_pass2b_loop
	WIDEN(Y6, X6, Y2, Y3, X3)
	VADDPD Y2, Y7, Y7
	VADDPD Y3, Y8, Y8

exps_next:
	TESTQ CX, CX
	JNZ exps_block

exps_done:
	VADDPD Y8, Y7, Y7
	HSUMY7
	VMOVSD X7, ret+32(FP)
	VZEROUPPER
	RET

// func reluAVX(dst, x *float32, n int, nt int)
// dst = max(x, 0): VMAXPS returns its second source (+0) when x is NaN or ±0, as ReLU's x > 0 test.
TEXT ·reluAVX(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ nt+24(FP), R12
	SHRQ $3, CX
	JZ relu_done
	VXORPS Y9, Y9, Y9

	TESTQ R12, R12
	JNZ relu_loop_nt

relu_loop:
	VMOVUPS (SI), Y0
	VMAXPS Y9, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ relu_loop
	JMP relu_loop_end

relu_loop_nt:
	VMOVUPS (SI), Y0
	VMAXPS Y9, Y0, Y0
	VMOVNTPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ relu_loop_nt

relu_loop_end:

relu_done:
	TESTQ R12, R12
	JZ 2(PC)
	SFENCE
	VZEROUPPER
	RET

// func reluBackwardAVX(dx, dy, x *float32, n int, nt int)
// dx = dy & (x > 0 ? all ones : 0), the compare ordered (NaN gives 0).
TEXT ·reluBackwardAVX(SB), NOSPLIT, $0-40
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), BX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ nt+32(FP), R12
	SHRQ $3, CX
	JZ relub_done
	VXORPS Y9, Y9, Y9

	TESTQ R12, R12
	JNZ relub_loop_nt

relub_loop:
	VMOVUPS (SI), Y0
	VCMPPS $0x1e, Y9, Y0, Y0
	VANDPS (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ relub_loop
	JMP relub_loop_end

relub_loop_nt:
	VMOVUPS (SI), Y0
	VCMPPS $0x1e, Y9, Y0, Y0
	VANDPS (BX), Y0, Y0
	VMOVNTPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ relub_loop_nt

relub_loop_end:

relub_done:
	TESTQ R12, R12
	JZ 2(PC)
	SFENCE
	VZEROUPPER
	RET

// func maxAVX(x *float32, n int) float32
// The largest of x[:n] (n a positive multiple of 8) as rowMax computes it: each lane of the four
// accumulators starts at x[0] and VMAXPS keeps the running maximum (its second source) when x is
// NaN, so a NaN counts only when it is x[0]. Four accumulators keep four VMAXPS in flight.
TEXT ·maxAVX(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS (SI), Y0
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	VMOVAPS Y0, Y4
	SHRQ $3, CX
	MOVQ CX, DX
	SHRQ $2, DX
	JZ max_tail

max_loop4:
	VMOVUPS (SI), Y5
	VMOVUPS 32(SI), Y6
	VMOVUPS 64(SI), Y7
	VMOVUPS 96(SI), Y8
	VMAXPS Y0, Y5, Y0
	VMAXPS Y2, Y6, Y2
	VMAXPS Y3, Y7, Y3
	VMAXPS Y4, Y8, Y4
	ADDQ $128, SI
	DECQ DX
	JNZ max_loop4

max_tail:
	ANDQ $3, CX
	JZ max_reduce

max_loop1:
	VMOVUPS (SI), Y1
	VMAXPS Y0, Y1, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ max_loop1

max_reduce:
	VMAXPS Y2, Y0, Y0
	VMAXPS Y4, Y3, Y3
	VMAXPS Y3, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X0, X1, X0
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// SCALELOOP stores a times the vectors at SI to DI with the store STORE (VMOVUPS, or VMOVNTPS
// for an aligned DI), four vectors an iteration for the DX groups of four, then one at a time for
// the CX left; L4, LT, L1 and LD are its labels.
#define SCALELOOP(STORE, L4, LT, L1, LD) \
	TESTQ DX, DX; \
	JZ LT; \
L4: \
	VMULPS (SI), Y0, Y1; \
	VMULPS 32(SI), Y0, Y2; \
	VMULPS 64(SI), Y0, Y3; \
	VMULPS 96(SI), Y0, Y4; \
	STORE Y1, (DI); \
	STORE Y2, 32(DI); \
	STORE Y3, 64(DI); \
	STORE Y4, 96(DI); \
	ADDQ $128, SI; \
	ADDQ $128, DI; \
	DECQ DX; \
	JNZ L4; \
LT: \
	TESTQ CX, CX; \
	JZ LD; \
L1: \
	VMULPS (SI), Y0, Y1; \
	STORE Y1, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	DECQ CX; \
	JNZ L1; \
LD:

// func scaleAVX(dst, src *float32, n int, a float32, nt int)
// dst[:n] = a src[:n] (dst may be src), n a multiple of 8; with nt != 0 through non-temporal
// stores (dst 32-byte aligned), the caller fencing (sfenceAVX) once after its last call.
TEXT ·scaleAVX(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS a+24(FP), Y0
	MOVQ nt+32(FP), R8
	SHRQ $3, CX
	MOVQ CX, DX
	SHRQ $2, DX
	ANDQ $3, CX
	TESTQ R8, R8
	JNZ scale_nt
	SCALELOOP(VMOVUPS, scale_loop4, scale_tail, scale_loop1, scale_done)
	VZEROUPPER
	RET
scale_nt:
	SCALELOOP(VMOVNTPS, scalent_loop4, scalent_tail, scalent_loop1, scalent_done)
	VZEROUPPER
	RET

// func addAVX(dst, a, b *float32, n int)
// dst = a + b, n a multiple of 8; dst may alias a or b (each element is read before it is written).
TEXT ·addAVX(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), BX
	MOVQ n+24(FP), CX
	MOVQ CX, DX
	SHRQ $5, DX
	JZ add_tail

add_loop4:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS (BX), Y0, Y0
	VADDPS 32(BX), Y1, Y1
	VADDPS 64(BX), Y2, Y2
	VADDPS 96(BX), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, BX
	ADDQ $128, DI
	DECQ DX
	JNZ add_loop4

add_tail:
	ANDQ $31, CX
	SHRQ $3, CX
	JZ add_done

add_loop1:
	VMOVUPS (SI), Y0
	VADDPS (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ add_loop1

add_done:
	VZEROUPPER
	RET

// func addBothAVX(x, y *float32, n int)
// x = y = x + y, n a multiple of 8: the sum is stored to both arrays in the pass that reads them.
TEXT ·addBothAVX(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ CX, DX
	SHRQ $5, DX
	JZ addb_tail

addb_loop4:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y0, (SI)
	VMOVUPS Y1, 32(SI)
	VMOVUPS Y2, 64(SI)
	VMOVUPS Y3, 96(SI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ DX
	JNZ addb_loop4

addb_tail:
	ANDQ $31, CX
	SHRQ $3, CX
	JZ addb_done

addb_loop1:
	VMOVUPS (DI), Y0
	VADDPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ addb_loop1

addb_done:
	VZEROUPPER
	RET

// func prefetchAVX(x *float32, n int)
// Prefetches the 64-byte lines of x[:n] (n >= 1) into the caches (PREFETCHT0 never faults).
TEXT ·prefetchAVX(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ (SI)(CX*4), CX

prefetch_loop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JLT prefetch_loop
	RET

// func expSumBoundedAVX(dst, x *float32, n int, shift float32) float64
// expSumAVX for x <= shift (every value at most 1, no upper clamp needed) and n a multiple of 16:
// one pass, two vectors at a time with their steps interleaved. The polynomial's dependent steps
// take about 40 cycles a vector, more than the out-of-order window hides one vector at a time; two
// independent chains side by side keep the FMA units busy. The polynomial's constants are memory
// operands (L1 hits) to leave the registers to the two chains; the float32 lane sums go to the
// float64 ones on the stack every 32 vectors, as in expSumAVX's bounded mode.
TEXT ·expSumBoundedAVX(SB), NOSPLIT, $64-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPD Y0, Y0, Y0
	VMOVUPD Y0, 0(SP)
	VMOVUPD Y0, 32(SP)
	VBROADCASTSS shift+24(FP), Y13
	VMOVUPS c_explo<>(SB), Y14
	VMOVUPS c_magic<>(SB), Y12
	SHRQ $4, CX
	JZ expb_done

expb_block:
	MOVQ CX, DX
	CMPQ DX, $16
	JLE 2(PC)
	MOVQ $16, DX
	SUBQ DX, CX
	VXORPS Y15, Y15, Y15

expb_loop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y6
	VSUBPS Y13, Y0, Y0
	VSUBPS Y13, Y6, Y6
	VMAXPS Y0, Y14, Y0
	VMAXPS Y6, Y14, Y6
	VMOVAPS Y12, Y1
	VMOVAPS Y12, Y7
	VFMADD231PS c_log2e<>(SB), Y0, Y1
	VFMADD231PS c_log2e<>(SB), Y6, Y7
	VSUBPS Y12, Y1, Y2
	VSUBPS Y12, Y7, Y8
	VFNMADD231PS c_ln2hi<>(SB), Y2, Y0
	VFNMADD231PS c_ln2hi<>(SB), Y8, Y6
	VFNMADD231PS c_ln2lo<>(SB), Y2, Y0
	VFNMADD231PS c_ln2lo<>(SB), Y8, Y6
	VMULPS Y0, Y0, Y2
	VMULPS Y6, Y6, Y8
	VMOVUPS c_p0<>(SB), Y3
	VMOVUPS c_p0<>(SB), Y9
	VFMADD213PS c_p1<>(SB), Y0, Y3
	VFMADD213PS c_p1<>(SB), Y6, Y9
	VMOVUPS c_p2<>(SB), Y5
	VMOVUPS c_p2<>(SB), Y11
	VFMADD213PS c_p3<>(SB), Y0, Y5
	VFMADD213PS c_p3<>(SB), Y6, Y11
	VMOVUPS c_p4<>(SB), Y4
	VMOVUPS c_p4<>(SB), Y10
	VFMADD213PS c_p5<>(SB), Y0, Y4
	VFMADD213PS c_p5<>(SB), Y6, Y10
	VFMADD213PS Y5, Y2, Y3
	VFMADD213PS Y11, Y8, Y9
	VFMADD213PS Y4, Y2, Y3
	VFMADD213PS Y10, Y8, Y9
	VADDPS c_one<>(SB), Y0, Y0
	VADDPS c_one<>(SB), Y6, Y6
	VFMADD213PS Y0, Y2, Y3
	VFMADD213PS Y6, Y8, Y9
	VPSLLD $23, Y1, Y1
	VPSLLD $23, Y7, Y7
	VMULPS Y1, Y3, Y3
	VMULPS Y7, Y9, Y9
	VMOVUPS Y3, 0(DI)
	VMOVUPS Y9, 32(DI)
	VADDPS Y3, Y15, Y15
	VADDPS Y9, Y15, Y15
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ DX
	JNZ expb_loop
	WIDEN(Y15, X15, Y0, Y1, X1)
	VADDPD 0(SP), Y0, Y0
	VADDPD 32(SP), Y1, Y1
	VMOVUPD Y0, 0(SP)
	VMOVUPD Y1, 32(SP)
	TESTQ CX, CX
	JNZ expb_block

expb_done:
	VMOVUPD 0(SP), Y7
	VADDPD 32(SP), Y7, Y7
	HSUMY7
	VMOVSD X7, ret+32(FP)
	VZEROUPPER
	RET

// func sfenceAVX()
// Orders the non-temporal stores before it (scaleAVX's with nt) before every store after it.
TEXT ·sfenceAVX(SB), NOSPLIT, $0-0
	SFENCE
	RET

// func sgdAVX(p, grad *float32, n int, lr float32)
// p -= lr*g (a product, then a difference: the scalar code's two roundings, no FMA), n a multiple
// of 8, two vectors an iteration.
TEXT ·sgdAVX(SB), NOSPLIT, $0-28
	MOVQ p+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS lr+24(FP), Y7
	SHRQ $3, CX
	MOVQ CX, DX
	SHRQ $1, DX
	JZ sgd_tail

sgd_loop2:
	VMULPS (SI), Y7, Y0
	VMULPS 32(SI), Y7, Y1
	VMOVUPS (DI), Y2
	VMOVUPS 32(DI), Y3
	VSUBPS Y0, Y2, Y2
	VSUBPS Y1, Y3, Y3
	VMOVUPS Y2, (DI)
	VMOVUPS Y3, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ DX
	JNZ sgd_loop2

sgd_tail:
	ANDQ $1, CX
	JZ sgd_done
	VMULPS (SI), Y7, Y0
	VMOVUPS (DI), Y2
	VSUBPS Y0, Y2, Y2
	VMOVUPS Y2, (DI)

sgd_done:
	VZEROUPPER
	RET

// func adamAVX(p, grad, m, v *float32, n int, c *[7]float32)
// Adam.Step's loop, n a multiple of 8, with c = [β1, 1-β1, β2, 1-β2, ε, stepSize, 1/sqrt(bc2)]:
// m = β1 m + (1-β1) g; v = β2 v + ((1-β2) g) g; p -= (stepSize m) / (sqrt(v) (1/sqrt(bc2)) + ε),
// each product, sum and quotient rounded as the scalar code rounds it (no FMA; VSQRTPS is
// correctly rounded, as float32(math.Sqrt(float64(v))) is).
TEXT ·adamAVX(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX
	VBROADCASTSS 0(AX), Y8
	VBROADCASTSS 4(AX), Y9
	VBROADCASTSS 8(AX), Y10
	VBROADCASTSS 12(AX), Y11
	VBROADCASTSS 16(AX), Y12
	VBROADCASTSS 20(AX), Y13
	VBROADCASTSS 24(AX), Y14
	SHRQ $3, CX
	JZ adam_done

adam_loop:
	VMOVUPS (SI), Y0
	VMULPS (R8), Y8, Y1
	VMULPS Y0, Y9, Y2
	VADDPS Y2, Y1, Y1
	VMOVUPS Y1, (R8)
	VMULPS (R9), Y10, Y3
	VMULPS Y0, Y11, Y4
	VMULPS Y0, Y4, Y4
	VADDPS Y4, Y3, Y3
	VMOVUPS Y3, (R9)
	VSQRTPS Y3, Y3
	VMULPS Y14, Y3, Y3
	VADDPS Y12, Y3, Y3
	VMULPS Y1, Y13, Y1
	VDIVPS Y3, Y1, Y1
	VMOVUPS (DI), Y5
	VSUBPS Y1, Y5, Y5
	VMOVUPS Y5, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNZ adam_loop

adam_done:
	VZEROUPPER
	RET

// func mseAVX(dy, y, t *float32, n int, c float64) float64
// MSE's loop, n a multiple of 8: returns Σ (y-t)² in float64 (d = float64(y) - float64(t), d*d
// rounded and added as the scalar code does, in four partial sums of lanes: Y8/Y9 the elements
// 16i..16i+7, Y10/Y11 16i+8..16i+15, added in a fixed order at the end), and if dy is not nil
// writes dy = float32(d*c) with c = 2/n (the scalar code's 2*d*inv: multiplying by 2 is exact).
// Four conversions a vector: the scalar loop ran no faster with four partial sums than with one,
// so its cost was converting one element at a time, not the chain of adds.
TEXT ·mseAVX(SB), NOSPLIT, $0-48
	MOVQ dy+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ t+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSD c+32(FP), Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	SHRQ $3, CX
	MOVQ CX, R8
	SHRQ $1, R8
	JZ mse_tail

mse_loop2:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VCVTPS2PD 32(SI), Y2
	VCVTPS2PD 48(SI), Y3
	VCVTPS2PD (DX), Y4
	VCVTPS2PD 16(DX), Y5
	VSUBPD Y4, Y0, Y0
	VSUBPD Y5, Y1, Y1
	VCVTPS2PD 32(DX), Y4
	VCVTPS2PD 48(DX), Y5
	VSUBPD Y4, Y2, Y2
	VSUBPD Y5, Y3, Y3
	VMULPD Y0, Y0, Y4
	VADDPD Y4, Y8, Y8
	VMULPD Y1, Y1, Y5
	VADDPD Y5, Y9, Y9
	VMULPD Y2, Y2, Y4
	VADDPD Y4, Y10, Y10
	VMULPD Y3, Y3, Y5
	VADDPD Y5, Y11, Y11
	TESTQ DI, DI
	JZ mse_next2
	VMULPD Y7, Y0, Y0
	VMULPD Y7, Y1, Y1
	VMULPD Y7, Y2, Y2
	VMULPD Y7, Y3, Y3
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VCVTPD2PSY Y2, X2
	VCVTPD2PSY Y3, X3
	VMOVUPS X0, (DI)
	VMOVUPS X1, 16(DI)
	VMOVUPS X2, 32(DI)
	VMOVUPS X3, 48(DI)
	ADDQ $64, DI

mse_next2:
	ADDQ $64, SI
	ADDQ $64, DX
	DECQ R8
	JNZ mse_loop2

mse_tail:
	ANDQ $1, CX
	JZ mse_sum
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VCVTPS2PD (DX), Y4
	VCVTPS2PD 16(DX), Y5
	VSUBPD Y4, Y0, Y0
	VSUBPD Y5, Y1, Y1
	VMULPD Y0, Y0, Y4
	VADDPD Y4, Y8, Y8
	VMULPD Y1, Y1, Y5
	VADDPD Y5, Y9, Y9
	TESTQ DI, DI
	JZ mse_sum
	VMULPD Y7, Y0, Y0
	VMULPD Y7, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS X0, (DI)
	VMOVUPS X1, 16(DI)

mse_sum:
	VADDPD Y10, Y8, Y8
	VADDPD Y11, Y9, Y9
	VADDPD Y9, Y8, Y8
	VEXTRACTF128 $1, Y8, X1
	VADDPD X1, X8, X8
	VUNPCKHPD X8, X8, X1
	VADDSD X1, X8, X8
	VMOVSD X8, ret+40(FP)
	VZEROUPPER
	RET

// The AVX-512 kernels below compute what the AVX2 ones above do, with the same operations in the
// same order on sixteen lanes, so they give the same bits (only the float64 sum of expSumMax's
// exponentials is added in another order, so softmax's outputs may differ in the last bit). They
// use AVX-512F instructions alone (cpufeat.AVX512F) and take n a multiple of 32: two vectors a
// pass, each one chain of dependent steps in one pass from load to store, with every constant in a
// register (Z16 and up). On AMD Zen 4, which runs a 512-bit operation as one micro-op on its 256-bit units
// in two cycles, a zmm chain holds twice the elements of a ymm one in the same scheduler entries:
// the AVX2 kernels' chains fill the out-of-order window before the arithmetic units are busy, and
// these come nearer the units' throughput. On this machine's Zen 4 (BenchmarkAVX512, four runs of
// 200-1000 alternating pairs): GELU 1.06-1.58x as fast, its gradient 1.11-1.48x, SiLU 1.19-1.72x,
// its gradient 1.19-1.48x, softmax 1.37-1.40x; each run is near one end or the other, the low end
// where the host keeps the units busy with other work (the AVX2 kernels, which leave them idle
// part of the time, lose less then). On Intel's AVX-512 cores each operation does twice the work.

// ZEXP2LOAD broadcasts the constants of ZEXP2 into Z16..Z26 (Z26 = 1, Z25 = ln 2).
#define ZEXP2LOAD \
	VBROADCASTSS c_ylo<>(SB), Z16; \
	VBROADCASTSS c_yhi<>(SB), Z17; \
	VBROADCASTSS c_magic<>(SB), Z18; \
	VBROADCASTSS c_a0<>(SB), Z19; \
	VBROADCASTSS c_a1<>(SB), Z20; \
	VBROADCASTSS c_a2<>(SB), Z21; \
	VBROADCASTSS c_a3<>(SB), Z22; \
	VBROADCASTSS c_a4<>(SB), Z23; \
	VBROADCASTSS c_a5<>(SB), Z24; \
	VBROADCASTSS c_ln2<>(SB), Z25; \
	VBROADCASTSS c_one<>(SB), Z26

// ZEXP2 sets E = 2^y from Y = y (clobbered): EXP2ARG then EXP2POLY on zmm registers, T, N, R2, A
// and B scratch.
#define ZEXP2(Y, E, T, N, R2, A, B) \
	VMAXPS Y, Z16, Y; \
	VMINPS Y, Z17, Y; \
	VADDPS Z18, Y, T; \
	VSUBPS Z18, T, N; \
	VSUBPS N, Y, Y; \
	VMULPS Y, Y, R2; \
	VMOVAPS Z19, E; \
	VFMADD213PS Z20, Y, E; \
	VMOVAPS Z21, B; \
	VFMADD213PS Z22, Y, B; \
	VMOVAPS Z23, A; \
	VFMADD213PS Z24, Y, A; \
	VFMADD213PS B, R2, E; \
	VFMADD213PS A, R2, E; \
	VFMADD213PS Z26, Z25, Y; \
	VFMADD213PS Y, R2, E; \
	VPSLLD $23, T, T; \
	VMULPS T, E, E

// ZGELUE sets E = exp(-2u) from X = x (GELUY then ZEXP2; c_gk1, c_gk0 in Z27, Z28), OUT, T, N, R2,
// A and B scratch.
#define ZGELUE(X, OUT, T, N, R2, A, B, E) \
	VMULPS X, X, R2; \
	VMOVAPS Z27, OUT; \
	VFMADD213PS Z28, R2, OUT; \
	VMULPS X, OUT, OUT; \
	ZEXP2(OUT, E, T, N, R2, A, B)

// ZGELU sets OUT = x / (1 + exp(-2u)) from X = x, as geluAVX.
#define ZGELU(X, OUT, T, N, R2, A, B, E) \
	ZGELUE(X, OUT, T, N, R2, A, B, E); \
	VADDPS Z26, E, E; \
	VDIVPS E, X, OUT

// ZGELUB sets A = gelu'(x) from X = x, as geluBackwardAVX (c_g6ca, c_g2c in Z29, Z30).
#define ZGELUB(X, OUT, T, N, R2, A, B, E) \
	ZGELUE(X, OUT, T, N, R2, A, B, E); \
	VADDPS Z26, E, A; \
	VDIVPS A, Z26, B; \
	VMULPS B, E, A; \
	VMULPS B, A, A; \
	VMULPS X, X, R2; \
	VMOVAPS Z29, E; \
	VFMADD213PS Z30, R2, E; \
	VMULPS X, E, E; \
	VFMADD213PS B, E, A

// ZSILU sets OUT = x / (1 + exp(-x)) from X = x, as siluAVX (c_nlog2e in Z27).
#define ZSILU(X, OUT, T, N, R2, A, B, E) \
	VMULPS X, Z27, OUT; \
	ZEXP2(OUT, E, T, N, R2, A, B); \
	VADDPS Z26, E, E; \
	VDIVPS E, X, OUT

// ZSILUB sets A = silu'(x) from X = x, as siluBackwardAVX.
#define ZSILUB(X, OUT, T, N, R2, A, B, E) \
	VMULPS X, Z27, OUT; \
	ZEXP2(OUT, E, T, N, R2, A, B); \
	VADDPS Z26, E, A; \
	VDIVPS A, Z26, B; \
	VMULPS B, E, A; \
	VFMADD213PS Z26, X, A; \
	VMULPS B, A, A

// ZFWD is one pass of a forward kernel: OUT = OP(x) for the two vectors at SI, stored at DI with
// STORE (VMOVUPS, or VMOVNTPS for a 64-byte aligned DI).
#define ZFWD(OP, STORE) \
	VMOVUPS (SI), Z0; \
	VMOVUPS 64(SI), Z8; \
	OP(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7); \
	OP(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15); \
	STORE Z1, (DI); \
	STORE Z9, 64(DI); \
	ADDQ $128, SI; \
	ADDQ $128, DI

// ZBWD is one pass of a gradient kernel: dx = dy OP(x), x at SI, dy at BX, dx at DI.
#define ZBWD(OP, STORE) \
	VMOVUPS (SI), Z0; \
	VMOVUPS 64(SI), Z8; \
	OP(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7); \
	OP(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15); \
	VMULPS (BX), Z5, Z5; \
	VMULPS 64(BX), Z13, Z13; \
	STORE Z5, (DI); \
	STORE Z13, 64(DI); \
	ADDQ $128, SI; \
	ADDQ $128, BX; \
	ADDQ $128, DI

// func geluAVX512(dst, x *float32, n int, nt int)
TEXT ·geluAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ nt+24(FP), R12
	SHRQ $5, CX
	JZ geluz_done
	ZEXP2LOAD
	VBROADCASTSS c_gk1<>(SB), Z27
	VBROADCASTSS c_gk0<>(SB), Z28
	TESTQ R12, R12
	JNZ geluz_nt

geluz_loop:
	ZFWD(ZGELU, VMOVUPS)
	DECQ CX
	JNZ geluz_loop
	JMP geluz_done

geluz_nt:
	ZFWD(ZGELU, VMOVNTPS)
	DECQ CX
	JNZ geluz_nt
	SFENCE

geluz_done:
	VZEROUPPER
	RET

// func geluBackwardAVX512(dx, dy, x *float32, n int, nt int)
TEXT ·geluBackwardAVX512(SB), NOSPLIT, $0-40
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), BX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ nt+32(FP), R12
	SHRQ $5, CX
	JZ gelubz_done
	ZEXP2LOAD
	VBROADCASTSS c_gk1<>(SB), Z27
	VBROADCASTSS c_gk0<>(SB), Z28
	VBROADCASTSS c_g6ca<>(SB), Z29
	VBROADCASTSS c_g2c<>(SB), Z30
	TESTQ R12, R12
	JNZ gelubz_nt

gelubz_loop:
	ZBWD(ZGELUB, VMOVUPS)
	DECQ CX
	JNZ gelubz_loop
	JMP gelubz_done

gelubz_nt:
	ZBWD(ZGELUB, VMOVNTPS)
	DECQ CX
	JNZ gelubz_nt
	SFENCE

gelubz_done:
	VZEROUPPER
	RET

// func siluAVX512(dst, x *float32, n int, nt int)
TEXT ·siluAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ nt+24(FP), R12
	SHRQ $5, CX
	JZ siluz_done
	ZEXP2LOAD
	VBROADCASTSS c_nlog2e<>(SB), Z27
	TESTQ R12, R12
	JNZ siluz_nt

siluz_loop:
	ZFWD(ZSILU, VMOVUPS)
	DECQ CX
	JNZ siluz_loop
	JMP siluz_done

siluz_nt:
	ZFWD(ZSILU, VMOVNTPS)
	DECQ CX
	JNZ siluz_nt
	SFENCE

siluz_done:
	VZEROUPPER
	RET

// func siluBackwardAVX512(dx, dy, x *float32, n int, nt int)
TEXT ·siluBackwardAVX512(SB), NOSPLIT, $0-40
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), BX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ nt+32(FP), R12
	SHRQ $5, CX
	JZ silubz_done
	ZEXP2LOAD
	VBROADCASTSS c_nlog2e<>(SB), Z27
	TESTQ R12, R12
	JNZ silubz_nt

silubz_loop:
	ZBWD(ZSILUB, VMOVUPS)
	DECQ CX
	JNZ silubz_loop
	JMP silubz_done

silubz_nt:
	ZBWD(ZSILUB, VMOVNTPS)
	DECQ CX
	JNZ silubz_nt
	SFENCE

silubz_done:
	VZEROUPPER
	RET

// func expSumMaxNextAVX512(dst, x *float32, n int, shift float32, next, nextMax *float32) float64
// (AVX-512F only, as every kernel here: the zeroing, extracts and reductions use no DQ or VL form.)
// expSumBoundedAVX on zmm registers, n a multiple of 32 (the float32 lane sums, Z15, go to the
// float64 ones, Z20 and Z21, every 16 passes: 32 values a lane), and in the same pass the maximum
// of next[:n] into *nextMax as maxAVX computes it (lanes seeded with next[0], a NaN kept only
// there). Softmax passes the next row as next, so that its loads, which miss the caches where the
// rows stream from memory, overlap this row's arithmetic instead of stalling a pass of their own;
// other callers pass x.
TEXT ·expSumMaxNextAVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ next+32(FP), R8
	VBROADCASTSS (R8), Z28
	VMOVAPS Z28, Z29
	VPXORQ Z20, Z20, Z20
	VPXORQ Z21, Z21, Z21
	SHRQ $5, CX
	JZ expbz_done
	VBROADCASTSS shift+24(FP), Z13
	VBROADCASTSS c_explo<>(SB), Z14
	VBROADCASTSS c_magic<>(SB), Z12
	VBROADCASTSS c_log2e<>(SB), Z16
	VBROADCASTSS c_ln2hi<>(SB), Z17
	VBROADCASTSS c_ln2lo<>(SB), Z18
	VBROADCASTSS c_p0<>(SB), Z19
	VBROADCASTSS c_p1<>(SB), Z22
	VBROADCASTSS c_p2<>(SB), Z23
	VBROADCASTSS c_p3<>(SB), Z24
	VBROADCASTSS c_p4<>(SB), Z25
	VBROADCASTSS c_p5<>(SB), Z26
	VBROADCASTSS c_one<>(SB), Z27

expbz_block:
	MOVQ CX, DX
	CMPQ DX, $16
	JLE 2(PC)
	MOVQ $16, DX
	SUBQ DX, CX
	VPXORD Z15, Z15, Z15

expbz_loop:
	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z6
	VMOVUPS 0(R8), Z30
	VMOVUPS 64(R8), Z31
	VMAXPS Z28, Z30, Z28
	VMAXPS Z29, Z31, Z29
	VSUBPS Z13, Z0, Z0
	VSUBPS Z13, Z6, Z6
	VMAXPS Z0, Z14, Z0
	VMAXPS Z6, Z14, Z6
	VMOVAPS Z12, Z1
	VMOVAPS Z12, Z7
	VFMADD231PS Z16, Z0, Z1
	VFMADD231PS Z16, Z6, Z7
	VSUBPS Z12, Z1, Z2
	VSUBPS Z12, Z7, Z8
	VFNMADD231PS Z17, Z2, Z0
	VFNMADD231PS Z17, Z8, Z6
	VFNMADD231PS Z18, Z2, Z0
	VFNMADD231PS Z18, Z8, Z6
	VMULPS Z0, Z0, Z2
	VMULPS Z6, Z6, Z8
	VMOVAPS Z19, Z3
	VMOVAPS Z19, Z9
	VFMADD213PS Z22, Z0, Z3
	VFMADD213PS Z22, Z6, Z9
	VMOVAPS Z23, Z5
	VMOVAPS Z23, Z11
	VFMADD213PS Z24, Z0, Z5
	VFMADD213PS Z24, Z6, Z11
	VMOVAPS Z25, Z4
	VMOVAPS Z25, Z10
	VFMADD213PS Z26, Z0, Z4
	VFMADD213PS Z26, Z6, Z10
	VFMADD213PS Z5, Z2, Z3
	VFMADD213PS Z11, Z8, Z9
	VFMADD213PS Z4, Z2, Z3
	VFMADD213PS Z10, Z8, Z9
	VADDPS Z27, Z0, Z0
	VADDPS Z27, Z6, Z6
	VFMADD213PS Z0, Z2, Z3
	VFMADD213PS Z6, Z8, Z9
	VPSLLD $23, Z1, Z1
	VPSLLD $23, Z7, Z7
	VMULPS Z1, Z3, Z3
	VMULPS Z7, Z9, Z9
	VMOVUPS Z3, 0(DI)
	VMOVUPS Z9, 64(DI)
	VADDPS Z3, Z15, Z15
	VADDPS Z9, Z15, Z15
	ADDQ $128, SI
	ADDQ $128, DI
	ADDQ $128, R8
	DECQ DX
	JNZ expbz_loop
	VCVTPS2PD Y15, Z0
	VEXTRACTF64X4 $1, Z15, Y1
	VCVTPS2PD Y1, Z1
	VADDPD Z0, Z20, Z20
	VADDPD Z1, Z21, Z21
	TESTQ CX, CX
	JNZ expbz_block

expbz_done:
	VMAXPS Z28, Z29, Z28
	VEXTRACTF64X4 $1, Z28, Y0
	VMAXPS Z28, Z0, Z0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X0, X1, X0
	MOVQ nextMax+40(FP), R9
	VMOVSS X0, (R9)
	VADDPD Z21, Z20, Z20
	VEXTRACTF64X4 $1, Z20, Y7
	VADDPD Z20, Z7, Z7
	HSUMY7
	VMOVSD X7, ret+48(FP)
	VZEROUPPER
	RET

// func dot64AVX(a, b *float32, n int) float64
// Σ a b in float64 (two 4-lane partial sums, Y7 and Y8), n a multiple of 8.
TEXT ·dot64AVX(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ n+16(FP), CX
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	SHRQ $3, CX
	JZ dot64_done

dot64_loop:
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VCVTPS2PD (BX), Y4
	VCVTPS2PD 16(BX), Y5
	VFMADD231PD Y4, Y2, Y7
	VFMADD231PD Y5, Y3, Y8
	ADDQ $32, SI
	ADDQ $32, BX
	DECQ CX
	JNZ dot64_loop

dot64_done:
	VADDPD Y8, Y7, Y7
	HSUMY7
	VMOVSD X7, ret+24(FP)
	VZEROUPPER
	RET

// func softmaxGradAVX(dx, dy, y *float32, n int, dot float64)
// dx = float32(y (dy - dot)) in float64, as SoftmaxBackward's scalar loop; dx may alias dy; n a
// multiple of 8.
TEXT ·softmaxGradAVX(SB), NOSPLIT, $0-40
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), BX
	MOVQ y+16(FP), SI
	MOVQ n+24(FP), CX
	VBROADCASTSD dot+32(FP), Y6
	SHRQ $3, CX
	JZ sgrad_done

sgrad_loop:
	VCVTPS2PD (BX), Y0
	VCVTPS2PD 16(BX), Y1
	VSUBPD Y6, Y0, Y0
	VSUBPD Y6, Y1, Y1
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VMULPD Y0, Y2, Y0
	VMULPD Y1, Y3, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS X0, (DI)
	VMOVUPS X1, 16(DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ sgrad_loop

sgrad_done:
	VZEROUPPER
	RET
