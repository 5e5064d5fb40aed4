package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cuprof/cuprof/internal/output"
)

// flagValues are the values shell completion offers for a command's flag
// ("" for every command that has the flag). TestCompletedValuesAreAccepted
// runs each one through its command, so the list cannot drift from what the
// commands accept.
var flagValues = map[string]map[string][]string{
	"": {
		"view":          {"api", "memory", "lifetime"},
		"otlp-protocol": {"grpc", "http"},
	},
	"record": {
		"python":           {"full", "stacks", "off"},
		"python-scope":     {"cuda", "all"},
		"timing":           {"both", "end"},
		"when-full":        {"wait", "drop"},
		"on-recorder-exit": {"stop", "continue"},
	},
	"demo":     {"python": {"python3", "none"}},
	"report":   {"format": {"text", "json", "csv"}},
	"diff":     {"format": {"text", "json", "csv"}},
	"lint":     {"format": {"text", "json", "sarif", "csv"}, "fail-on": {"info", "warning", "error", "never"}},
	"timeline": {"format": {"perfetto", "chrome-json"}},
}

// completeFlagValues registers the completions of flagValues on every
// command under root.
func completeFlagValues(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			vals, ok := flagValues[c.Name()][f.Name]
			if !ok {
				vals, ok = flagValues[""][f.Name]
			}
			if !ok {
				return
			}
			_ = c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp))
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// newManCmd is "cuprof man DIR": one roff man page per command, written
// from the same cobra tree as --help (cobra's own generator, cobra/doc,
// needs github.com/cpuguy83/go-md2man, which this project does not depend
// on).
func newManCmd(g *globalOptions, root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write man pages (cuprof.1, cuprof-record.1, ...) into DIR",
		Args:   usageArgs(cobra.ExactArgs(1)),
		Hidden: false,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := writeManPages(g, root, args[0])
			if n > 0 {
				g.tell(g.info, "cuprof: wrote %d man pages into %s\n", n, args[0])
			}
			return err
		},
	}
}

// writeManPages writes a page for root and every visible command under it,
// each through internal/output like every other output (a private
// temporary file renamed into place; a link or special file at a page's
// name refused unless --force), mode 0644 for a new page, an existing page
// replaced rather than kept as .old. It returns how many it wrote.
func writeManPages(g *globalOptions, root *cobra.Command, dir string) (int, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return 0, fmt.Errorf("man: %s is not a directory; create it first", dir)
	}
	opts := append(outputOptions(g), output.Perm(0o644), output.Replace())
	n := 0
	var walk func(*cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() && c != root {
			return nil
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		page := manPage(c)
		if err := output.WriteFile(filepath.Join(dir, name), func(w io.Writer) error {
			_, err := w.Write(page)
			return err
		}, opts...); err != nil {
			return fmt.Errorf("man: %w", err)
		}
		n++
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	return n, walk(root)
}

// roff escapes text for a man page: backslashes, and a leading dot or
// quote, which roff would take as a request.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			b.WriteString(`\&`)
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// manPage is c's page: NAME, SYNOPSIS, DESCRIPTION, OPTIONS (its own and
// the inherited ones), EXAMPLES, SEE ALSO.
func manPage(c *cobra.Command) []byte {
	var b bytes.Buffer
	title := strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-"))
	date := time.Now().UTC().Format("2006-01-02")
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		var sec int64
		if _, err := fmt.Sscan(s, &sec); err == nil {
			date = time.Unix(sec, 0).UTC().Format("2006-01-02")
		}
	}
	fmt.Fprintf(&b, ".TH %q 1 %q %q \"cuprof manual\"\n", title, date, "cuprof "+version)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(strings.ReplaceAll(c.CommandPath(), " ", "-")), roff(c.Short))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B %s\n", roff(c.UseLine()))
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&b, ".SH DESCRIPTION\n")
	for _, para := range strings.Split(strings.TrimSpace(desc), "\n\n") {
		fmt.Fprintf(&b, ".PP\n%s\n", roff(para))
	}
	writeFlags := func(head string, fs *pflag.FlagSet) {
		var flags []*pflag.Flag
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				flags = append(flags, f)
			}
		})
		if len(flags) == 0 {
			return
		}
		sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
		fmt.Fprintf(&b, ".SH %s\n", head)
		for _, f := range flags {
			name := "\\-\\-" + roff(f.Name)
			if f.Shorthand != "" {
				name = "\\-" + f.Shorthand + ", " + name
			}
			if f.Value.Type() != "bool" {
				name += " " + strings.ToUpper(f.Value.Type())
			}
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s", name, roff(f.Usage))
			if d := f.DefValue; d != "" && d != "false" && d != "[]" && d != "0" {
				fmt.Fprintf(&b, " (default %s)", roff(d))
			}
			b.WriteString("\n")
		}
	}
	writeFlags("OPTIONS", c.NonInheritedFlags())
	writeFlags("OPTIONS INHERITED FROM CUPROF", c.InheritedFlags())
	if c.Example != "" {
		fmt.Fprintf(&b, ".SH EXAMPLES\n.nf\n%s\n.fi\n", roff(c.Example))
	}
	var see []string
	if c.HasParent() {
		see = append(see, strings.ReplaceAll(c.Parent().CommandPath(), " ", "-")+"(1)")
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			see = append(see, strings.ReplaceAll(sub.CommandPath(), " ", "-")+"(1)")
		}
	}
	if len(see) > 0 {
		fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", roff(strings.Join(see, ", ")))
	}
	return b.Bytes()
}
