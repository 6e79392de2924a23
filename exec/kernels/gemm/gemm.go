package gemm

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpsim/tpsim/exec/kernels/internal/cpufeat"
)

// Register tile and cache blocks (see the package comment for their source).
const (
	mr = 6
	nr = 16
	kc = 256
	nc = 4080
)

// mrTall is the height of the AVX-512 path's register tile (kernel24x16z): four MR-row panels.
const mrTall = 4 * mr

// nbTall is the width of the blocks of B panels macroTall sweeps the row tiles over: as many
// columns as fill half of a core's L2 at KC (1024 with 2 MiB), so that the block stays in L2 while
// every row tile of the block reads it.
var nbTall = nbFor(cpufeat.L2Bytes)

func nbFor(l2 int) int {
	if l2 <= 0 {
		l2 = 512 << 10 // CPUID did not say: the smallest L2 of the CPUs with AVX-512
	}
	return max(nr, l2/2/(4*kc)/nr*nr)
}

// mc is the row block height, MC: BLIS's 144 for Zen 3's 512 KiB L2 (an A block of 144 KiB), 288
// where a core has at least 2 MiB of L2 (Intel Golden Cove and later). On the Intel Xeon VM
// (family 6 model 207, 2 MiB), one-core products of BenchmarkSgemm's shapes with 288 over 144, in
// three runs of 12-16 alternating pairs each (2026-12-04): medians per shape 1.00-1.08x (the
// squares 1024 and 2048 and the MLP's forward 1.05-1.08x), single runs 0.92-1.14x; on two
// cores within ±2.5%.
var mc = mcFor(cpufeat.L2Bytes)

func mcFor(l2 int) int {
	if l2 >= 2<<20 {
		return 288
	}
	return 144
}

// prefetchBlock is the packed B block size in bytes above which macro prefetches the next B
// panel into L2. BenchmarkPanelPrefetch (median of 11 paired runs; this machine's cores have
// 512 KiB of L2), with the prefetch for every block: 4 MiB blocks (the MLP's forward, N = 4096)
// 1.08-1.14x faster, 2 MiB (sq2048) 1.04-1.09x, 1 MiB (sq1024, and N = 1024 at K >= 256)
// 0.97-1.01x, 256 KiB (sq256) 0.91x. With this threshold: 1.06-1.11x and 1.02-1.08x; the shapes
// below it, whose two runs are then the same code, read 0.90-1.00 (the benchmark's noise and its
// order bias).
const prefetchBlock = 1 << 20

// minRowBlock is the smallest row block a parallel product is cut into beyond what MC needs: four
// register tiles high, so that packing and the loop overheads stay small against the tile work.
const minRowBlock = 4 * mr

// ParallelMACs is the size, in multiply-adds m*n*k, from which a product is split over several
// goroutines. Waking a helper goroutine on an idle core (the runtime wakes an OS thread; on a
// virtual machine the host wakes a halted vCPU) costs tens of microseconds. Measured on this
// project's 2-core EPYC VM with exec's pattern (100 µs of other work before each product, best of
// 3 medians of 30), when helpers were still woken for each of the two parallel loops of a KC step
// (runParallel now wakes them once a product): two goroutines against one are 0.87x at 4.2M
// multiply-adds (256x64x256), 1.27x at 8.4M, 1.31x at 16.8M and 1.81x at 33.6M (512x256x256),
// 1.94x at 67M. From 2^25 the split gains at least 1.8x, so the cost model may price a split
// product at its serial time over the goroutines; below it a product runs on the calling
// goroutine.
const ParallelMACs = 1 << 25

// parallelFrom is ParallelMACs; tests lower it to reach the parallel path with small products.
var parallelFrom = ParallelMACs

// maxThreads caps the goroutines of one product; 0 means GOMAXPROCS.
var maxThreads atomic.Int32

// SetThreads caps the goroutines one product may use at n (n <= 0 restores the default,
// GOMAXPROCS) and returns the previous setting. A caller that runs several ranks may set it to the
// cores each rank has (with one rank per core, 1: products run on their rank's goroutine).
func SetThreads(n int) int {
	if n < 0 {
		n = 0
	}
	return int(maxThreads.Swap(int32(n)))
}

