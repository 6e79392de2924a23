//go:build amd64 && !purego

#include "textflag.h"

// Constants, eight copies each (one ymm). exp: Cephes expf (Moshier 1989, "Methods and Programs
// for Mathematical Functions", cephes/single/expf.c): x = n ln2 + r with ln2 split in ln2hi + ln2lo,
// exp(r) = 1 + r + r² P(r) with P's coefficients p0..p5, times 2^n built in the exponent bits. gelu:
// -2C, -2C·a, 2C and 6C·a for C = sqrt(2/pi), a = 0.044715 (see GELU).
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
DATA c_gm2c<>+0(SB)/4, $0xbfcc422a
DATA c_gm2c<>+4(SB)/4, $0xbfcc422a
DATA c_gm2c<>+8(SB)/4, $0xbfcc422a
DATA c_gm2c<>+12(SB)/4, $0xbfcc422a
DATA c_gm2c<>+16(SB)/4, $0xbfcc422a
DATA c_gm2c<>+20(SB)/4, $0xbfcc422a
DATA c_gm2c<>+24(SB)/4, $0xbfcc422a
DATA c_gm2c<>+28(SB)/4, $0xbfcc422a
GLOBL c_gm2c<>(SB), RODATA|NOPTR, $32
DATA c_gm2ca<>+0(SB)/4, $0xbd922279
DATA c_gm2ca<>+4(SB)/4, $0xbd922279
DATA c_gm2ca<>+8(SB)/4, $0xbd922279
DATA c_gm2ca<>+12(SB)/4, $0xbd922279
DATA c_gm2ca<>+16(SB)/4, $0xbd922279
DATA c_gm2ca<>+20(SB)/4, $0xbd922279
DATA c_gm2ca<>+24(SB)/4, $0xbd922279
DATA c_gm2ca<>+28(SB)/4, $0xbd922279
GLOBL c_gm2ca<>(SB), RODATA|NOPTR, $32
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

// EXP sets X = exp(X) for eight floats, with T and U as scratch. The argument is first clamped to
// [ln 2⁻¹²⁶, 88] (so that 2^n stays a normal float; NaN passes through the clamps, which return
// their second source operand X when it is unordered). Horner's form 1 + r(1 + r(p5 + r(...)))
// is the Cephes polynomial 1 + r + r² P(r) regrouped.
#define EXP(X, T, U) \
	VMOVUPS c_explo<>(SB), T; \
	VMAXPS X, T, X; \
	VMOVUPS c_exphi<>(SB), T; \
	VMINPS X, T, X; \
	VMULPS c_log2e<>(SB), X, T; \
	VROUNDPS $0, T, T; \
	VFNMADD231PS c_ln2hi<>(SB), T, X; \
	VFNMADD231PS c_ln2lo<>(SB), T, X; \
	VMOVUPS c_p0<>(SB), U; \
	VFMADD213PS c_p1<>(SB), X, U; \
	VFMADD213PS c_p2<>(SB), X, U; \
	VFMADD213PS c_p3<>(SB), X, U; \
	VFMADD213PS c_p4<>(SB), X, U; \
	VFMADD213PS c_p5<>(SB), X, U; \
	VFMADD213PS c_one<>(SB), X, U; \
	VFMADD213PS c_one<>(SB), X, U; \
	VCVTPS2DQ T, T; \
	VPADDD c_bias<>(SB), T, T; \
	VPSLLD $23, T, T; \
	VMULPS T, U, X

// GELUNEG2U sets D = -2u = -2C(x + a x³) = x(-2C - 2Ca x²) from X = x, leaving X2 = x².
#define GELUNEG2U(X, X2, D) \
	VMULPS X, X, X2; \
	VMOVUPS c_gm2ca<>(SB), D; \
	VFMADD213PS c_gm2c<>(SB), X2, D; \
	VMULPS X, D, D

// LOADEXPCONSTS loads the constants of EXPR into Y5..Y15, where they stay for a kernel's loop, so
// that each vector's exp costs two constant loads instead of fourteen (loads, not arithmetic,
// bounded the memory-operand EXP).
#define LOADEXPCONSTS \
	VMOVUPS c_one<>(SB), Y5; \
	VMOVUPS c_p5<>(SB), Y6; \
	VMOVUPS c_p4<>(SB), Y7; \
	VMOVUPS c_p3<>(SB), Y8; \
	VMOVUPS c_p2<>(SB), Y9; \
	VMOVUPS c_p1<>(SB), Y10; \
	VMOVUPS c_p0<>(SB), Y11; \
	VMOVUPS c_ln2hi<>(SB), Y12; \
	VMOVUPS c_log2e<>(SB), Y13; \
	VMOVUPS c_exphi<>(SB), Y14; \
	VMOVUPS c_explo<>(SB), Y15

// EXPR is EXP with the constants in registers (LOADEXPCONSTS; Y5 holds 1.0).
#define EXPR(X, T, U) \
	VMAXPS X, Y15, X; \
	VMINPS X, Y14, X; \
	VMULPS Y13, X, T; \
	VROUNDPS $0, T, T; \
	VFNMADD231PS Y12, T, X; \
	VFNMADD231PS c_ln2lo<>(SB), T, X; \
	VMOVAPS Y11, U; \
	VFMADD213PS Y10, X, U; \
	VFMADD213PS Y9, X, U; \
	VFMADD213PS Y8, X, U; \
	VFMADD213PS Y7, X, U; \
	VFMADD213PS Y6, X, U; \
	VFMADD213PS Y5, X, U; \
	VFMADD213PS Y5, X, U; \
	VCVTPS2DQ T, T; \
	VPADDD c_bias<>(SB), T, T; \
	VPSLLD $23, T, T; \
	VMULPS T, U, X

