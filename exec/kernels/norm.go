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
	w = w[:cols]
	for r := range rows {
		xr, yr := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
		mu := sum64(xr) / float64(cols)
		rs := 1 / math.Sqrt(sumSqDev64(xr, mu)/float64(cols)+float64(eps))
		mean[r], rstd[r] = float32(mu), float32(rs)
		yr = yr[:len(xr)]
		if b == nil {
			for j, v := range xr {
				yr[j] = float32((float64(v) - mu) * rs * float64(w[j]))
			}
			continue
		}
		b := b[:len(xr)]
		for j, v := range xr {
			yr[j] = float32((float64(v)-mu)*rs*float64(w[j]) + float64(b[j]))
		}
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
	w, dw = w[:cols], dw[:cols]
	for r := range rows {
		xr, dyr, dxr := x[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
		dyr, dxr = dyr[:len(xr)], dxr[:len(xr)]
		mu, rs := float64(mean[r]), float64(rstd[r])
		// Two partial sums each (even and odd j): the float64 adds' latency, not their
		// throughput, bounds a loop with one.
		var sg0, sg1, sgx0, sgx1 float64
		j := 0
		for ; j+2 <= len(xr); j += 2 {
			xh0, xh1 := (float64(xr[j])-mu)*rs, (float64(xr[j+1])-mu)*rs
			g0, g1 := float64(dyr[j])*float64(w[j]), float64(dyr[j+1])*float64(w[j+1])
			sg0, sg1 = sg0+g0, sg1+g1
			sgx0, sgx1 = sgx0+g0*xh0, sgx1+g1*xh1
			dw[j] += float32(float64(dyr[j]) * xh0)
			dw[j+1] += float32(float64(dyr[j+1]) * xh1)
		}
		for ; j < len(xr); j++ {
			xh := (float64(xr[j]) - mu) * rs
			g := float64(dyr[j]) * float64(w[j])
			sg0 += g
			sgx0 += g * xh
			dw[j] += float32(float64(dyr[j]) * xh)
		}
		if db != nil {
			AddInPlace(db, dyr)
		}
		mg, mgx := (sg0+sg1)*inv, (sgx0+sgx1)*inv
		for j, v := range xr {
			xh := (float64(v) - mu) * rs
			g := float64(dyr[j]) * float64(w[j])
			dxr[j] = float32(rs * (g - mg - xh*mgx))
		}
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
	w = w[:cols]
	for r := range rows {
		xr, yr := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
		rs := 1 / math.Sqrt(sumSqDev64(xr, 0)/float64(cols)+float64(eps))
		rstd[r] = float32(rs)
		yr = yr[:len(xr)]
		for j, v := range xr {
			yr[j] = float32(float64(v) * rs * float64(w[j]))
		}
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
	w, dw = w[:cols], dw[:cols]
	for r := range rows {
		xr, dyr, dxr := x[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
		dyr, dxr = dyr[:len(xr)], dxr[:len(xr)]
		rs := float64(rstd[r])
		var sgx0, sgx1 float64 // two partial sums, as LayerNormBackward's
		j := 0
		for ; j+2 <= len(xr); j += 2 {
			xh0, xh1 := float64(xr[j])*rs, float64(xr[j+1])*rs
			sgx0 += float64(dyr[j]) * float64(w[j]) * xh0
			sgx1 += float64(dyr[j+1]) * float64(w[j+1]) * xh1
			dw[j] += float32(float64(dyr[j]) * xh0)
			dw[j+1] += float32(float64(dyr[j+1]) * xh1)
		}
		for ; j < len(xr); j++ {
			xh := float64(xr[j]) * rs
			sgx0 += float64(dyr[j]) * float64(w[j]) * xh
			dw[j] += float32(float64(dyr[j]) * xh)
		}
		mgx := (sgx0 + sgx1) * inv
		for j, v := range xr {
			xh := float64(v) * rs
			dxr[j] = float32(rs * (float64(dyr[j])*float64(w[j]) - xh*mgx))
		}
	}
}

// sum64 is Σ x in float64, in four partial sums (a loop with one runs at the latency of a float64
// add, about four cycles an element).
func sum64(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i])
		s1 += float64(x[i+1])
		s2 += float64(x[i+2])
		s3 += float64(x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sumSqDev64 is Σ (x - mu)² in float64, as sum64 sums (mu = 0: RMSNorm's Σ x²).
func sumSqDev64(x []float32, mu float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		d0, d1, d2, d3 := float64(x[i])-mu, float64(x[i+1])-mu, float64(x[i+2])-mu, float64(x[i+3])-mu
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(x); i++ {
		d := float64(x[i]) - mu
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}
