package validate

import (
	"embed"
	"fmt"
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
