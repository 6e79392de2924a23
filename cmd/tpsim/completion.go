package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
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
		switch sh := fs.Arg(0); sh {
		case "":
			err = cli.Usagef("name a shell: tpsim completion bash, zsh or fish")
		case "bash":
			_, err = io.WriteString(stdout, bashCompletion())
		case "zsh":
			_, err = io.WriteString(stdout, zshCompletion())
		case "fish":
			_, err = io.WriteString(stdout, fishCompletion())
		default:
			err = cli.Usagef("unknown shell %q; valid: %s", sh, strings.Join(shells, ", "))
		}
	}
	return cli.Finish("completion", fs, completionHelp, err, stdout, stderr)
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

func hardwareNames() []string { return append(hardware.Names(), hardware.HostName) }

func bashCompletion() string {
	var b strings.Builder
	flags := commandFlags()
	b.WriteString("# bash completion for tpsim (tpsim completion bash)\n_tpsim() {\n")
	b.WriteString("  local cur prev cmd\n  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n  cmd=\"${COMP_WORDS[1]}\"\n")
	fmt.Fprintf(&b, "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n    COMPREPLY=($(compgen -W %q -- \"$cur\"))\n    return\n  fi\n", strings.Join(commandNames(), " ")+" --help --version")
	fmt.Fprintf(&b, "  case \"$prev\" in\n    --model) COMPREPLY=($(compgen -W %q -- \"$cur\")); compopt -o default 2>/dev/null; return ;;\n", strings.Join(model.PresetNames(), " "))
	fmt.Fprintf(&b, "    --hardware) COMPREPLY=($(compgen -W %q -- \"$cur\")); compopt -o default 2>/dev/null; return ;;\n  esac\n", strings.Join(hardwareNames(), " "))
	b.WriteString("  case \"$cmd\" in\n")
	for _, c := range commands {
		words := prefixed(flags[c.name])
		switch c.name {
		case "completion":
			words = shells
		case "help":
			continue
		}
		fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", c.name, strings.Join(words, " "))
	}
	b.WriteString("  esac\n}\ncomplete -o default -F _tpsim tpsim\n")
	return b.String()
}

func prefixed(flags []string) []string {
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i] = "--" + f
	}
	return out
}

func zshCompletion() string {
	var b strings.Builder
	flags := commandFlags()
	b.WriteString("#compdef tpsim\n# zsh completion for tpsim (tpsim completion zsh)\n_tpsim() {\n  local -a cmds\n  cmds=(\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "    %s\n", zshQuote(c.name+":"+c.summary))
	}
	b.WriteString("  )\n  if (( CURRENT == 2 )); then\n    _describe 'command' cmds\n    return\n  fi\n")
	fmt.Fprintf(&b, "  case \"${words[CURRENT-1]}\" in\n    --model) _alternative 'presets:model:(%s)' 'files:config:_files'; return ;;\n", strings.Join(model.PresetNames(), " "))
	fmt.Fprintf(&b, "    --hardware) _alternative 'presets:hardware:(%s)' 'files:hardware file:_files'; return ;;\n  esac\n", strings.Join(hardwareNames(), " "))
	b.WriteString("  case \"${words[2]}\" in\n")
	for _, c := range commands {
		words := prefixed(flags[c.name])
		if c.name == "completion" {
			words = shells
		}
		fmt.Fprintf(&b, "    %s) compadd -- %s ;;\n", c.name, strings.Join(words, " "))
	}
	b.WriteString("  esac\n}\ncompdef _tpsim tpsim\n")
	return b.String()
}

func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func fishCompletion() string {
	var b strings.Builder
	flags := commandFlags()
	b.WriteString("# fish completion for tpsim (tpsim completion fish)\ncomplete -c tpsim -f\n")
	fmt.Fprintf(&b, "complete -c tpsim -n __fish_use_subcommand -l version -d 'print the version'\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "complete -c tpsim -n __fish_use_subcommand -a %s -d %s\n", c.name, zshQuote(c.summary))
	}
	names := make([]string, 0, len(flags))
	for n := range flags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, f := range flags[n] {
			line := fmt.Sprintf("complete -c tpsim -n '__fish_seen_subcommand_from %s' -l %s", n, f)
			switch f {
			case "model":
				line += fmt.Sprintf(" -r -F -a %s", zshQuote(strings.Join(model.PresetNames(), " ")))
			case "hardware":
				line += fmt.Sprintf(" -r -F -a %s", zshQuote(strings.Join(hardwareNames(), " ")))
			}
			b.WriteString(line + "\n")
		}
	}
	fmt.Fprintf(&b, "complete -c tpsim -n '__fish_seen_subcommand_from completion' -a %s\n", zshQuote(strings.Join(shells, " ")))
	return b.String()
}
