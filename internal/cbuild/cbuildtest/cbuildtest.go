// Package cbuildtest gives tests a stand-in C compiler, so that a test about
// what surrounds a build (the cache, its trust checks, the first-run notice,
// concurrent first uses) need not pay for compiling the shim again: it
// "builds" each artifact by copying a real build of it, made once per test
// package with the real compiler.
package cbuildtest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Compiler is a stand-in C compiler: a shell script to set as CC.
type Compiler struct {
	// Path is the script's path.
	Path string
	log  string
}

// Options change what the stand-in does.
type Options struct {
	// Together, when 2 or more, makes each build of TogetherName wait until
	// that many are running at once (up to a minute, then it fails): a test
	// of concurrent first uses then knows they raced.
	Together     int
	TogetherName string
}

// New writes a stand-in compiler into a temporary directory of t. Called
// as the C compiler with "-o OUT", it copies artifacts[base name of OUT] to
// OUT; an output it has no artifact for fails the build.
func New(t testing.TB, artifacts map[string]string, opt Options) *Compiler {
	t.Helper()
	dir := t.TempDir()
	c := &Compiler{Path: filepath.Join(dir, "cc"), log: filepath.Join(dir, "builds.log")}
	bar := filepath.Join(dir, "together")
	if err := os.Mkdir(bar, 0o700); err != nil {
		t.Fatal(err)
	}
	var cases []string
	for name, src := range artifacts {
		if _, err := os.Stat(src); err != nil {
			t.Fatalf("stand-in compiler: artifact %s: %v", name, err)
		}
		cases = append(cases, fmt.Sprintf("%s) src=%s ;;", quote(name), quote(src)))
	}
	sort.Strings(cases)
	script := `#!/bin/sh
# A stand-in C compiler written by cbuildtest: copies a real build.
out=
while [ $# -gt 0 ]; do
	if [ "$1" = -o ]; then out=$2; shift; fi
	shift
done
name=${out##*/}
case "$name" in
` + strings.Join(cases, "\n") + `
*) echo "stand-in compiler: no artifact for -o $out" >&2; exit 1 ;;
esac
echo "$name" >> ` + quote(c.log) + `
if [ "$name" = ` + quote(opt.TogetherName) + ` ] && [ ` + fmt.Sprint(opt.Together) + ` -ge 2 ]; then
	: > ` + quote(bar) + `/$$
	i=0
	while [ "$(ls ` + quote(bar) + ` | wc -l)" -lt ` + fmt.Sprint(opt.Together) + ` ]; do
		i=$((i + 1))
		if [ $i -gt 6000 ]; then echo "stand-in compiler: ` + fmt.Sprint(opt.Together) + ` builds of $name never ran at once" >&2; exit 1; fi
		sleep 0.01
	done
fi
exec cp "$src" "$out"
`
	if err := os.WriteFile(c.Path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return c
}

// Builds returns the base names of the outputs built so far, in order.
func (c *Compiler) Builds() []string {
	b, err := os.ReadFile(c.log)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// Count returns how many times name was built.
func (c *Compiler) Count(name string) int {
	n := 0
	for _, b := range c.Builds() {
		if b == name {
			n++
		}
	}
	return n
}

// quote quotes s for the shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
