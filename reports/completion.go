package reports

import (
	"fmt"
	"sort"
	"strings"
)

// Completion is what a shell completion script for a command-line tool offers: its commands in
// the order its help lists them, each command's long flags (without the dashes), the words its
// completion command takes, and the values of --model and --hardware.
type Completion struct {
	Tool     string
	Commands [][2]string // name and summary
	Flags    map[string][]string
	Shells   []string // the arguments of the completion command itself
	Models   []string
	Hardware []string
}

// words is what command name completes to: its flags, or the shells for the completion command.
func (c *Completion) words(name string) []string {
	if name == "completion" {
		return c.Shells
	}
	out := make([]string, len(c.Flags[name]))
	for i, f := range c.Flags[name] {
		out[i] = "--" + f
	}
	return out
}

func (c *Completion) names() []string {
	out := make([]string, len(c.Commands))
	for i, cmd := range c.Commands {
		out[i] = cmd[0]
	}
	return out
}

// Bash is the completion script for bash.
func (c *Completion) Bash() string {
	var b strings.Builder
	t := c.Tool
	fmt.Fprintf(&b, "# bash completion for %s (%s completion bash)\n_%s() {\n", t, t, t)
	b.WriteString("  local cur prev cmd\n  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n  cmd=\"${COMP_WORDS[1]}\"\n")
	fmt.Fprintf(&b, "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n    COMPREPLY=($(compgen -W %q -- \"$cur\"))\n    return\n  fi\n", strings.Join(c.names(), " ")+" --help --version")
	fmt.Fprintf(&b, "  case \"$prev\" in\n    --model) COMPREPLY=($(compgen -W %q -- \"$cur\")); compopt -o default 2>/dev/null; return ;;\n", strings.Join(c.Models, " "))
	fmt.Fprintf(&b, "    --hardware) COMPREPLY=($(compgen -W %q -- \"$cur\")); compopt -o default 2>/dev/null; return ;;\n  esac\n", strings.Join(c.Hardware, " "))
	b.WriteString("  case \"$cmd\" in\n")
	for _, name := range c.names() {
		fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", name, strings.Join(c.words(name), " "))
	}
	fmt.Fprintf(&b, "  esac\n}\ncomplete -o default -F _%s %s\n", t, t)
	return b.String()
}

// Zsh is the completion script for zsh.
func (c *Completion) Zsh() string {
	var b strings.Builder
	t := c.Tool
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s (%s completion zsh)\n_%s() {\n  local -a cmds\n  cmds=(\n", t, t, t, t)
	for _, cmd := range c.Commands {
		fmt.Fprintf(&b, "    %s\n", shellQuote(cmd[0]+":"+cmd[1]))
	}
	b.WriteString("  )\n  if (( CURRENT == 2 )); then\n    _describe 'command' cmds\n    return\n  fi\n")
	fmt.Fprintf(&b, "  case \"${words[CURRENT-1]}\" in\n    --model) _alternative 'presets:model:(%s)' 'files:config:_files'; return ;;\n", strings.Join(c.Models, " "))
	fmt.Fprintf(&b, "    --hardware) _alternative 'presets:hardware:(%s)' 'files:hardware file:_files'; return ;;\n  esac\n", strings.Join(c.Hardware, " "))
	b.WriteString("  case \"${words[2]}\" in\n")
	for _, name := range c.names() {
		fmt.Fprintf(&b, "    %s) compadd -- %s ;;\n", name, strings.Join(c.words(name), " "))
	}
	fmt.Fprintf(&b, "  esac\n}\ncompdef _%s %s\n", t, t)
	return b.String()
}

// Fish is the completion script for fish.
func (c *Completion) Fish() string {
	var b strings.Builder
	t := c.Tool
	fmt.Fprintf(&b, "# fish completion for %s (%s completion fish)\ncomplete -c %s -f\n", t, t, t)
	fmt.Fprintf(&b, "complete -c %s -n __fish_use_subcommand -l version -d 'print the version'\n", t)
	for _, cmd := range c.Commands {
		fmt.Fprintf(&b, "complete -c %s -n __fish_use_subcommand -a %s -d %s\n", t, cmd[0], shellQuote(cmd[1]))
	}
	names := make([]string, 0, len(c.Flags))
	for n := range c.Flags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, f := range c.Flags[n] {
			line := fmt.Sprintf("complete -c %s -n '__fish_seen_subcommand_from %s' -l %s", t, n, f)
			switch f {
			case "model":
				line += fmt.Sprintf(" -r -F -a %s", shellQuote(strings.Join(c.Models, " ")))
			case "hardware":
				line += fmt.Sprintf(" -r -F -a %s", shellQuote(strings.Join(c.Hardware, " ")))
			}
			b.WriteString(line + "\n")
		}
	}
	fmt.Fprintf(&b, "complete -c %s -n '__fish_seen_subcommand_from completion' -a %s\n", t, shellQuote(strings.Join(c.Shells, " ")))
	return b.String()
}

// shellQuote quotes s for a POSIX shell (and zsh and fish): single quotes, each ' as '\”.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
