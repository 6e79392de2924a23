package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/strategies"
)

// The documentation a clone carries: README.md at the root and everything under docs/. These
// tests keep it navigable (every relative link and #anchor resolves) and complete for the command
// line (every command, flag and strategy key the CLI accepts is in docs/cli.md). They read only
// the command table and the strategies package's exported keys.

const repoRoot = "../.."

// docFiles lists README.md and every Markdown file under docs/, sorted.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing docs/: %v", err)
	}
	sort.Strings(files)
	return files
}

var (
	mdLink     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
	mdHeading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	slugDrop   = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// proseLines returns the lines of a Markdown file outside fenced code blocks, inline code
// removed, each with its 1-based line number.
func proseLines(text string) (lines []string, numbers []int) {
	fenced := false
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		lines = append(lines, inlineCode.ReplaceAllString(l, ""))
		numbers = append(numbers, i+1)
	}
	return lines, numbers
}

// anchors returns the #anchors GitHub gives a Markdown file's headings: the heading's text in
// lower case, punctuation dropped (backticks included), spaces as hyphens, and -1, -2, ... on
// repeats.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		m := mdHeading.FindStringSubmatch(l)
		if fenced || m == nil {
			continue
		}
		slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// brokenLinks checks every relative link in files (paths on disk) and returns one line per link
// that does not resolve: a missing file, or an #anchor no heading of the target makes.
func brokenLinks(files []string) ([]string, error) {
	var bad []string
	texts := map[string]string{}
	read := func(p string) (string, error) {
		if s, ok := texts[p]; ok {
			return s, nil
		}
		b, err := os.ReadFile(p)
		texts[p] = string(b)
		return string(b), err
	}
	for _, f := range files {
		text, err := read(f)
		if err != nil {
			return nil, err
		}
		lines, numbers := proseLines(text)
		for i, l := range lines {
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				resolved := f
				if path != "" {
					resolved = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
				}
				where := fmt.Sprintf("%s:%d: link %q", f, numbers[i], target)
				st, err := os.Stat(resolved)
				if err != nil {
					bad = append(bad, where+": no such file "+resolved)
					continue
				}
				if anchor == "" {
					continue
				}
				if st.IsDir() || !strings.HasSuffix(resolved, ".md") {
					bad = append(bad, where+": an #anchor on something that is not a Markdown file")
					continue
				}
				t, err := read(resolved)
				if err != nil {
					return nil, err
				}
				if !anchors(t)[anchor] {
					bad = append(bad, where+": no heading of "+resolved+" makes #"+anchor)
				}
			}
		}
	}
	return bad, nil
}

func TestDocsLinksResolve(t *testing.T) {
	bad, err := brokenLinks(docFiles(t, repoRoot))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// The checker itself: on files written here, a missing file and a missing anchor are reported,
// and the links that resolve (a file, a heading's anchor with backticks and punctuation, a
// repeated heading's -1, a link inside code) are not.
func TestDocsLinkCheckerFindsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("docs/b.md", "# B\n\n## `tpsim compare`: predicted, measured\n\n## Notes\n\n## Notes\n")
	a := write("README.md", strings.Join([]string{
		"[ok](docs/b.md) [ok](docs/b.md#tpsim-compare-predicted-measured) [ok](docs/b.md#notes-1)",
		"[ok](#a) `[ignored](nowhere.md)`",
		"```", "[ignored](nowhere.md)", "```",
		"[gone](docs/missing.md) [bad anchor](docs/b.md#nope) [web](https://example.com/x)",
		"# A",
	}, "\n"))
	bad, err := brokenLinks([]string{a})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 2 || !strings.Contains(bad[0], "docs/missing.md") || !strings.Contains(bad[1], "#nope") {
		t.Errorf("want the missing file and the missing anchor reported, got %d: %q", len(bad), bad)
	}
}

// helpFlag matches a flag line of a command's --help ("  -h, --help ..." or "      --model string").
var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z][a-z0-9-]*)`)

func TestDocsCLICoversCommandsFlagsAndStrategyKeys(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if len(commands) == 0 {
		t.Fatal("the command table is empty")
	}
	for _, c := range commands {
		if !strings.Contains(doc, "### tpsim "+c.name+"\n") {
			t.Errorf("docs/cli.md has no section \"### tpsim %s\"", c.name)
		}
		var out, errOut bytes.Buffer
		if code := c.run([]string{"--help"}, &out, &errOut); code != 0 {
			t.Errorf("tpsim %s --help: exit %d, stderr %q", c.name, code, errOut.String())
			continue
		}
		flags := helpFlag.FindAllStringSubmatch(out.String(), -1)
		if len(flags) == 0 {
			t.Errorf("tpsim %s --help lists no flags (not even --help): the pattern no longer reads it", c.name)
		}
		for _, f := range flags {
			if !regexp.MustCompile(`--` + regexp.QuoteMeta(f[1]) + `\b`).MatchString(doc) {
				t.Errorf("docs/cli.md does not mention --%s of tpsim %s", f[1], c.name)
			}
		}
	}
	keys := append(strategies.DimNames(), strategies.OptionKeys...)
	if len(keys) < 8 {
		t.Fatalf("strategies exports only %d keys: %v", len(keys), keys)
	}
	for _, k := range keys {
		// Every exported key is one the parser knows (a bad value is an error about the value,
		// not an unknown key), and has its row in the strategy key table.
		if _, err := strategies.Parse(k + "=?"); err == nil || strings.Contains(err.Error(), "unknown option") {
			t.Errorf("strategies.Parse(%q): %v; want an error about the value of a known key", k+"=?", err)
		}
		if !strings.Contains(doc, "| `"+k+"` |") {
			t.Errorf("docs/cli.md's strategy key table has no row for %q", k)
		}
	}
}

var updateDocs = flag.Bool("update-docs", false, "rewrite the help blocks of docs/cli.md from the commands' --help")

// TestDocsHelpBlocksAreTheHelp checks that each "### tpsim NAME" section of docs/cli.md shows,
// in its first code block, exactly what 'tpsim NAME --help' prints, so that the reference cannot
// drift from the commands. After a change to a command's help, rewrite the blocks with
// 'go test ./cmd/tpsim -run TestDocsHelpBlocksAreTheHelp -update-docs' and review the diff.
func TestDocsHelpBlocksAreTheHelp(t *testing.T) {
	path := filepath.Join(repoRoot, "docs", "cli.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range commands {
		var out bytes.Buffer
		c.run([]string{"--help"}, &out, io.Discard)
		head := "### tpsim " + c.name + "\n"
		i := strings.Index(doc, head)
		if i < 0 {
			continue // TestDocsCLICoversCommandsFlagsAndStrategyKeys reports it
		}
		open := strings.Index(doc[i:], "```\n")
		if open < 0 {
			t.Errorf("docs/cli.md: section %q has no code block", strings.TrimSpace(head))
			continue
		}
		start := i + open + len("```\n")
		end := strings.Index(doc[start:], "```\n")
		if end < 0 {
			t.Errorf("docs/cli.md: section %q's code block is not closed", strings.TrimSpace(head))
			continue
		}
		want := strings.TrimRight(out.String(), "\n") + "\n"
		if got := doc[start : start+end]; got != want {
			if *updateDocs {
				doc = doc[:start] + want + doc[start+end:]
				continue
			}
			t.Errorf("docs/cli.md's help of tpsim %s differs from 'tpsim %s --help'; rewrite it with 'go test ./cmd/tpsim -run TestDocsHelpBlocksAreTheHelp -update-docs'", c.name, c.name)
		}
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
