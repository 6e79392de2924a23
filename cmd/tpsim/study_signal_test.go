//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/study"
)

// The issue: `study` interrupted with Ctrl-C exited 1, though its help and the README say 130.
// Now it keeps the plans done, says so, ends with the one line "interrupted" and exits 130.
func TestStudyCtrlCExits130(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	// 40 plans of gpt-tiny, one at a time: far more than finish between the first progress line
	// and the signal.
	src := "name: sigint\nmodels: [gpt-tiny]\nhardware: [a100-80g, h100-sxm]\ngpus: {from: 1, to: 20, step: 1}\ntokens: 1e9\nobjectives: [time]\nsim: on\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout bytes.Buffer
	errw := &sigintOn{trigger: "tpsim study: plans"}
	code := run([]string{"study", file, "--out", out, "--workers", "1"}, &stdout, errw)
	stderr := errw.buf.String()
	if !errw.sent {
		t.Fatalf("no progress line to interrupt on; stderr:\n%s", stderr)
	}
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, cli.ExitInterrupted, stderr)
	}
	if !strings.HasSuffix(stderr, "tpsim study: interrupted\n") {
		t.Errorf("stderr should end with the line 'tpsim study: interrupted':\n%s", stderr)
	}
	if !strings.Contains(stderr, "kept in "+filepath.Join(out, study.CellsFile)) || !strings.Contains(stderr, "run the same command again") {
		t.Errorf("stderr does not say where the plans done are kept and how to finish:\n%s", stderr)
	}
}
