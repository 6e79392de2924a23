//go:build unix

package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/compare"
)

// sigintOn is a stderr that sends this process SIGINT, as Ctrl-C does, when compare reports that
// a given round started (compare is listening for it by then).
type sigintOn struct {
	mu      sync.Mutex
	trigger string
	sent    bool
	buf     bytes.Buffer
}

func (s *sigintOn) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sent && bytes.Contains(b, []byte(s.trigger)) {
		s.sent = true
		syscall.Kill(os.Getpid(), syscall.SIGINT)
	}
	return s.buf.Write(b)
}

// The issue: Ctrl-C during compare left --out empty, printed five per-rank abort lines and exited
// 1. Now the rounds that finished are written, marked partial, with one line "interrupted" and
// exit status 130.
func TestCompareCtrlCKeepsFinishedRows(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	errw := &sigintOn{trigger: "round 2 of 3"}
	args := []string{"compare", "--model", "seed-mlp", "--meshes", "1,2", "--strategies", "single,dp,tp",
		"--plan", "0=colwise,2=rowwise", "--steps", "3", "--batch", "20", "--rounds", "3", "--hardware", "testdata/host.json", "--out", dir}
	code := run(args, &out, errw)
	stderr := errw.buf.String()
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, cli.ExitInterrupted, stderr)
	}
	if n := strings.Count(stderr, "interrupted"); n != 1 || !strings.HasSuffix(stderr, "tpsim compare: interrupted\n") {
		t.Errorf("stderr should end with the one line 'tpsim compare: interrupted' (%d mentions):\n%s", n, stderr)
	}
	if strings.Contains(stderr, "rank ") || strings.Contains(stderr, "canceled") {
		t.Errorf("per-rank noise on stderr:\n%s", stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatalf("results.json not written after Ctrl-C: %v", err)
	}
	var res compare.Results
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Partial || res.RoundsDone != 1 || len(res.Rows) != 3 {
		t.Errorf("partial %v, %d rounds done, %d rows; want partial, 1 round, 3 rows", res.Partial, res.RoundsDone, len(res.Rows))
	}
	if !strings.Contains(out.String(), "PARTIAL: interrupted in round 2 of 3") {
		t.Errorf("stdout does not say the table is partial:\n%s", out.String())
	}
	for _, f := range []string{"report.md", "results.csv", "step_breakdown.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	// results.csv read alone says it is partial too (it had no flag): a column "partial", true
	// on every row, as results.json's "partial".
	f, err := os.Open(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 4 {
		t.Fatalf("results.csv: %d records, %v; want a header and 3 rows", len(recs), err)
	}
	col := slices.Index(recs[0], "partial")
	if col < 0 {
		t.Fatalf("results.csv has no partial column: %v", recs[0])
	}
	for _, r := range recs[1:] {
		if r[col] != "true" {
			t.Errorf("row %s: partial = %q, want true", r[0], r[col])
		}
	}
}

// With a CPU hog running (the issue's `yes > /dev/null`), --max-load refuses to measure and says
// why; without the flag compare only warns (TestCompareWritesEverything).
func TestCompareMaxLoadRefusesUnderAHog(t *testing.T) {
	yes, err := osexec.LookPath("yes")
	if err != nil {
		t.Skip("no yes(1) to load the machine with")
	}
	hog := osexec.Command(yes)
	if err := hog.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { hog.Process.Kill(); hog.Wait() }()
	_, errs, code := runArgs(t, "compare", "--max-load", "0.05", "--model", "seed-mlp", "--meshes", "1", "--hardware", "testdata/host.json", "--out", t.TempDir())
	if code != cli.ExitFailure || !strings.Contains(errs, "more than --max-load 5%") {
		t.Errorf("exit %d, stderr %q; want a refusal naming --max-load", code, errs)
	}
}
