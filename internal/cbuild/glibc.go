package cbuild

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A GlibcVersion is a glibc symbol version, as GLIBC_2.34 names 2.34.
type GlibcVersion struct{ Major, Minor int }

func (v GlibcVersion) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Less reports whether v is older than w.
func (v GlibcVersion) Less(w GlibcVersion) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

// ParseGlibcVersion reads "GLIBC_2.34" or "2.34".
func ParseGlibcVersion(s string) (GlibcVersion, bool) {
	s = strings.TrimPrefix(s, "GLIBC_")
	maj, min, ok := strings.Cut(s, ".")
	if !ok {
		return GlibcVersion{}, false
	}
	if i := strings.IndexByte(min, '.'); i >= 0 { // 2.2.5
		min = min[:i]
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil {
		return GlibcVersion{}, false
	}
	return GlibcVersion{a, b}, true
}

// GlibcNeeded returns the newest GLIBC_ symbol version the ELF object at
// path asks for (what a wheel's manylinux tag and a prebuilt part's NEEDS
// say), and false when it asks for none.
func GlibcNeeded(path string) (GlibcVersion, bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return GlibcVersion{}, false, err
	}
	defer f.Close()
	needs, err := f.DynamicVersionNeeds()
	if err != nil {
		return GlibcVersion{}, false, nil // no version needs: a static object
	}
	var best GlibcVersion
	found := false
	for _, n := range needs {
		for _, d := range n.Needs {
			if v, ok := ParseGlibcVersion(d.Dep); ok && strings.HasPrefix(d.Dep, "GLIBC_") && (!found || best.Less(v)) {
				best, found = v, true
			}
		}
	}
	return best, found, nil
}

// glibcProvided returns the newest GLIBC_ version the machine's C library
// defines: the libc.so.6 this process has mapped (a cuprof built with cgo),
// else the first found where the dynamic linker looks. Not found (musl, or
// no libc where it was looked for): false.
func glibcProvided() (GlibcVersion, bool) {
	var paths []string
	if f, err := os.Open("/proc/self/maps"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if i := strings.IndexByte(sc.Text(), '/'); i >= 0 && strings.HasSuffix(sc.Text(), "/libc.so.6") {
				paths = append(paths, sc.Text()[i:])
				break
			}
		}
		f.Close()
	}
	paths = append(paths, "/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6",
		"/lib64/libc.so.6", "/usr/lib64/libc.so.6", "/lib/libc.so.6")
	for _, p := range paths {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		defs, err := f.DynamicVersions()
		f.Close()
		if err != nil {
			continue
		}
		var best GlibcVersion
		found := false
		for _, d := range defs {
			if v, ok := ParseGlibcVersion(d.Name); ok && strings.HasPrefix(d.Name, "GLIBC_") && (!found || best.Less(v)) {
				best, found = v, true
			}
		}
		if found {
			return best, true
		}
	}
	return GlibcVersion{}, false
}