// func geluAVX(dst, x *float32, n int)
// dst = x / (1 + exp(-2u)), n a multiple of 8.
TEXT ·geluAVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ gelu_done
	LOADEXPCONSTS

gelu_loop:
	VMOVUPS (SI), Y1
	GELUNEG2U(Y1, Y2, Y0)
	EXPR(Y0, Y2, Y3)
	VADDPS Y5, Y0, Y0
	VDIVPS Y0, Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ gelu_loop

gelu_done:
	VZEROUPPER
	RET

// func geluBackwardAVX(dx, dy, x *float32, n int)
// With e = exp(-2u) and s = 1/(1+e) (so 1-s = e s): dx = dy (s + x(2C + 6Ca x²) s(1-s)).
TEXT ·geluBackwardAVX(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), BX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ gelub_done
	LOADEXPCONSTS

gelub_loop:
	VMOVUPS (SI), Y1
	GELUNEG2U(Y1, Y0, Y3)
	EXPR(Y3, Y2, Y4)
	VADDPS Y5, Y3, Y4
	VDIVPS Y4, Y5, Y2
	VMULPS Y2, Y3, Y4
	VMULPS Y2, Y4, Y4
	VMOVUPS c_g6ca<>(SB), Y3
	VFMADD213PS c_g2c<>(SB), Y0, Y3
	VMULPS Y1, Y3, Y3
	VFMADD213PS Y2, Y3, Y4
	VMULPS (BX), Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ gelub_loop

gelub_done:
	VZEROUPPER
	RET

// func siluAVX(dst, x *float32, n int)
// dst = x / (1 + exp(-x)).
TEXT ·siluAVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ silu_done
	LOADEXPCONSTS

silu_loop:
	VMOVUPS (SI), Y1
	VXORPS Y0, Y0, Y0
	VSUBPS Y1, Y0, Y0
	EXPR(Y0, Y2, Y3)
	VADDPS Y5, Y0, Y0
	VDIVPS Y0, Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ silu_loop

silu_done:
	VZEROUPPER
	RET

// func siluBackwardAVX(dx, dy, x *float32, n int)
// With e = exp(-x) and s = 1/(1+e) (so 1-s = e s): dx = dy s (1 + x(1-s)).
TEXT ·siluBackwardAVX(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), BX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ silub_done
	LOADEXPCONSTS

silub_loop:
	VMOVUPS (SI), Y1
	VXORPS Y3, Y3, Y3
	VSUBPS Y1, Y3, Y3
	EXPR(Y3, Y2, Y4)
	VADDPS Y5, Y3, Y4
	VDIVPS Y4, Y5, Y2
	VMULPS Y2, Y3, Y4
	VFMADD213PS Y5, Y1, Y4
	VMULPS Y2, Y4, Y4
	VMULPS (BX), Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ silub_loop

silub_done:
	VZEROUPPER
	RET

// func expSumAVX(dst, x *float32, n int, shift float32) float64
// dst = exp(x - shift), returning the sum of dst accumulated in float64 lanes.
TEXT ·expSumAVX(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS shift+24(FP), Y10
	VXORPD Y11, Y11, Y11
	VXORPD Y12, Y12, Y12
	SHRQ $3, CX
	JZ exps_done

exps_loop:
	VMOVUPS (SI), Y0
	VSUBPS Y10, Y0, Y0
	EXP(Y0, Y1, Y2)
	VMOVUPS Y0, (DI)
	VCVTPS2PD X0, Y1
	VEXTRACTF128 $1, Y0, X2
	VCVTPS2PD X2, Y2
	VADDPD Y1, Y11, Y11
	VADDPD Y2, Y12, Y12
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ exps_loop

exps_done:
	VADDPD Y12, Y11, Y11
	VEXTRACTF128 $1, Y11, X12
	VADDPD X12, X11, X11
	VPERMILPD $1, X11, X12
	VADDSD X12, X11, X11
	VMOVSD X11, ret+32(FP)
	VZEROUPPER
	RET

// func reluAVX(dst, x *float32, n int)
// dst = max(x, 0): VMAXPS returns its second source (+0) when x is NaN or ±0, as ReLU's x > 0 test.
TEXT ·reluAVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ relu_done
	VXORPS Y9, Y9, Y9

relu_loop:
	VMOVUPS (SI), Y0
	VMAXPS Y9, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ relu_loop

relu_done:
	VZEROUPPER
	RET

// func reluBackwardAVX(dx, dy, x *float32, n int)
// dx = dy & (x > 0 ? all ones : 0), the compare ordered (NaN gives 0).
TEXT ·reluBackwardAVX(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), BX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ relub_done
	VXORPS Y9, Y9, Y9

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

relub_done:
	VZEROUPPER
	RET

// func maxAVX(x *float32, n int) float32
// The largest of x[:n] (n a positive multiple of 8) as rowMax computes it: each lane starts at
// x[0] and VMAXPS keeps the running maximum (its second source) when x is NaN, so a NaN counts only
// when it is x[0].
TEXT ·maxAVX(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS (SI), Y0
	SHRQ $3, CX

max_loop:
	VMOVUPS (SI), Y1
	VMAXPS Y0, Y1, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ max_loop

	VEXTRACTF128 $1, Y0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X0, X1, X0
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func scaleAVX(x *float32, n int, a float32)
// x[:n] *= a, n a multiple of 8.
TEXT ·scaleAVX(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS a+16(FP), Y0
	SHRQ $3, CX
	JZ scale_done

scale_loop:
	VMULPS (SI), Y0, Y1
	VMOVUPS Y1, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ scale_loop

scale_done:
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
