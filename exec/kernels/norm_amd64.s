//go:build amd64 && !purego

#include "textflag.h"

// The vector parts of the norms' row loops (norm.go): each takes n a multiple of 8, as 4-lane
// float64 vectors, converting float32 in and out; the elementwise outputs compute the scalar
// code's float64 operations in its order, without fused multiply-adds, so they give its bits for
// the same row statistics.

// HSUM2 adds the four float64 lanes of A and of B into the low lane of XA (XB scratch).
#define HSUM2(A, B, XA, XB) \
	VADDPD B, A, A; \
	VEXTRACTF128 $1, A, XB; \
	VADDPD XB, XA, XA; \
	VPERMILPD $1, XA, XB; \
	VADDSD XB, XA, XA

// func normSumAVX(x *float32, n int) float64
// Σ x in float64, two 4-lane partial sums.
TEXT ·normSumAVX(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	SHRQ $3, CX
	JZ nsum_done

nsum_loop:
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VADDPD Y2, Y0, Y0
	VADDPD Y3, Y1, Y1
	ADDQ $32, SI
	DECQ CX
	JNZ nsum_loop

nsum_done:
	HSUM2(Y0, Y1, X0, X1)
	VMOVSD X0, ret+16(FP)
	VZEROUPPER
	RET

// func normSqDevAVX(x *float32, n int, mu float64) float64
// Σ (x - mu)² in float64.
TEXT ·normSqDevAVX(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD mu+16(FP), Y4
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	SHRQ $3, CX
	JZ nsq_done

nsq_loop:
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VSUBPD Y4, Y2, Y2
	VSUBPD Y4, Y3, Y3
	VFMADD231PD Y2, Y2, Y0
	VFMADD231PD Y3, Y3, Y1
	ADDQ $32, SI
	DECQ CX
	JNZ nsq_loop

nsq_done:
	HSUM2(Y0, Y1, X0, X1)
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET

// NXH sets Y = xh = (x - mu) rs from the four floats at M (mu in Y6, rs in Y7).
#define NXH(M, Y) \
	VCVTPS2PD M, Y; \
	VSUBPD Y6, Y, Y; \
	VMULPD Y7, Y, Y

// func normOutAVX(y, x, w, b *float32, n int, mu, rs float64)
// y = float32((x - mu) rs w + b), b nil: no bias.
TEXT ·normOutAVX(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), R8
	MOVQ b+24(FP), R9
	MOVQ n+32(FP), CX
	VBROADCASTSD mu+40(FP), Y6
	VBROADCASTSD rs+48(FP), Y7
	SHRQ $3, CX
	JZ nout_done
	TESTQ R9, R9
	JZ nout_nob

nout_loop:
	NXH((SI), Y0)
	NXH(16(SI), Y1)
	VCVTPS2PD (R8), Y2
	VCVTPS2PD 16(R8), Y3
	VMULPD Y2, Y0, Y0
	VMULPD Y3, Y1, Y1
	VCVTPS2PD (R9), Y2
	VCVTPS2PD 16(R9), Y3
	VADDPD Y2, Y0, Y0
	VADDPD Y3, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS X0, (DI)
	VMOVUPS X1, 16(DI)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, DI
	DECQ CX
	JNZ nout_loop
	JMP nout_done

nout_nob:
	NXH((SI), Y0)
	NXH(16(SI), Y1)
	VCVTPS2PD (R8), Y2
	VCVTPS2PD 16(R8), Y3
	VMULPD Y2, Y0, Y0
	VMULPD Y3, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS X0, (DI)
	VMOVUPS X1, 16(DI)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, DI
	DECQ CX
	JNZ nout_nob

nout_done:
	VZEROUPPER
	RET

// NGRAD sets, for the four elements at offset OFF: G = g = dy w and XH = xh (x at SI, dy at BX,
// w at R8), D = dy.
#define NGRAD(OFF, XH, D, G) \
	NXH(OFF(SI), XH); \
	VCVTPS2PD OFF(BX), D; \
	VCVTPS2PD OFF(R8), G; \
	VMULPD G, D, G

// func normGradSumsAVX(dw, dy, x, w *float32, n int, mu, rs float64) (sg, sgx float64)
// sg = Σ g, sgx = Σ g xh, and dw += float32(dy xh).
TEXT ·normGradSumsAVX(SB), NOSPLIT, $0-72
	MOVQ dw+0(FP), DI
	MOVQ dy+8(FP), BX
	MOVQ x+16(FP), SI
	MOVQ w+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSD mu+40(FP), Y6
	VBROADCASTSD rs+48(FP), Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	SHRQ $3, CX
	JZ ngs_done

ngs_loop:
	NGRAD(0, Y0, Y1, Y2)
	VADDPD Y2, Y8, Y8
	VMULPD Y0, Y2, Y2
	VADDPD Y2, Y10, Y10
	VMULPD Y0, Y1, Y1
	VCVTPD2PSY Y1, X1
	VADDPS (DI), X1, X1
	VMOVUPS X1, (DI)
	NGRAD(16, Y3, Y4, Y5)
	VADDPD Y5, Y9, Y9
	VMULPD Y3, Y5, Y5
	VADDPD Y5, Y11, Y11
	VMULPD Y3, Y4, Y4
	VCVTPD2PSY Y4, X4
	VADDPS 16(DI), X4, X4
	VMOVUPS X4, 16(DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, R8
	ADDQ $32, DI
	DECQ CX
	JNZ ngs_loop

ngs_done:
	HSUM2(Y8, Y9, X8, X9)
	HSUM2(Y10, Y11, X10, X11)
	VMOVSD X8, sg+56(FP)
	VMOVSD X10, sgx+64(FP)
	VZEROUPPER
	RET

// func normGradOutAVX(dx, dy, x, w *float32, n int, mu, rs, mg, mgx float64)
// dx = float32(rs ((g - mg) - xh mgx)); dx may alias dy.
TEXT ·normGradOutAVX(SB), NOSPLIT, $0-72
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), BX
	MOVQ x+16(FP), SI
	MOVQ w+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSD mu+40(FP), Y6
	VBROADCASTSD rs+48(FP), Y7
	VBROADCASTSD mg+56(FP), Y8
	VBROADCASTSD mgx+64(FP), Y9
	SHRQ $3, CX
	JZ ngo_done

ngo_loop:
	NGRAD(0, Y0, Y1, Y2)
	NGRAD(16, Y3, Y4, Y5)
	VSUBPD Y8, Y2, Y2
	VSUBPD Y8, Y5, Y5
	VMULPD Y9, Y0, Y0
	VMULPD Y9, Y3, Y3
	VSUBPD Y0, Y2, Y2
	VSUBPD Y3, Y5, Y5
	VMULPD Y7, Y2, Y2
	VMULPD Y7, Y5, Y5
	VCVTPD2PSY Y2, X2
	VCVTPD2PSY Y5, X5
	VMOVUPS X2, (DI)
	VMOVUPS X5, 16(DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, R8
	ADDQ $32, DI
	DECQ CX
	JNZ ngo_loop

ngo_done:
	VZEROUPPER
	RET
