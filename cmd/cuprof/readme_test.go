package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The README's console blocks are examples of what cuprof prints. The tests
// below hold them to what it prints today: TestReadmeHasNoMachinePaths
// reads every block, TestReadmeExamples runs the commands that can run
// here (on the simulated driver, in a temporary directory) and compares
// each line the README shows with today's output by its shape: numbers,
// units, addresses, ids and the folders of paths are masked, so labels,
// headers, wording and the names in table rows are checked and the timing
// noise is not.

// readmeBlock is one ```console block of README.md.
type readmeBlock struct {
	line int // of the opening fence, 1-based
	text []readmeLine
	cmds []readmeCmd
}

// readmeLine is one line of a block, with its line number in README.md.
type readmeLine struct {
	n    int
	text string
}

// readmeCmd is a "$ " line (with its "\" continuations) and the lines the
// README shows it printing; "..." lines (output left out) are not kept.
type readmeCmd struct {
	line int
	text string
	want []readmeLine
}

func readReadme(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	cont := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```console":
			blocks = append(blocks, readmeBlock{line: n})
			cur = &blocks[len(blocks)-1]
			continue
		case cur == nil:
			continue
		case strings.TrimSpace(line) == "```":
			cur, cont = nil, false
			continue
		}
		cur.text = append(cur.text, readmeLine{n, line})
		switch {
		case cont:
			c := &cur.cmds[len(cur.cmds)-1]
			c.text = strings.TrimSuffix(c.text, `\`) + " " + strings.TrimSpace(line)
		case strings.HasPrefix(line, "$ "):
			cur.cmds = append(cur.cmds, readmeCmd{line: n, text: strings.TrimPrefix(line, "$ ")})
		case strings.TrimSpace(line) == "" || strings.TrimSpace(line) == "...":
		case len(cur.cmds) > 0:
			c := &cur.cmds[len(cur.cmds)-1]
			c.want = append(c.want, readmeLine{n, line})
		default:
			t.Errorf("README.md:%d: output before the block's first command: %q", n, line)
		}
		cont = strings.HasSuffix(line, `\`) && len(cur.cmds) > 0
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no console blocks")
	}
	return blocks
}

// machinePath is a path of this machine or of the one an example was
// recorded on: the reader's differ, and they say nothing about cuprof.
var machinePath = regexp.MustCompile(`(^|[^\w.~-])/(tmp|home|root|work|var/tmp|Users)/`)

// TestReadmeHasNoMachinePaths: no console block of README.md shows a
// machine's own paths or this machine's host name, including the block
// recorded on a GPU machine that TestReadmeExamples cannot rerun.
func TestReadmeHasNoMachinePaths(t *testing.T) {
	var host *regexp.Regexp
	if h, err := os.Hostname(); err == nil && len(strings.Split(h, ".")[0]) >= 2 && !strings.HasPrefix(h, "localhost") {
		host = regexp.MustCompile(`\b` + regexp.QuoteMeta(strings.Split(h, ".")[0]) + `\b`)
	}
	for _, b := range readReadme(t) {
		for _, l := range b.text {
			if machinePath.MatchString(l.text) {
				t.Errorf("README.md:%d shows a machine path: %s", l.n, l.text)
			}
			if host != nil && host.MatchString(l.text) {
				t.Errorf("README.md:%d shows this machine's host name (%s): %s", l.n, host, l.text)
			}
		}
	}
}

var (
	// pathDirs is the folders of a path: where a clone or a CPython lies.
	pathDirs = regexp.MustCompile(`[^\s/()]*/`)
	// hostName is the host a trace was recorded on, as report and dump
	// show it.
	hostName = regexp.MustCompile(`\bhost[ =][^\s,]+`)
	dashes   = regexp.MustCompile(`-{3,}`)
	// number is a number with its sign and unit, an address or an id.
	number = regexp.MustCompile(`[+-]?(?:0x[0-9a-f]+|\d+(?:[.,]\d+)*(?:e[+-]?\d+)?)(?:\s?(?:ns|us|ms|s|KiB|MiB|GiB|B|x)\b|%)?`)
	spaces = regexp.MustCompile(`\s+`)
)

// counted is a word after a number: "1 thread" and "2 threads" are one
// shape.
var counted = regexp.MustCompile(`# [A-Za-z]+`)

func singular(s string) string {
	switch {
	case strings.HasSuffix(s, "sses"):
		return strings.TrimSuffix(s, "es")
	case strings.HasSuffix(s, "s") && !strings.HasSuffix(s, "ss"):
		return strings.TrimSuffix(s, "s")
	}
	return s
}

// shape is a line with what varies between runs masked: the folders of
// paths, host names, the width of a table's rules, numbers with their
// units, addresses and ids (and the plural of what they count), and runs
// of spaces.
func shape(line string) string {
	s := pathDirs.ReplaceAllString(line, "")
	s = hostName.ReplaceAllString(s, "host HOST")
	s = dashes.ReplaceAllString(s, "---")
	s = number.ReplaceAllString(s, "#")
	s = counted.ReplaceAllStringFunc(s, singular)
	return strings.TrimSpace(spaces.ReplaceAllString(s, " "))
}

// rankedHeading names the lists whose rows are the first few of a ranking
// by time (the top APIs and ranges of --stats, timeit's frames and the
// largest parts of a difference): which names make the cut is timing noise
// on a loaded machine, so their rows are checked with the name masked.
var rankedHeading = regexp.MustCompile(`top driver APIs by time:|top ranges by time:|Python frames \(self time\)|the largest parts:`)

// rowShape is the shape of a ranked row with its name masked: the words
// before its first number (with the kind of a difference's part, "frame"
// or "api", which the noise decides too).
func rowShape(line string) string {
	toks := strings.Fields(shape(line))
	i := 0
	for i < len(toks) && toks[i] != "#" {
		i++
	}
	if i == 0 || i == len(toks) {
		return strings.Join(toks, " ")
	}
	return strings.Join(append([]string{"*"}, toks[i:]...), " ")
}

// rankedLines reports which of a command's expected lines are rows of a
// ranked list: indented under a line rankedHeading matches.
func rankedLines(want []readmeLine) []bool {
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
	ranked := make([]bool, len(want))
	for i, l := range want {
		for j := i - 1; j >= 0; j-- {
			if indent(want[j].text) < indent(l.text) {
				ranked[i] = rankedHeading.MatchString(want[j].text)
				break
			}
		}
	}
	return ranked
}

// closest is the line of got nearest to want by edit distance of their
// shapes' words.
func closest(want string, got []string) string {
	w := strings.Fields(shape(want))
	best, bestD := "", -1
	for _, g := range got {
		d := wordDistance(w, strings.Fields(shape(g)))
		if bestD < 0 || d < bestD {
			best, bestD = g, d
		}
	}
	return best
}

func wordDistance(a, b []string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(b)]
}

// compareOutput reports each expected line whose shape is in no line of
// got (order within a command does not matter), with the closest line.
func compareOutput(c readmeCmd, got string) []string {
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	shapes, rows := map[string]bool{}, map[string]bool{}
	for _, g := range lines {
		shapes[shape(g)] = true
		rows[rowShape(g)] = true
	}
	var bad []string
	ranked := rankedLines(c.want)
	for i, w := range c.want {
		if shapes[shape(w.text)] || ranked[i] && rows[rowShape(w.text)] {
			continue
		}
		near := closest(w.text, lines)
		bad = append(bad, fmt.Sprintf("README.md:%d: %s\n  shape:   %s\n  closest: %s\n  shape:   %s",
			w.n, w.text, shape(w.text), near, shape(near)))
	}
	return bad
}

// splitShell splits a command line as sh would for the commands of the
// README: quotes, backslashes, "|" between commands, "#" comments.
func splitShell(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			w.WriteString(s[i+1 : i+1+j])
			i, inWord = i+1+j, true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '|':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			if c == '|' {
				words = append(words, "|")
			}
		case c == '#' && !inWord:
			i = len(s)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// readmeRunner runs a block's commands in a directory of its own.
type readmeRunner struct {
	t    *testing.T
	root string // the clone
	work string // the examples' directory: their files and what they write
	dir  string // the current directory, under work
}

// exec runs one command and returns what it printed (standard output and
// error together), or why it cannot run here.
func (r *readmeRunner) exec(text string) (out string, skip string, err error) {
	words, err := splitShell(text)
	if err != nil {
		return "", "", err
	}
	var stages [][]string
	for len(words) > 0 {
		i := 0
		for i < len(words) && words[i] != "|" {
			i++
		}
		stages = append(stages, words[:i])
		words = words[min(i+1, len(words)):]
	}
	argv := stages[0]
	if strings.Contains(text, "--otlp") || strings.Contains(argv[0], "=") {
		return "", "exports to an OpenTelemetry collector on the network", nil
	}
	var buf bytes.Buffer
	switch argv[0] {
	case "cd":
		r.dir = filepath.Join(r.dir, argv[1])
		return "", "", nil
	case "go":
		if _, err := exec.LookPath("go"); err != nil {
			return "", "no go toolchain on PATH", nil
		}
		args := append([]string{}, argv[1:]...)
		for i := range args {
			if i > 0 && args[i-1] == "-o" {
				args[i] = filepath.Join(r.dir, args[i])
			}
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = r.root
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		return buf.String(), "", err
	case "cuprof":
	default:
		return "", "", fmt.Errorf("the test cannot run %q", argv[0])
	}
	args := append([]string{}, argv[1:]...)
	if len(args) == 0 {
		return "", "", fmt.Errorf("no cuprof command")
	}
	switch args[0] {
	case "view":
		return "", "serves pprof's web UI until interrupted", nil
	case "export":
		return "", "exports to an OpenTelemetry collector on the network", nil
	case "timeit":
		if !contains(args, "--sim") {
			// The cuda.core/CuPy comparison: recorded on an H200 with the
			// real driver, cuda.core and CuPy; here there is neither.
			return "", "needs a GPU with the real cuda.core and CuPy (recorded on an H200)", nil
		}
		if _, err := exec.LookPath("python3"); err != nil {
			return "", "no python3 on PATH", nil
		}
		if !contains(args, "-n") {
			// The timed loop's length is a number the shapes mask: 1000
			// calls keep the run short on a loaded machine.
			args = append([]string{args[0], "-n", "1000"}, args[1:]...)
		}
	case "record":
		if contains(args, "python3") {
			if _, err := exec.LookPath("python3"); err != nil {
				return "", "no python3 on PATH", nil
			}
		}
	}
	if err := os.Chdir(r.dir); err != nil {
		return "", "", err
	}
	err = run(args, nil, &buf, &buf)
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		err = nil // an exit status (lint's findings), as the shell shows it
	}
	if err != nil {
		return buf.String(), "", err
	}
	out = buf.String()
	for _, st := range stages[1:] {
		out, err = filterStage(st, out)
		if err != nil {
			return "", "", err
		}
	}
	return out, "", nil
}

// filterStage applies the grep and head of a README pipeline to out.
func filterStage(argv []string, out string) (string, error) {
	lines := strings.SplitAfter(out, "\n")
	var kept []string
	switch {
	case len(argv) == 2 && argv[0] == "head" && strings.HasPrefix(argv[1], "-"):
		n, err := strconv.Atoi(argv[1][1:])
		if err != nil {
			return "", err
		}
		kept = lines[:min(n, len(lines))]
	case len(argv) >= 2 && argv[0] == "grep":
		invert := argv[1] == "-v"
		re, err := regexp.Compile(strings.ReplaceAll(argv[len(argv)-1], `\|`, "|"))
		if err != nil {
			return "", err
		}
		for _, l := range lines {
			if re.MatchString(l) != invert {
				kept = append(kept, l)
			}
		}
	default:
		return "", fmt.Errorf("the test cannot run %q in a pipeline", strings.Join(argv, " "))
	}
	return strings.Join(kept, ""), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// copyTree copies the files under src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o600)
	})
}

