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

List the preset models: name, family, kind, parameter count (exact, and short), and for
transformers their layers, hidden size, attention heads (query/key-value), MLP width, vocabulary
and default sequence length. Any of them, or a Hugging Face config.json, can be given to
'tpsim predict --model'.
`

// modelsOptions are the flags of tpsim models.
type modelsOptions struct {
	JSON bool
}

func runModels(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parseModels(args)
	if err == nil {
		err = o.run(stdout)
	}
	return cli.Finish("models", fs, modelsHelp, err, stdout, stderr)
}

func parseModels(args []string) (*modelsOptions, *pflag.FlagSet, error) {
	o := &modelsOptions{}
	fs := cli.NewFlagSet("models")
	fs.BoolVar(&o.JSON, "json", false, "print the list as JSON")
	return o, fs, cli.ParseFlags(fs, args, 0)
}

// modelInfo is one row of tpsim models; the JSON keys are those of --json.
type modelInfo struct {
	Name      string `json:"name"`
	Family    string `json:"family"`
	Kind      string `json:"kind"`
	Params    int64  `json:"params"`
	Published int64  `json:"published_params,omitempty"`
	Layers    int    `json:"layers,omitempty"`
	Hidden    int    `json:"hidden,omitempty"`
	Heads     int    `json:"heads,omitempty"`
	KVHeads   int    `json:"kv_heads,omitempty"`
	FFN       int    `json:"ffn,omitempty"`
	Vocab     int    `json:"vocab,omitempty"`
	Seq       int    `json:"seq,omitempty"`
	Batch     int    `json:"batch"`
	Source    string `json:"source,omitempty"`
}

// describe summarises m.
func describe(m *model.Model) modelInfo {
	info := modelInfo{Name: m.Name, Family: m.Family, Kind: "mlp", Params: m.Params(), Published: m.Published,
		Seq: m.Seq, Batch: m.Batch, Source: m.Source}
	if t := m.Transformer; t != nil {
		info.Kind = "transformer"
		info.Layers, info.Hidden, info.Heads, info.KVHeads = t.Layers, t.Hidden, t.Heads, t.KVHeads
		info.FFN, info.Vocab = t.FFN, t.Vocab
	} else {
		// An MLP: its Linear layers are its layers.
		for _, n := range m.Root.Walk() {
			if n.Module.Kind == model.KindLinear {
				info.Layers++
			}
		}
	}
	return info
}

// presetInfos describes every preset model, in PresetNames order.
func presetInfos() ([]modelInfo, error) {
	var infos []modelInfo
	for _, name := range model.PresetNames() {
		m, err := model.Preset(name)
		if err != nil {
			return nil, err
		}
		infos = append(infos, describe(m))
	}
	return infos, nil
}

func (o *modelsOptions) run(w io.Writer) error {
	infos, err := presetInfos()
	if err != nil {
		return err
	}
	if o.JSON {
		return reports.WriteJSON(w, infos)
	}
	ew := &reports.ErrWriter{W: w}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tFAMILY\tKIND\tPARAMS\t\tLAYERS\tHIDDEN\tHEADS/KV\tFFN\tVOCAB\tSEQ\n")
	for _, m := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d", m.Name, m.Family, m.Kind, reports.Commas(m.Params), reports.ShortCount(m.Params), m.Layers)
		if m.Kind == "transformer" {
			fmt.Fprintf(tw, "\t%d\t%d/%d\t%d\t%d\t%d\n", m.Hidden, m.Heads, m.KVHeads, m.FFN, m.Vocab, m.Seq)
		} else {
			fmt.Fprintf(tw, "\t-\t-\t-\t-\t-\n")
		}
	}
	tw.Flush()
	return ew.Err
}
