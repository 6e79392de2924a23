package study

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tpsim/tpsim/reports"
)

// The study's figures as PNGs, to look at: TPSIM_FIG_DIR=/some/dir go test ./study -run
// TestFiguresRenderAsPNG writes them there (the clipped legends, overlapping labels
// and labels over points were found, and their fixes checked, by looking at these).
func TestFiguresRenderAsPNG(t *testing.T) {
	st := loadSmall(t)
	dir := t.TempDir()
	res, err := Run(context.Background(), st, dir, Options{Version: testVersion})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := NewReport(st, res, testVersion, dir)
	if err != nil {
		t.Fatal(err)
	}
	figs, err := rep.Figures()
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("TPSIM_FIG_DIR")
	if out == "" {
		out = t.TempDir()
	}
	for _, f := range figs {
		if f.Drawer == nil || f.Height <= 0 {
			t.Fatalf("figure %s has no drawer to render", f.ID)
		}
		if err := reports.Save(f.Drawer, out, f.ID, reports.DefaultWidth, f.Height); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(out, f.ID+".png")); err != nil || fi.Size() < 1000 {
			t.Errorf("%s.png: %v", f.ID, err)
		}
	}
}
