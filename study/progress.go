package study

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// ProgressBar returns an Options.Progress that shows tpsim study's progress on w, and the
// function that ends it. The bar counts the plans this run makes, so that its rate and ETA are
// this run's; the plans resumed from cells.jsonl are reported once, before it.
func ProgressBar(w io.Writer) (progress func(done, total int), end func()) {
	var bar *progressbar.ProgressBar
	base := -1
	progress = func(done, total int) {
		if base < 0 {
			base = done
			if done > 0 {
				fmt.Fprintf(w, "tpsim study: %d of %d plans resumed from %s; %d to run\n", done, total, CellsFile, total-done)
			}
		}
		if bar == nil {
			if done == total {
				return
			}
			base = done
			bar = progressbar.NewOptions(total-base,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription("tpsim study: plans"),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("plans"),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(250*time.Millisecond),
				progressbar.OptionSetWidth(30),
				progressbar.OptionSetRenderBlankState(true), // starts the clock of the rate now, not at the first plan
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }))
		}
		_ = bar.Set(done - base)
	}
	end = func() {
		if bar != nil {
			_ = bar.Exit()
		}
	}
	return progress, end
}
