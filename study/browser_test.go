package study

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds Debian's Chromium (the chromium package; .ci/run installs it).
func chromium() string {
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// pageFacts is what the browser test reads from the rendered page.
type pageFacts struct {
	Figures []struct {
		ID       string  `json:"id"`
		Width    float64 `json:"w"`
		Height   float64 `json:"h"`
		BBoxW    float64 `json:"bw"`
		BBoxH    float64 `json:"bh"`
		Elements int     `json:"n"`
	} `json:"figures"`
	SummaryRows  int `json:"summaryRows"`
	Cells        int `json:"cells"`
	Frontier     int `json:"frontier"`
	HeaderCells  int `json:"headerCells"`
	FirstRowTDs  int `json:"firstRowTDs"`
	ExternalRefs int `json:"externalRefs"`
}

const pageJS = `(() => {
  const figures = [...document.querySelectorAll('figure.study-figure')].map(f => {
    const s = f.querySelector('svg');
    if (!s) return {id: f.id, w: 0, h: 0, bw: 0, bh: 0, n: 0};
    const r = s.getBoundingClientRect();
    const b = s.getBBox();
    return {id: f.id, w: r.width, h: r.height, bw: b.width, bh: b.height, n: s.querySelectorAll('*').length};
  });
  const first = document.querySelector('#summary-table tbody tr');
  return {
    figures,
    summaryRows: document.querySelectorAll('#summary-table tbody tr').length,
    cells: document.querySelectorAll('details.cell').length,
    frontier: document.querySelectorAll('#frontier-list li').length,
    headerCells: document.querySelectorAll('#summary-table thead th').length,
    firstRowTDs: first ? first.querySelectorAll('td').length : 0,
    externalRefs: performance.getEntriesByType('resource').length,
  };
})()`

// TestStudyHTMLInBrowser opens study.html in headless Chromium: every figure must render with a
// non-zero size, the tables must have a row per cell, nothing may load from elsewhere and the
// console must stay free of errors. It saves a screenshot (to $TPSIM_SCREENSHOT_DIR, else the
// test's temporary directory).
//
// By default it checks the report of testdata/small.yaml, made here. To check the report of
// another study, as the acceptance of the shipped llama3 study asks, give the study file and the
// directory its report is in:
//
//	TPSIM_STUDY=examples/studies/llama3.yaml TPSIM_STUDY_OUT=llama3-study go test -run Browser ./study
//
// (relative paths are from the repository root).
func TestStudyHTMLInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("Chromium not found (/usr/bin/chromium): apt-get install -y chromium to run the browser test (.ci/run does)")
	}
	var st *Study
	var dir string
	if file := os.Getenv("TPSIM_STUDY"); file != "" {
		var err error
		fromRoot := func(p string) string {
			if filepath.IsAbs(p) {
				return p
			}
			return filepath.Join("..", p)
		}
		if st, err = Load(fromRoot(file), nil); err != nil {
			t.Fatal(err)
		}
		dir = fromRoot(os.Getenv("TPSIM_STUDY_OUT"))
		t.Logf("checking the report of %s in %s", file, dir)
	} else {
		st = loadSmall(t)
		dir = t.TempDir()
		runStudy(t, st, dir, 0)
	}
	page, err := filepath.Abs(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(page); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	// Start the browser on the context without a timeout (a timeout on the first Run would stop
	// the browser), then bound each step.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	messages := chromedp.Console(ctx)
	step, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(step, chromedp.Navigate("file://"+page), chromedp.WaitReady(chromedp.CSS("#summary-table"))); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	facts, err := chromedp.Run(step, chromedp.Evaluate[pageFacts](pageJS))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	shot, err := chromedp.Run(step, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	// A probe shows that the console is really read: the page's own messages come before it.
	if _, err := chromedp.Run(step, chromedp.Evaluate[chromedp.Void](`console.error("tpsim-probe")`)); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	var problems []string
	probed := false
	drain, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	go func() { <-drain.Done(); cancelCtx() }()
	for m, err := range messages {
		if err != nil {
			break
		}
		if m.Text == "tpsim-probe" {
			probed = true
			break
		}
		if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
			problems = append(problems, m.String())
		}
	}
	if !probed {
		t.Errorf("the console probe was not seen: the console check does not work")
	}

	out := os.Getenv("TPSIM_SCREENSHOT_DIR")
	if out == "" {
		out = t.TempDir()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	shotPath := filepath.Join(out, "study.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shotPath, len(shot))
	if len(shot) < 10_000 {
		t.Errorf("screenshot of %d bytes: the page did not render", len(shot))
	}

	if want := 4*len(st.Models) + 1; len(facts.Figures) != want {
		t.Errorf("%d figures, want %d", len(facts.Figures), want)
	}
	for _, f := range facts.Figures {
		if f.Width < 100 || f.Height < 100 || f.BBoxW <= 0 || f.BBoxH <= 0 || f.Elements < 20 {
			t.Errorf("figure %s rendered %gx%g (content %gx%g, %d elements)", f.ID, f.Width, f.Height, f.BBoxW, f.BBoxH, f.Elements)
		}
	}
	if facts.SummaryRows != len(st.Cells) || facts.Cells != len(st.Cells) {
		t.Errorf("summary table %d rows, %d cell details; the study has %d cells", facts.SummaryRows, facts.Cells, len(st.Cells))
	}
	if want := 13 + len(st.File.Objectives) - 1; facts.HeaderCells != want || facts.FirstRowTDs != want {
		t.Errorf("summary table: %d header cells, %d in the first row; want %d", facts.HeaderCells, facts.FirstRowTDs, want)
	}
	if facts.Frontier != len(st.Models) {
		t.Errorf("%d frontier entries, want one per model (%d)", facts.Frontier, len(st.Models))
	}
	if facts.ExternalRefs != 0 {
		t.Errorf("the page loaded %d resources; it must be self-contained", facts.ExternalRefs)
	}
	if len(problems) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(problems, "\n"))
	}
}
