package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestRecordPassThroughRefusesBadNames: --pass-through with a name the API
// table lacks, or with an API that creates or switches objects, is a usage
// error naming the problem, before any program runs.
func TestRecordPassThroughRefusesBadNames(t *testing.T) {
	for list, want := range map[string]string{
		"cuNoSuchCall": `no driver API named "cuNoSuchCall"`,
		"cuMemAlloc":   "cuMemAlloc changes what cuprof knows of objects or contexts",
	} {
		var out, errb bytes.Buffer
		err := run([]string{"record", "--sim", "--pass-through", list, "-o", t.TempDir() + "/x.cuprof", "--", "true"},
			strings.NewReader(""), &out, &errb)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("--pass-through %s: error %v (%T), want a usage error saying %q", list, err, err, want)
		}
	}
}