// Threads is the current cap on goroutines per product.
func Threads() int {
	if n := int(maxThreads.Load()); n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// busy counts the goroutines inside products of at least trackMACs (callers and their helpers),
// so that concurrent products together take no more than GOMAXPROCS: helpers start only on cores
// not busy, and stop taking blocks once busy exceeds GOMAXPROCS (another rank started a product).
var busy atomic.Int32

// callers counts the goroutines inside tracked products as callers (not helpers). When two or
// more are inside at once, several ranks are multiplying concurrently: contendedUntil is then set
// contendedFor ahead, and no helper starts before it. Ranks that run in lockstep (dp, tp) overlap
// their products nearly all the time, so they run each product on its own goroutine instead of
// taking a core the other rank is about to need; a single rank (or ranks idle in communication for
// long) gets the free cores.
var (
	callers        atomic.Int32
	contendedUntil atomic.Int64 // time.Now().UnixNano()
)

// contendedFor is how long helpers stay off after products overlapped: many short products' worth,
// so that lockstep ranks never see the gap between two of their products as free cores.
const contendedFor = 100 * time.Millisecond

// trackMACs is the size from which a product counts in busy: about a microsecond of work, so that
// the shared counter costs nothing noticeable (tiny attention products skip it).
const trackMACs = 1 << 15

// acquire reserves up to want helper goroutines among the cores not busy and returns how many;
// each helper gives its reservation back with busy.Add(-1) when it stops.
func acquire(want int) int {
	procs := int32(runtime.GOMAXPROCS(0))
	for {
		cur := busy.Load()
		n := min(int32(want), procs-cur)
		if n <= 0 {
			return 0
		}
		if busy.CompareAndSwap(cur, cur+n) {
			return int(n)
		}
	}
}

// Sgemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices: op(A) is m×k, op(B) is
// k×n and C is m×n. A is stored m×k with row stride lda (k×m if transA), B is stored k×n with row
// stride ldb (n×k if transB), C has row stride ldc. This is the contract of gonum's
// blas.Float32Level3 Sgemm (row-major BLAS), which the tests hold it to. With beta = 0, C is
// overwritten and its old contents (even NaN) are ignored; with alpha = 0 or k = 0, A and B are not
// read. C must not alias A or B.
//
// It panics, with a message starting "gemm: ", if a dimension is negative, a stride is smaller than
// its row or a slice is too short for its matrix.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkMat("A", a, ar, ac, lda)
	checkMat("B", b, br, bc, ldb)
	checkMat("C", c, m, n, ldc)
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 || k == 0 {
		scaleC(c, m, n, ldc, beta)
		return
	}
	p := problem{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc}
	if staged := stageC(&p); staged != nil {
		defer unstageC(&p, c, ldc, staged)
	}
	if m*n*k >= trackMACs {
		busy.Add(1) // the caller's own core
		defer busy.Add(-1)
		if callers.Add(1) > 1 {
			contendedUntil.Store(time.Now().Add(contendedFor).UnixNano())
		}
		defer callers.Add(-1)
	}
	if threads := min(Threads(), (m+mr-1)/mr); m*n*k >= parallelFrom && threads > 1 {
		p.runParallel(threads)
	} else {
		p.runSerial()
	}
}

// stageC points p at a copy of C with a padded row stride when C's own stride is a multiple of
// 1 KiB floats (4 KiB) and the product is large, and returns the copy (nil otherwise; unstageC
// writes it back). At such a stride the six rows of a C tile fall in one set of the 8-way L1d
// (its set index repeats every 4 KiB), beside the B panel's lines that the micro-kernel reuses;
// padding the stride by 16 floats spreads them over six sets. Copying C back costs one pass over
// it, against products 1.06-1.12x faster on a loaded machine (BenchmarkPaddedStride) and 0.97-1.01x
// on a quiet one (BenchmarkStageC). With beta != 0 C must be copied in as well, and the two passes
// cost more than they gain: the products of a training step that accumulate into their gradients
// run 1.01-1.06x faster unstaged (BenchmarkStageCAccumulate, quiet machine; 1.06x the MLP's weight
// gradient), so only products that overwrite C are staged. These figures are from the 8-way L1d
// of the project's EPYC VM; where the L1d has more ways, C is not staged (stageOnThisCPU).
func stageC(p *problem) []float32 {
	if noStageC || !stageOnThisCPU || p.ldc%1024 != 0 || p.n < 4*nr || p.m*p.n*p.k < parallelFrom || (p.beta != 0 && !stageAccumulate) {
		return nil
	}
	ld := p.n + nr
	buf := getBuf((p.m-1)*ld + p.n)
	if p.beta != 0 {
		for i := range p.m {
			copy(buf[i*ld:i*ld+p.n], p.c[i*p.ldc:i*p.ldc+p.n])
		}
	}
	p.c, p.ldc = buf, ld
	return buf
}