// TestReadmeExamples runs the commands of README.md's console blocks that
// can run here, in order, in a temporary directory holding a copy of
// examples/python (the go build of a block writes there too), on the
// simulated driver, and checks that every line the README shows for a
// command has its shape in what the command prints today. Skipped, and
// named in the log: cuprof view (serves until interrupted), cuprof export
// and OTEL_* (need a collector on the network), and the cuda.core/CuPy
// timeit (needs a GPU with the real libraries: recorded on an H200, kept
// as recorded; TestReadmeHasNoMachinePaths still reads it).
func TestReadmeExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and records the README's examples")
	}
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler: the shim and the simulated driver cannot be built")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir(wd) })
	work := t.TempDir()
	root := filepath.Join(wd, "..", "..")
	if err := copyTree(filepath.Join(root, "examples", "python"), filepath.Join(work, "examples", "python")); err != nil {
		t.Fatal(err)
	}
	r := &readmeRunner{t: t, root: root, work: work}
	ran := 0
	for _, b := range readReadme(t) {
		r.dir = work
		for _, c := range b.cmds {
			out, skip, err := r.exec(c.text)
			if skip != "" {
				t.Logf("README.md:%d: not run: %s: %s", c.line, skip, c.text)
				continue
			}
			if err != nil {
				t.Errorf("README.md:%d: %s: %v\n%s", c.line, c.text, err, out)
				continue
			}
			ran++
			if bad := compareOutput(c, out); len(bad) > 0 {
				t.Errorf("README.md:%d: $ %s\n%d of its %d lines are not in what it prints today:\n%s\n--- today's output:\n%s",
					c.line, c.text, len(bad), len(c.want), strings.Join(bad, "\n"), out)
			}
		}
	}
	if ran == 0 {
		t.Error("no command of the README ran")
	}
}
