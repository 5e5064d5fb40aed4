// Package golden compares test output with golden files and shows a
// readable line diff when they differ. It is for tests only.
//
// Each test package makes its own flag with NewFlag, so the flag names users
// already type (-update, -update-flame, -update-dump) stay as they are and
// no two packages of one test binary register the same name.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Flag is a boolean command-line flag that, when set, makes Check rewrite
// golden files instead of comparing with them.
type Flag struct {
	name string
	on   *bool
}

// NewFlag registers a boolean flag called name (without the dash) on the
// default flag set. Call it once per test binary, in a package variable.
func NewFlag(name, usage string) *Flag {
	f := &Flag{name: name, on: flag.Bool(name, false, usage)}
	registered[name] = f
	return f
}

// registered holds the flags NewFlag made, by name.
var registered = map[string]*Flag{}

// Lookup returns the flag NewFlag registered as name, nil when none: for an
// external test package (package x_test) sharing the flag of the internal
// one in its test binary, which runs its package variables first.
func Lookup(name string) *Flag { return registered[name] }

// On reports whether the flag was given.
func (f *Flag) On() bool { return *f.on }

// Check compares got with the file at path. With the flag set it writes got
// there (mode 0600) instead. A missing file is fatal; a difference is an
// error showing the lines that differ.
func (f *Flag) Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *f.on {
		if err := os.WriteFile(path, got, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -%s creates it)", err, f.name)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -%s rewrites it):\n%s", path, f.name, Diff(string(want), string(got)))
	}
}

// maxLines is how many lines of each side Diff shows.
const maxLines = 40

// Diff shows where got departs from want: the common leading and trailing
// lines are cut, and the rest is listed with - for want and + for got,
// quoted so that spaces, tabs and bytes that are not text show.
func Diff(want, got string) string {
	if want == got {
		return "(no difference)\n"
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	pre := 0
	for pre < len(w) && pre < len(g) && w[pre] == g[pre] {
		pre++
	}
	suf := 0
	for suf < len(w)-pre && suf < len(g)-pre && w[len(w)-1-suf] == g[len(g)-1-suf] {
		suf++
	}
	w, g = w[pre:len(w)-suf], g[pre:len(g)-suf]
	var b strings.Builder
	fmt.Fprintf(&b, "from line %d: %d line(s) of want replaced by %d line(s) of got\n", pre+1, len(w), len(g))
	list := func(sign string, lines []string) {
		for i, l := range lines {
			if i == maxLines {
				fmt.Fprintf(&b, "%s ... %d more\n", sign, len(lines)-i)
				return
			}
			fmt.Fprintf(&b, "%s %q\n", sign, l)
		}
	}
	list("-", w)
	list("+", g)
	return b.String()
}
