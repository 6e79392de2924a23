package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/reports"
)

const modelsHelp = `Usage: tpsim models [flags]

List the preset models: name, family, kind, parameters (exact, short), ACTIVE (what one token
uses: a mixture of experts' top-k routed and shared experts), and for transformers their layers,
hidden size, attention heads (query/key-value), MLP width, vocabulary and default sequence
length. Any dense one, or a Hugging Face config.json, can be given to 'tpsim predict --model'
(mixture-of-experts models are listed, not yet priced: issue 34). With --model, describe that
one model instead: a preset, or a config.json or tpsim model file, with its exact counts.
`

// modelsOptions are the flags of tpsim models.
type modelsOptions struct {
	JSON  bool
	Model string
}

var runModels = subcommand("models", modelsHelp, parseModels)

func parseModels(args []string) (*modelsOptions, *pflag.FlagSet, error) {
	o := &modelsOptions{}
	fs := cli.NewFlagSet("models")
	fs.BoolVar(&o.JSON, "json", false, "print the list as JSON")
	fs.StringVar(&o.Model, "model", "", "describe only this model: a preset name or the path of a config.json or tpsim model file")
	return o, fs, cli.ParseFlags(fs, args, 0)
}

func (o *modelsOptions) run(w, _ io.Writer) error {
	infos, err := model.PresetInfos()
	if o.Model != "" {
		var m *model.Model
		if m, err = model.Load(o.Model); err == nil {
			infos = []model.Info{m.Info()}
		}
	}
	if err != nil {
		return err
	}
	if o.JSON {
		return reports.WriteJSON(w, infos)
	}
	ew := &reports.ErrWriter{W: w}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tFAMILY\tKIND\tPARAMS\t\tACTIVE\tLAYERS\tHIDDEN\tHEADS/KV\tFFN\tVOCAB\tSEQ\n")
	for _, m := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d", m.Name, m.Family, m.Kind, reports.Commas(m.Params), reports.ShortCount(m.Params), reports.ShortCount(m.Active), m.Layers)
		if m.Kind == "transformer" {
			fmt.Fprintf(tw, "\t%d\t%d/%d\t%d\t%d\t%d\n", m.Hidden, m.Heads, m.KVHeads, m.FFN, m.Vocab, m.Seq)
		} else {
			fmt.Fprintf(tw, "\t-\t-\t-\t-\t-\n")
		}
	}
	tw.Flush()
	return ew.Err
}
