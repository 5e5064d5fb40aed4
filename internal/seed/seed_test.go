package seed

import (
	"bytes"
	"strings"
	"testing"
)

func TestTempBufferOnSimulatedDriver(t *testing.T) {
	lib := useSim(t)
	var out bytes.Buffer
	if err := TempBuffer([]string{"-n", "5", "-warmup", "1"}, &out); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(out.String(), "\n"); rows != 11 {
		t.Errorf("%d lines:\n%s", rows, out.String())
	}
	golden(t, "tempbuffer.golden", mask(out.Bytes(), lib), *update)
}

func TestStreamCreateOnSimulatedDriver(t *testing.T) {
	lib := useSim(t)
	var out bytes.Buffer
	if err := StreamCreate([]string{"-n", "5", "-warmup", "1"}, &out); err != nil {
		t.Fatal(err)
	}
	golden(t, "streamcreate.golden", mask(out.Bytes(), lib), *update)
}

func TestBadFlags(t *testing.T) {
	var out bytes.Buffer
	if err := TempBuffer([]string{"-n", "x"}, &out); err == nil {
		t.Error("no error for -n x")
	}
	if err := StreamCreate([]string{"-bogus"}, &out); err == nil {
		t.Error("no error for -bogus")
	}
}

func TestStreamOptionsValidation(t *testing.T) {
	p := 3
	if err := (&StreamOptions{Priority: &p}).validate(); err == nil {
		t.Error("priority 3 accepted")
	}
	p = -1
	if err := (&StreamOptions{Priority: &p}).validate(); err != nil {
		t.Error(err)
	}
}
