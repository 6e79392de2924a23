package model

// Info summarises a model: one row of tpsim models; the JSON keys are those of its --json.
type Info struct {
	Name      string `json:"name"`
	Family    string `json:"family"`
	Kind      string `json:"kind"`
	Params    int64  `json:"params"`
	Active    int64  `json:"active_params"`        // what one token uses (Model.ActiveParams); Params for a dense model
	MTP       int64  `json:"mtp_params,omitempty"` // multi-token prediction modules, not in Params (Model.MTPParams)
	Experts   int    `json:"experts,omitempty"`    // routed experts per MoE layer
	TopK      int    `json:"experts_per_token,omitempty"`
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

// Info summarises m.
func (m *Model) Info() Info {
	info := Info{Name: m.Name, Family: m.Family, Kind: "mlp", Params: m.Params(), Active: m.ActiveParams(), MTP: m.MTPParams(), Published: m.Published,
		Seq: m.Seq, Batch: m.Batch, Source: m.Source}
	if t := m.Transformer; t != nil {
		info.Kind = "transformer"
		info.Layers, info.Hidden, info.Heads, info.KVHeads = t.Layers, t.Hidden, t.Heads, t.KVHeads
		info.FFN, info.Vocab = t.FFN, t.Vocab
		if t.MoE != nil {
			info.Experts, info.TopK = t.MoE.Experts, t.MoE.TopK
		}
	} else {
		// An MLP: its Linear layers are its layers.
		for _, n := range m.Root.Walk() {
			if n.Module.Kind == KindLinear {
				info.Layers++
			}
		}
	}
	return info
}

// PresetInfos summarises every preset model, in PresetNames order.
func PresetInfos() ([]Info, error) {
	var infos []Info
	for _, name := range PresetNames() {
		m, err := Preset(name)
		if err != nil {
			return nil, err
		}
		infos = append(infos, m.Info())
	}
	return infos, nil
}
