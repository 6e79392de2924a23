package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/reports"
)

const completionHelp = `Usage: tpsim completion bash|zsh|fish

Print a shell completion script for tpsim: commands, each command's flags, and the values of
--model (the presets) and --hardware (the presets and host).

  bash:  source <(tpsim completion bash)         # or save it in /etc/bash_completion.d/tpsim
  zsh:   source <(tpsim completion zsh)          # after compinit; or save it as _tpsim in $fpath
  fish:  tpsim completion fish > ~/.config/fish/completions/tpsim.fish
`

var shells = []string{"bash", "zsh", "fish"}

func runCompletion(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlagSet("completion")
	err := cli.ParseFlags(fs, args, 1)
	if err == nil {
		c := completion()
		switch sh := fs.Arg(0); sh {
		case "":
			err = cli.Usagef("name a shell: tpsim completion bash, zsh or fish")
		case "bash":
			_, err = io.WriteString(stdout, c.Bash())
		case "zsh":
			_, err = io.WriteString(stdout, c.Zsh())
		case "fish":
			_, err = io.WriteString(stdout, c.Fish())
		default:
			err = cli.Usagef("unknown shell %q; valid: %s", sh, strings.Join(shells, ", "))
		}
	}
	return cli.Finish("completion", fs, completionHelp, err, stdout, stderr)
}

// completion is what the scripts offer: the commands, their flags, the presets.
func completion() *reports.Completion {
	c := &reports.Completion{Tool: "tpsim", Flags: commandFlags(), Shells: shells, Models: model.PresetNames(),
		Hardware: append(hardware.Names(), hardware.HostName)}
	for _, cmd := range commands {
		c.Commands = append(c.Commands, [2]string{cmd.name, cmd.summary})
	}
	return c
}

// flagLine matches a flag in the "Flags:" part of a command's help: "  -h, --help   show ..." or
// "      --model string   ...".
var flagLine = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`)

// commandFlags returns each command's long flags, read from its own --help, so that the scripts
// always match the flags the commands really parse.
func commandFlags() map[string][]string {
	out := map[string][]string{}
	for _, c := range commands {
		if c.name == "completion" {
			continue
		}
		var help bytes.Buffer
		c.run([]string{"--help"}, &help, io.Discard)
		_, flags, _ := strings.Cut(help.String(), "\nFlags:\n")
		for _, m := range flagLine.FindAllStringSubmatch(flags, -1) {
			out[c.name] = append(out[c.name], m[1])
		}
	}
	return out
}
