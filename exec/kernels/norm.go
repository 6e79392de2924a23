package kernels

import "math"

// DefaultEps is the epsilon of torch.nn.LayerNorm and of the RMSNorm of GPT-NeoX/Llama-style
// presets: it is added to the variance (or mean square) before the square root.
const DefaultEps float32 = 1e-5

// LayerNorm normalises each row of x [rows, cols] over its cols (Ba, Kiros and Hinton 2016,
// "Layer Normalization", eq. 3; the biased variance, as torch.nn.LayerNorm):
//
//	mean = Σ x / cols,  var = Σ (x − mean)² / cols,  rstd = 1/sqrt(var + eps)
//	y = (x − mean) · rstd · w + b
//
// w and b are [cols]; b may be nil (no bias). It writes y [rows, cols] and saves mean [rows] and
// rstd [rows] for LayerNormBackward. y may alias x (but LayerNormBackward needs the original x).
//
// It panics if a dimension is negative or a length does not match.
func LayerNorm(y, mean, rstd, x, w, b []float32, rows, cols int, eps float32) {
	checkDims("LayerNorm", rows, cols)
	checkLen("LayerNorm", "x", x, rows*cols)
	checkLen("LayerNorm", "y", y, rows*cols)
	checkLen("LayerNorm", "mean", mean, rows)
	checkLen("LayerNorm", "rstd", rstd, rows)
	checkLen("LayerNorm", "w", w, cols)
	if b != nil {
		checkLen("LayerNorm", "b", b, cols)
	}
	if cols == 0 {
		return
	}
	for r := range rows {
		xr, yr := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
		mu := sum64(xr) / float64(cols)
		rs := 1 / math.Sqrt(sumSqDev64(xr, mu)/float64(cols)+float64(eps))
		mean[r], rstd[r] = float32(mu), float32(rs)
		normOut(yr, xr, w, b, mu, rs)
	}
}