// unstageC copies the staged C (stageC) back into c and releases it.
func unstageC(p *problem, c []float32, ldc int, buf []float32) {
	for i := range p.m {
		copy(c[i*ldc:i*ldc+p.n], buf[i*p.ldc:i*p.ldc+p.n])
	}
	putBuf(buf)
}

func checkMat(name string, s []float32, rows, cols, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("gemm: ld%s = %d is less than its %d columns", name, ld, cols))
	}
	if rows > 0 && cols > 0 && len(s) < (rows-1)*ld+cols {
		panic(fmt.Sprintf("gemm: len(%s) = %d is less than the %d needed for %d×%d with stride %d", name, len(s), (rows-1)*ld+cols, rows, cols, ld))
	}
}

// scaleC sets C = beta*C, with beta = 0 an overwrite with zeros.
func scaleC(c []float32, m, n, ldc int, beta float32) {
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		switch beta {
		case 1:
		case 0:
			clear(row)
		default:
			for j := range row {
				row[j] *= beta
			}
		}
	}
}

type problem struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a, b, c        []float32
	lda, ldb, ldc  int
}

// freeBufs keeps packing buffers between products. A sync.Pool would lose them at every garbage
// collection, and a training step allocates enough to collect often; re-faulting megabytes of
// fresh pages then costs as much as a small product.
var freeBufs struct {
	sync.Mutex
	list [][]float32
}

// maxFreeBufs bounds the buffers kept: one B and one A per goroutine of a few concurrent products.
const maxFreeBufs = 16

func getBuf(n int) []float32 {
	freeBufs.Lock()
	for i, b := range freeBufs.list {
		if cap(b) >= n {
			last := len(freeBufs.list) - 1
			freeBufs.list[i] = freeBufs.list[last]
			freeBufs.list = freeBufs.list[:last]
			freeBufs.Unlock()
			return b[:n]
		}
	}
	freeBufs.Unlock()
	return make([]float32, n)
}

func putBuf(b []float32) {
	freeBufs.Lock()
	if len(freeBufs.list) < maxFreeBufs {
		freeBufs.list = append(freeBufs.list, b)
	} else {
		// Replace the smallest, so that the list converges on the sizes in use.
		small := 0
		for i, x := range freeBufs.list {
			if cap(x) < cap(freeBufs.list[small]) {
				small = i
			}
		}
		if cap(b) > cap(freeBufs.list[small]) {
			freeBufs.list[small] = b
		}
	}
	freeBufs.Unlock()
}

// blocking is how a product is cut: row blocks of mb rows (a multiple of the register tile's
// height), the A buffer per goroutine (or the one they share, shareA) and the shared B buffer.
type blocking struct {
	blocks, mb int
	lenA, lenB int
	// tall is whether the blocks are multiplied in 24×16 tiles (tallTiles). shareA is whether,
	// with them, op(A) is packed whole, every block in its place of one buffer the goroutines
	// share, in the first column block of a KC step and kept for the others (rowBlock): where C
	// has several column blocks. With one, each goroutine packs its blocks into its own buffer,
	// which stays in its L2.
	tall, shareA bool
}

func (p *problem) blocking(threads int) blocking {
	// Row blocks of C: as many as MC allows and, on several goroutines, at least 4 per goroutine
	// (of at least minRowBlock rows), rounded up to a multiple of the goroutines and evened out.
	// Small blocks keep a goroutine that the OS deschedules on a shared machine from holding up
	// the others for long at the end of a step.
	blocks := (p.m + mc - 1) / mc
	if threads > 1 {
		blocks = max(blocks, min(4*threads, p.m/minRowBlock))
		blocks = (blocks + threads - 1) / threads * threads
	}
	tall := tallTiles()
	align := mr
	if tall {
		align = mrTall // MC is a multiple of it, so one goroutine's blocks stay MC high
	}
	mb := ((p.m+blocks-1)/blocks + align - 1) / align * align
	kmax := min(kc, p.k)
	bl := blocking{
		blocks: (p.m + mb - 1) / mb,
		mb:     mb,
		lenA:   mb * kmax,
		lenB:   kmax * ((p.colBlock() + nr - 1) / nr * nr),
		tall:   tall,
		shareA: tall && p.colBlock() < p.n,
	}
	if bl.shareA {
		bl.lenA *= bl.blocks
	}
	return bl
}

