package record

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzParseMaps feeds arbitrary text to the /proc/PID/maps parser (the
// .maps file beside a ring is written by the traced program's shim, so it
// is the program's to garble): it never panics, every line it keeps names
// an absolute file over a non-empty range, and a kept line written back in
// the kernel's form parses to the same line.
func FuzzParseMaps(f *testing.F) {
	f.Add("55d0c2a00000-55d0c2a02000 r--p 00000000 08:01 1234 /usr/bin/prog\n" +
		"55d0c2a02000-55d0c2a05000 r-xp 00002000 08:01 1234 /usr/bin/prog\n" +
		"7f1e2c000000-7f1e2c021000 rw-p 00000000 00:00 0 \n" +
		"7f1e2d000000-7f1e2d200000 r-xp 00028000 08:01 99 /lib/x86_64-linux-gnu/libc.so.6\n" +
		"7ffc1a000000-7ffc1a021000 rw-p 00000000 00:00 0 [stack]\n")
	f.Add("1000-2000 r-xp 0 0:0 0 /a file with spaces (deleted)\n")
	f.Add("2000-1000 r-xp 0 0:0 0 /backwards\nzz-10 r-xp 0 0:0 0 /bad\n")
	f.Add(strings.Repeat("x", 70000) + "\n1000-2000 r-xp 0 0:0 0 /after-a-long-line\n")
	f.Fuzz(func(t *testing.T, text string) {
		for _, m := range parseMaps(text) {
			if m.limit <= m.start || !strings.HasPrefix(m.file, "/") {
				t.Fatalf("kept %+v", m)
			}
			line := fmt.Sprintf("%x-%x %s %x 00:00 0 %s\n", m.start, m.limit, m.perms, m.offset, m.file)
			back := parseMaps(line)
			if len(back) != 1 || back[0].start != m.start || back[0].limit != m.limit || back[0].offset != m.offset ||
				back[0].perms != m.perms || back[0].file != strings.Join(strings.Fields(m.file), " ") {
				t.Fatalf("%q read back as %+v, want %+v", line, back, m)
			}
		}
	})
}