// LayerNormBackward computes the gradients of LayerNorm from dy [rows, cols], the forward input x,
// the weight w and the saved mean and rstd. With x̂ = (x − mean)·rstd and g = dy·w:
//
//	dx = rstd · (g − mean(g) − x̂ · mean(g·x̂))          (overwritten)
//	dw += Σ_rows dy·x̂,  db += Σ_rows dy                 (accumulated; db may be nil)
//
// dx may alias dy.
//
// It panics if a dimension is negative or a length does not match.
func LayerNormBackward(dx, dw, db, dy, x, w, mean, rstd []float32, rows, cols int) {
	checkDims("LayerNormBackward", rows, cols)
	n := rows * cols
	checkLen("LayerNormBackward", "dx", dx, n)
	checkLen("LayerNormBackward", "dy", dy, n)
	checkLen("LayerNormBackward", "x", x, n)
	checkLen("LayerNormBackward", "w", w, cols)
	checkLen("LayerNormBackward", "dw", dw, cols)
	if db != nil {
		checkLen("LayerNormBackward", "db", db, cols)
	}
	checkLen("LayerNormBackward", "mean", mean, rows)
	checkLen("LayerNormBackward", "rstd", rstd, rows)
	if cols == 0 {
		return
	}
	inv := 1 / float64(cols)
	for r := range rows {
		xr, dyr, dxr := x[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
		mu, rs := float64(mean[r]), float64(rstd[r])
		sg, sgx := normGradSums(dw, dyr, xr, w, mu, rs)
		if db != nil {
			AddInPlace(db, dyr)
		}
		normGradOut(dxr, dyr, xr, w, mu, rs, sg*inv, sgx*inv)
	}
}

// RMSNorm normalises each row of x [rows, cols] by its root mean square (Zhang and Sennrich 2019,
// "Root Mean Square Layer Normalization", eq. 4; as in Llama):
//
//	rstd = 1/sqrt(Σ x² / cols + eps),  y = x · rstd · w
//
// w is [cols]. It writes y [rows, cols] and saves rstd [rows] for RMSNormBackward. y may alias x
// (but RMSNormBackward needs the original x).
//
// It panics if a dimension is negative or a length does not match.
func RMSNorm(y, rstd, x, w []float32, rows, cols int, eps float32) {
	checkDims("RMSNorm", rows, cols)
	checkLen("RMSNorm", "x", x, rows*cols)
	checkLen("RMSNorm", "y", y, rows*cols)
	checkLen("RMSNorm", "rstd", rstd, rows)
	checkLen("RMSNorm", "w", w, cols)
	if cols == 0 {
		return
	}
	for r := range rows {
		xr, yr := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
		rs := 1 / math.Sqrt(sumSqDev64(xr, 0)/float64(cols)+float64(eps))
		rstd[r] = float32(rs)
		normOut(yr, xr, w, nil, 0, rs) // (x - 0) is x exactly
	}
}

// RMSNormBackward computes the gradients of RMSNorm from dy [rows, cols], the forward input x, the
// weight w and the saved rstd. With x̂ = x·rstd and g = dy·w:
//
//	dx = rstd · (g − x̂ · mean(g·x̂))   (overwritten)
//	dw += Σ_rows dy·x̂                 (accumulated)
//
// dx may alias dy.
//
// It panics if a dimension is negative or a length does not match.
func RMSNormBackward(dx, dw, dy, x, w, rstd []float32, rows, cols int) {
	checkDims("RMSNormBackward", rows, cols)
	n := rows * cols
	checkLen("RMSNormBackward", "dx", dx, n)
	checkLen("RMSNormBackward", "dy", dy, n)
	checkLen("RMSNormBackward", "x", x, n)
	checkLen("RMSNormBackward", "w", w, cols)
	checkLen("RMSNormBackward", "dw", dw, cols)
	checkLen("RMSNormBackward", "rstd", rstd, rows)
	if cols == 0 {
		return
	}
	inv := 1 / float64(cols)
	for r := range rows {
		xr, dyr, dxr := x[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
		rs := float64(rstd[r])
		_, sgx := normGradSums(dw, dyr, xr, w, 0, rs)
		normGradOut(dxr, dyr, xr, w, 0, rs, 0, sgx*inv) // (g - 0) is g exactly
	}
}

// The row loops of both norms, each an AVX2 kernel on the whole vectors (norm_amd64.s) and the
// same formulas in scalar code after them. xh = (x - mu) rs is the normalised input (mu = 0 for
// RMSNorm) and g = dy w the gradient through the weight.

// sum64 is Σ x in float64 (in several partial sums: a loop with one runs at the latency of a
// float64 add, about four cycles an element).
func sum64(x []float32) float64 {
	v := vecLen(len(x))
	var s0, s1 float64
	if v > 0 {
		s0 = normSumAVX(&x[0], v)
	}
	i := v
	for ; i+2 <= len(x); i += 2 {
		s0 += float64(x[i])
		s1 += float64(x[i+1])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return s0 + s1
}

// sumSqDev64 is Σ (x - mu)² in float64, as sum64 sums (mu = 0: RMSNorm's Σ x²).
func sumSqDev64(x []float32, mu float64) float64 {
	v := vecLen(len(x))
	var s0, s1 float64
	if v > 0 {
		s0 = normSqDevAVX(&x[0], v, mu)
	}
	i := v
	for ; i+2 <= len(x); i += 2 {
		d0, d1 := float64(x[i])-mu, float64(x[i+1])-mu
		s0 += d0 * d0
		s1 += d1 * d1
	}
	for ; i < len(x); i++ {
		d := float64(x[i]) - mu
		s0 += d * d
	}
	return s0 + s1
}

// normOut sets y = float32(xh w + b) (b nil: no bias).
func normOut(y, x, w, b []float32, mu, rs float64) {
	y, w = y[:len(x)], w[:len(x)]
	if b != nil {
		b = b[:len(x)]
	}
	v := vecLen(len(x))
	if v > 0 {
		var bp *float32
		if b != nil {
			bp = &b[0]
		}
		normOutAVX(&y[0], &x[0], &w[0], bp, v, mu, rs)
	}
	if b == nil {
		for j := v; j < len(x); j++ {
			y[j] = float32((float64(x[j]) - mu) * rs * float64(w[j]))
		}
		return
	}
	for j := v; j < len(x); j++ {
		// The conversion rounds the product before the add, so no compiler fuses them into a
		// multiply-add (GOAMD64=v3 may): the kernel's separate VMULPD and VADDPD.
		y[j] = float32(float64((float64(x[j])-mu)*rs*float64(w[j])) + float64(b[j]))
	}
}

// normGradSums returns Σ g and Σ g xh and adds float32(dy xh) into dw.
func normGradSums(dw, dy, x, w []float32, mu, rs float64) (sg, sgx float64) {
	dw, dy, w = dw[:len(x)], dy[:len(x)], w[:len(x)]
	v := vecLen(len(x))
	if v > 0 {
		sg, sgx = normGradSumsAVX(&dw[0], &dy[0], &x[0], &w[0], v, mu, rs)
	}
	for j := v; j < len(x); j++ {
		xh := (float64(x[j]) - mu) * rs
		g := float64(dy[j]) * float64(w[j])
		sg += g
		sgx += g * xh
		dw[j] += float32(float64(dy[j]) * xh)
	}
	return sg, sgx
}

// normGradOut sets dx = float32(rs ((g - mg) - xh mgx)); dx may alias dy.
func normGradOut(dx, dy, x, w []float32, mu, rs, mg, mgx float64) {
	dx, dy, w = dx[:len(x)], dy[:len(x)], w[:len(x)]
	v := vecLen(len(x))
	if v > 0 {
		normGradOutAVX(&dx[0], &dy[0], &x[0], &w[0], v, mu, rs, mg, mgx)
	}
	for j := v; j < len(x); j++ {
		xh := (float64(x[j]) - mu) * rs
		g := float64(dy[j]) * float64(w[j])
		dx[j] = float32(rs * (g - mg - xh*mgx))
	}
}