// colBlock is the width of the column blocks of C the product is cut into: NC, or the whole of N
// where it is at most a quarter more, so that a width just over NC is not cut into a block and a
// sliver that repacks the whole of A for a few columns (N = 4096 would be 4080 and 16 columns; one
// block of 4096 ran the MLP's 512×4096×1024 forward 1.05x faster on one core and 1.015x on two,
// median of 16 paired runs, 2026-12-04).
func (p *problem) colBlock() int {
	w := nc
	if tallTiles() {
		w = nbTall
	}
	if p.n <= w+w/4 {
		return p.n
	}
	return w
}

// step is one iteration of the two outer loops: columns [jc, jc+ncur) of C (panels NR-column
// panels) and inner indices [pc, pc+kcur). Every step after the first over k accumulates into C.
type step struct {
	jc, ncur, panels, pc, kcur int
	beta                       float32
	accumulate                 bool
}

// forSteps calls f for each step of the blocked loops in order: KC steps over k, and within each
// the column blocks (the tall tiles' packed op(A) serves every column block of its KC step).
func (p *problem) forSteps(f func(s step)) {
	w := p.colBlock()
	for pc := 0; pc < p.k; pc += kc {
		for jc := 0; jc < p.n; jc += w {
			ncur := min(w, p.n-jc)
			s := step{jc: jc, ncur: ncur, panels: (ncur + nr - 1) / nr, pc: pc, kcur: min(kc, p.k-pc), beta: p.beta, accumulate: p.beta != 0}
			if pc > 0 {
				s.beta, s.accumulate = 1, true
			}
			f(s)
		}
	}
}

// rowBlock packs row block u of op(A) for step s into ap and multiplies it by the packed B. Where
// bl.shareA, ap holds every block in its place, and a block is packed only in the step's first
// column block, just before its first use.
func (p *problem) rowBlock(s step, bl blocking, u int, ap, bp []float32) {
	ic := u * bl.mb
	mcur := min(bl.mb, p.m-ic)
	if bl.shareA {
		ap = ap[ic*s.kcur:]
	}
	if !bl.shareA || s.jc == 0 {
		p.packA(ap, ic, mcur, s.pc, s.kcur)
	}
	if bl.tall {
		p.macroTall(ap, bp, ic, mcur, s.jc, s.ncur, s.kcur, s.beta, s.accumulate)
	} else {
		p.macro(ap, bp, ic, mcur, s.jc, s.ncur, s.kcur, s.beta, s.accumulate)
	}
}

// runSerial executes the blocked product on the calling goroutine, allocating nothing once the
// packing buffers are warm.
func (p *problem) runSerial() {
	bl := p.blocking(1)
	bp, ap := getBuf(bl.lenB), getBuf(bl.lenA)
	p.forSteps(func(s step) {
		p.packB(bp, s.pc, s.kcur, s.jc, s.ncur, 0, s.panels)
		for u := range bl.blocks {
			p.rowBlock(s, bl, u, ap, bp)
		}
	})
	putBuf(ap)
	putBuf(bp)
}

