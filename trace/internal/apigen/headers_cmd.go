package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// readHeaderDirs parses "13.0=DIR,12.6=DIR" (newest first) into the union
// of those versions' declarations.
func readHeaderDirs(spec string) (*headerSet, error) {
	var hs []*header
	for _, item := range strings.Split(spec, ",") {
		ver, dir, ok := strings.Cut(item, "=")
		if !ok || ver == "" || dir == "" {
			return nil, fmt.Errorf("-headers %q: want VERSION=DIR[,VERSION=DIR...], newest first", spec)
		}
		read := func(name string, must bool) (string, error) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil && (must || !os.IsNotExist(err)) {
				return "", err
			}
			return string(b), nil
		}
		var texts [4]string
		for i, n := range []string{"cuda.h", "cudaProfiler.h", "cudaTypedefs.h", "cudaProfilerTypedefs.h"} {
			t, err := read(n, i == 0 || i == 2)
			if err != nil {
				return nil, err
			}
			texts[i] = t
		}
		h, err := parseHeader(ver, []string{texts[0], texts[1]}, texts[2]+"\n"+texts[3])
		if err != nil {
			return nil, fmt.Errorf("headers %s in %s: %w", ver, dir, err)
		}
		hs = append(hs, h)
	}
	return unionHeaders(hs)
}
