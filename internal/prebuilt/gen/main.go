// Command gen compiles cuprof's C parts for a release build and lays them
// out as internal/prebuilt embeds them (see that package): one directory
// per part, named by the key cbuild finds it by, with NEEDS and LINKS.
// The compiler is $CC (a cross compiler for another platform).
//
//	CC=aarch64-linux-gnu-gcc go run ./internal/prebuilt/gen -o internal/prebuilt/parts
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cuprof/cuprof/cudawrap/shim"
	"github.com/cuprof/cuprof/cudawrap/sim"
	"github.com/cuprof/cuprof/internal/cbuild"
)

// A part is one C part: what cbuild keys it by and how it is built.
type part struct {
	kind    string
	sources fs.FS
	flags   []string
	build   func(context.Context) (string, error)
}

func main() {
	out := flag.String("o", "", "the directory to fill (emptied first)")
	needs := flag.Bool("needs", false, "print the newest glibc version the named ELF files ask for (2.34), and build nothing")
	flag.Parse()
	if *needs {
		v, err := newestNeed(flag.Args())
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		fmt.Println(v)
		return
	}
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gen: -o DIR is required")
		os.Exit(2)
	}
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	cache, err := os.MkdirTemp("", "cuprof-prebuilt-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	// A cache of its own, and never the prebuilt parts of the gen binary.
	os.Setenv("CUPROF_CACHE_DIR", cache)
	os.Setenv("CUPROF_NO_PREBUILT", "1")
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	parts := []part{
		{"shim", shim.Sources, shim.BuildFlags(), func(ctx context.Context) (string, error) {
			p, err := shim.Library(ctx)
			return filepath.Dir(p), err
		}},
		{"sim", sim.Sources, sim.CFlags, sim.Driver},
	}
	ctx := context.Background()
	for _, p := range parts {
		built, err := p.build(ctx)
		if err != nil {
			return fmt.Errorf("build %s: %w", p.kind, err)
		}
		key, err := cbuild.SourceKey(p.kind, p.flags, p.sources)
		if err != nil {
			return err
		}
		if err := lay(built, filepath.Join(out, p.kind+"-"+key)); err != nil {
			return fmt.Errorf("%s: %w", p.kind, err)
		}
	}
	return nil
}

// lay copies a built part's files from built into dir, its links into
// LINKS, and writes NEEDS: the newest glibc version any file asks for.
func lay(built, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(built)
	if err != nil {
		return err
	}
	var links []string
	var needs cbuild.GlibcVersion
	for _, e := range entries {
		from := filepath.Join(built, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(from)
			if err != nil {
				return err
			}
			links = append(links, e.Name()+" "+target)
			continue
		}
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o755); err != nil {
			return err
		}
		if v, ok, err := cbuild.GlibcNeeded(from); err == nil && ok && needs.Less(v) {
			needs = v
		}
	}
	sort.Strings(links)
	if len(links) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "LINKS"), []byte(strings.Join(links, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "NEEDS"), []byte("glibc "+needs.String()+"\n"), 0o644)
}

// newestNeed returns the newest glibc version any of files asks for.
func newestNeed(files []string) (cbuild.GlibcVersion, error) {
	var newest cbuild.GlibcVersion
	for _, f := range files {
		v, ok, err := cbuild.GlibcNeeded(f)
		if err != nil {
			return newest, fmt.Errorf("%s: %w", f, err)
		}
		if ok && newest.Less(v) {
			newest = v
		}
	}
	return newest, nil
}