// runParallel executes the blocked product on up to threads goroutines: the caller and the helpers
// it finds free cores for (acquire), started once for the whole product. The product is a
// sequence of phases, two a step: pack B in chunks of panels, then multiply the row blocks by it.
// Each goroutine claims units of the current phase from the phase's counter and, once none is
// left, waits for the units others claimed to finish before it moves to the next phase. Waking a
// helper costs tens of microseconds (see ParallelMACs), and this wakes each once a product instead
// of twice a step: a product of 16 KC steps (the MLP's 512×1024×4096) ran 1.54x faster on two
// cores than on one with a helper started for each phase, 1.89x with this (median of 10
// alternating runs, 2026-12-04; TestRunPhases checks the ordering, BenchmarkSgemm's threads=2
// rows time it). A helper stops claiming units once busy exceeds GOMAXPROCS (another rank started
// a product), within one unit; the goroutines left finish its phases. It takes the problem by
// value so that the closures its goroutines share do not make the caller's escape.
func (p problem) runParallel(threads int) {
	bl := p.blocking(threads)
	threads = min(threads, bl.blocks)
	bp := getBuf(bl.lenB)
	defer putBuf(bp)
	bufsA := make([][]float32, threads)
	for i := range bufsA {
		if bl.shareA && i > 0 {
			bufsA[i] = bufsA[0] // one packed op(A), shared
			continue
		}
		bufsA[i] = getBuf(bl.lenA)
		defer putBuf(bufsA[i])
	}
	var steps []step
	p.forSteps(func(s step) { steps = append(steps, s) })
	phases := make([]phase, 2*len(steps))
	for i, s := range steps {
		chunk := (s.panels + 2*threads - 1) / (2 * threads)
		phases[2*i].units = (s.panels + chunk - 1) / chunk
		phases[2*i].run = func(u, _ int) {
			p.packB(bp, s.pc, s.kcur, s.jc, s.ncur, u*chunk, min(s.panels, (u+1)*chunk))
		}
		phases[2*i+1].units = bl.blocks
		phases[2*i+1].run = func(u, w int) { p.rowBlock(s, bl, u, bufsA[w], bp) }
	}
	runPhases(threads, phases)
}

// phase is one step of a parallel product: units independent pieces of work, run(u, worker) each,
// with the counters of the units claimed and finished.
type phase struct {
	units         int
	run           func(u, worker int)
	claimed, done atomic.Int64
}

// runPhases runs the phases in order on the caller (worker 0) and up to threads-1 helpers, as
// many as acquire finds free cores for; a phase starts on a goroutine once every unit of the one
// before has finished. It returns when all are done.
func runPhases(threads int, phases []phase) {
	helpers := 0
	if threads > 1 && time.Now().UnixNano() >= contendedUntil.Load() {
		helpers = acquire(threads - 1)
	}
	procs := int32(runtime.GOMAXPROCS(0))
	work := func(w int) {
		for i := range phases {
			ph := &phases[i]
			for {
				if w > 0 && busy.Load() > procs {
					return
				}
				u := int(ph.claimed.Add(1) - 1)
				if u >= ph.units {
					break
				}
				ph.run(u, w)
				ph.done.Add(1)
			}
			for ph.done.Load() < int64(ph.units) {
				runtime.Gosched()
			}
		}
	}
	var wg sync.WaitGroup
	for w := 1; w <= helpers; w++ {
		wg.Go(func() {
			defer busy.Add(-1)
			work(w)
		})
	}
	work(0)
	wg.Wait()
}

// packA packs op(A)[ic:ic+mcur, pc:pc+kcur] into MR-row panels: panel q holds, for each p, the MR
// values op(A)[ic+q*MR+r, pc+p] at ap[q*MR*kcur + p*MR + r], rows past m zero.
func (p *problem) packA(ap []float32, ic, mcur, pc, kcur int) {
	for q := 0; q*mr < mcur; q++ {
		dst := ap[q*mr*kcur : (q+1)*mr*kcur]
		i0 := ic + q*mr
		rows := min(mr, mcur-q*mr)
		if p.transA {
			// op(A)[i, p] = a[p*lda + i]: each p contributes a contiguous run of rows.
			src := p.a[pc*p.lda+i0:]
			if rows == mr {
				packATransPanel(dst, src, p.lda, kcur)
				continue
			}
			for l := range kcur {
				d := dst[l*mr : l*mr+mr]
				copy(d, src[l*p.lda:][:rows])
				clear(d[rows:])
			}
			continue
		}
		// op(A)[i, p] = a[i*lda + p]: gather one value from each of the rows.
		if rows == mr {
			packAPanel(dst, p.a[i0*p.lda+pc:], p.lda, kcur)
			continue
		}
		clear(dst)
		for r := range rows {
			src := p.a[(i0+r)*p.lda+pc:][:kcur]
			for l, v := range src {
				dst[l*mr+r] = v
			}
		}
	}
}

