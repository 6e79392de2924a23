package validate

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The training split of the published runs ships inside the module (copied from the project's
// shared/validation with its README, which says where every figure comes from), so that
// `tpsim validate` and `tpsim fit` work from a clone.
//
//go:embed data/README.md data/runs.json data/runs_h100.json data/collectives.json data/hardware.json data/formulas.json
var dataFS embed.FS

// TrainingFiles are the files of the training split, in the order they are read.
var TrainingFiles = []string{"runs.json", "runs_h100.json"}

// Embedded returns the bytes of a file of data/.
func Embedded(name string) ([]byte, error) {
	b, err := dataFS.ReadFile("data/" + name)
	if err != nil {
		return nil, fmt.Errorf("validate: no embedded data file %q (files: README.md, %s, collectives.json, hardware.json, formulas.json)", name, "runs.json, runs_h100.json")
	}
	return b, nil
}

// Training returns the records of the training split and the records that could not be read.
func Training() ([]Record, []Skip, error) {
	var recs []Record
	var skips []Skip
	for _, f := range TrainingFiles {
		b, err := Embedded(f)
		if err != nil {
			return nil, nil, err
		}
		r, s, err := Parse("validate/data/"+f, b)
		if err != nil {
			return nil, nil, err
		}
		recs, skips = append(recs, r...), append(skips, s...)
	}
	return recs, skips, nil
}

// maxListed is how many unreadable records an error lists before "and N more".
const maxListed = 5

// unreadableFile is the error for a file none of whose records could be read (it printed "0
// compared" and exited 0): it names the file and why each record failed, the first maxListed
// of them.
func unreadableFile(name string, skips []Skip) error {
	var b strings.Builder
	fmt.Fprintf(&b, "none of the %d records of %s could be read:", len(skips), name)
	for i, s := range skips {
		if i == maxListed {
			fmt.Fprintf(&b, "; and %d more", len(skips)-maxListed)
			break
		}
		sep := ";"
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s: %s", sep, s.ID, strings.TrimPrefix(s.Reason, "unreadable record: "))
	}
	b.WriteString("; fix the fields named (the format is described in validate/data/README.md)")
	return errors.New(b.String())
}

// checkDataPath returns an error for a --data path that is a directory: --data takes files.
func checkDataPath(p string) error {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory; --data takes JSON files of run records, e.g. --data %s (repeat --data, or separate files with commas, for several)", p, filepath.Join(p, "runs.json"))
	}
	return nil
}
