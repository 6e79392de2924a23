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
		var s float64
		for _, v := range xr {
			s += float64(v)
		}
		mu := s / float64(cols)
		var ss float64
		for _, v := range xr {
			d := float64(v) - mu
			ss += d * d
		}
		rs := 1 / math.Sqrt(ss/float64(cols)+float64(eps))
		mean[r], rstd[r] = float32(mu), float32(rs)
		for j, v := range xr {
			o := (float64(v) - mu) * rs * float64(w[j])
			if b != nil {
				o += float64(b[j])
			}
			yr[j] = float32(o)
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
	for r := range rows {
		xr, dyr, dxr := x[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
		mu, rs := float64(mean[r]), float64(rstd[r])
		var sg, sgx float64
		for j, v := range xr {
			xh := (float64(v) - mu) * rs
			g := float64(dyr[j]) * float64(w[j])
			sg += g
			sgx += g * xh
			dw[j] += float32(float64(dyr[j]) * xh)
			if db != nil {
				db[j] += dyr[j]
			}
		}
		mg, mgx := sg*inv, sgx*inv
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
	for r := range rows {
		xr, yr := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
		var ss float64
		for _, v := range xr {
			ss += float64(v) * float64(v)
		}
		rs := 1 / math.Sqrt(ss/float64(cols)+float64(eps))
		rstd[r] = float32(rs)
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
	for r := range rows {
		xr, dyr, dxr := x[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
		rs := float64(rstd[r])
		var sgx float64
		for j, v := range xr {
			xh := float64(v) * rs
			sgx += float64(dyr[j]) * float64(w[j]) * xh
			dw[j] += float32(float64(dyr[j]) * xh)
		}
		mgx := sgx * inv
		for j, v := range xr {
			xh := float64(v) * rs
			dxr[j] = float32(rs * (float64(dyr[j])*float64(w[j]) - xh*mgx))
		}
	}
}