// packB packs panels [p0, p1) of op(B)[pc:pc+kcur, jc:jc+ncur] into NR-column panels: panel q
// holds, for each p, the NR values op(B)[pc+p, jc+q*NR+j] at bp[q*NR*kcur + p*NR + j], columns
// past n zero.
func (p *problem) packB(bp []float32, pc, kcur, jc, ncur, p0, p1 int) {
	for q := p0; q < p1; q++ {
		dst := bp[q*nr*kcur : (q+1)*nr*kcur]
		j0 := jc + q*nr
		cols := min(nr, ncur-q*nr)
		if !p.transB {
			// op(B)[p, j] = b[p*ldb + j]: a contiguous run of columns per p.
			src := p.b[pc*p.ldb+j0:]
			if q+4 <= p1 && (q+4)*nr <= ncur && !noPanels4 && packBPanels4(bp[q*nr*kcur:(q+4)*nr*kcur], src, p.ldb, kcur) {
				q += 3 // four full panels in one pass over the rows
				continue
			}
			if cols == nr {
				packBPanel(dst, src, p.ldb, kcur)
				continue
			}
			for l := range kcur {
				d := dst[l*nr : l*nr+nr]
				copy(d, src[l*p.ldb:][:cols])
				clear(d[cols:])
			}
			continue
		}
		// op(B)[p, j] = b[j*ldb + p]: column j of the panel is a contiguous run of row j of b.
		src := p.b[j0*p.ldb+pc:]
		if cols == nr {
			packBTransPanel(dst, src, p.ldb, kcur)
			continue
		}
		clear(dst)
		packBTransGo(dst, src, p.ldb, 0, kcur, cols)
	}
}

// packAPanelGo writes dst[l*MR+r] = src[r*lds+l] for r < MR and l0 <= l < kcur: a full MR-row
// panel of an untransposed A.
func packAPanelGo(dst, src []float32, lds, l0, kcur int) {
	if l0 >= kcur {
		return
	}
	a0 := src[0*lds:][:kcur]
	a1 := src[1*lds:][:kcur]
	a2 := src[2*lds:][:kcur]
	a3 := src[3*lds:][:kcur]
	a4 := src[4*lds:][:kcur]
	a5 := src[5*lds:][:kcur]
	for l := l0; l < kcur; l++ {
		d := (*[mr]float32)(dst[l*mr:])
		d[0], d[1], d[2], d[3], d[4], d[5] = a0[l], a1[l], a2[l], a3[l], a4[l], a5[l]
	}
}

// packATransGo writes dst[l*MR+r] = src[l*lds+r] for r < MR and l < kcur: a full MR-row panel of
// a transposed A.
func packATransGo(dst, src []float32, lds, kcur int) {
	for l := range kcur {
		copy(dst[l*mr:l*mr+mr], src[l*lds:][:mr])
	}
}

// packBPanelGo writes dst[l*NR+j] = src[l*lds+j] for j < NR and l < kcur: a full NR-column panel
// of an untransposed B.
func packBPanelGo(dst, src []float32, lds, kcur int) {
	for l := range kcur {
		copy(dst[l*nr:l*nr+nr], src[l*lds:][:nr])
	}
}

// packBTransGo writes dst[l*NR+j] = src[j*lds+l] for j < cols and l0 <= l < kcur.
func packBTransGo(dst, src []float32, lds, l0, kcur, cols int) {
	if l0 >= kcur {
		return
	}
	for j := range cols {
		row := src[j*lds+l0 : j*lds+kcur]
		for l, v := range row {
			dst[(l0+l)*nr+j] = v
		}
	}
}

// macro multiplies the packed block ap (mcur×kcur) by the packed panels bp (kcur×ncur) into
// C[ic:ic+mcur, jc:jc+ncur], tile by tile.
func (p *problem) macro(ap, bp []float32, ic, mcur, jc, ncur, kcur int, beta float32, accumulate bool) {
	var scratch [mr * nr]float32
	parts := (mcur + mr - 1) / mr
	wide := wideTiles()
	for jr, step := 0, 0; jr < ncur; jr += step {
		// Where the AVX-512 kernel runs, two full panels go together (kernel6x32z): one A
		// panel read for 32 columns.
		pair := wide && jr+2*nr <= ncur
		step = nr
		if pair {
			step = 2 * nr
		}
		// The B panels of the next step come from the packed block, which beyond prefetchBlock
		// bytes sits in L3; fetch them into L2 a slice per tile while this step's tiles compute,
		// so that its first tile does not wait for them at the kernel's short prefetch distance.
		var next []float32
		if jr+step < ncur && 4*kcur*ncur > prefetchBlock {
			next = bp[(jr+step)*kcur : min(jr+2*step, (ncur+nr-1)/nr*nr)*kcur]
		}
		for ir := 0; ir < mcur; ir += mr {
			rows := min(mr, mcur-ir)
			prefetchNext(next, ir/mr, parts)
			apan := ap[ir*kcur : ir*kcur+mr*kcur]
			if pair && rows == mr {
				off := (ic+ir)*p.ldc + jc + jr
				microKernel2(kcur, apan, bp[jr*kcur:(jr+2*nr)*kcur], p.c[off:], p.ldc, p.alpha, beta, accumulate)
				continue
			}
			for q := jr; q < jr+step; q += nr { // a pair only where both panels lie in ncur
				p.tile(&scratch, apan, bp[q*kcur:q*kcur+nr*kcur], ic+ir, rows, jc+q, min(nr, ncur-q), kcur, beta, accumulate)
			}
		}
	}
}

// macroTall multiplies the packed rows ap (mcur×kcur, from row ic) by the packed block bp
// (kcur×ncur) into C[ic:ic+mcur, jc:jc+ncur] in 24×16 tiles, tile row by tile row; rows below the
// last whole tile and columns past the last whole panel take 6×16 tiles.
func (p *problem) macroTall(ap, bp []float32, ic, mcur, jc, ncur, kcur int, beta float32, accumulate bool) {
	var scratch [mr * nr]float32
	tall := mcur / mrTall * mrTall
	for ir, step := 0, 0; ir < mcur; ir += step {
		step = mr
		if ir < tall {
			step = mrTall
		}
		apan := ap[ir*kcur : (ir+step)*kcur]
		for jr := 0; jr < ncur; jr += nr {
			cols := min(nr, ncur-jr)
			bpan := bp[jr*kcur : (jr+nr)*kcur]
			if step == mrTall && cols == nr {
				microKernel24(kcur, apan, bpan, p.c[(ic+ir)*p.ldc+jc+jr:], p.ldc, p.alpha, beta, accumulate)
				continue
			}
			for q := 0; q < step; q += mr {
				p.tile(&scratch, apan[q*kcur:(q+mr)*kcur], bpan, ic+ir+q, min(mr, mcur-ir-q), jc+jr, cols, kcur, beta, accumulate)
			}
		}
	}
}

// tile computes the rows×cols tile of C at (i, j) from the packed panels apan and bpan: in place
// when it is a full tile, else into scratch and merged into the part inside C.
func (p *problem) tile(scratch *[mr * nr]float32, apan, bpan []float32, i, rows, j, cols, kcur int, beta float32, accumulate bool) {
	off := i*p.ldc + j
	if rows == mr && cols == nr {
		microKernel(kcur, apan, bpan, p.c[off:], p.ldc, p.alpha, beta, accumulate)
		return
	}
	microKernel(kcur, apan, bpan, scratch[:], nr, 1, 0, false)
	for r := range rows {
		crow := p.c[off+r*p.ldc:][:cols]
		trow := scratch[r*nr:][:cols]
		if accumulate {
			for j, v := range trow {
				crow[j] = p.alpha*v + beta*crow[j]
			}
		} else {
			for j, v := range trow {
				crow[j] = p.alpha * v
			}
		}
	}
}

// kernelGo is the portable micro-kernel: the same contract as the assembly kernel6x16.
func kernelGo(k int, a, b, c []float32, ldc int, alpha, beta float32, accumulate bool) {
	var acc [mr][nr]float32
	a = a[:mr*k]
	b = b[:nr*k]
	for l := range k {
		bl := (*[nr]float32)(b[l*nr:])
		al := (*[mr]float32)(a[l*mr:])
		for r, av := range al {
			row := &acc[r]
			for j, bv := range bl {
				row[j] += av * bv
			}
		}
	}
	for r := range mr {
		crow := (*[nr]float32)(c[r*ldc:])
		if accumulate {
			for j, v := range acc[r] {
				crow[j] = alpha*v + beta*crow[j]
			}
		} else {
			for j, v := range acc[r] {
				crow[j] = alpha * v
			}
		}
	}
}
