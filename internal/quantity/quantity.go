// Package quantity formats the quantities cuprof's tables and messages show:
// durations and byte counts with 3 significant digits, and percentages.
package quantity

import (
	"strconv"
	"strings"
)

// SignedDuration is Duration with a "+" before a positive change ("+1.2 us",
// "-14 ns", "0 ns"), for the change columns of diff tables.
func SignedDuration(ns float64) string {
	if ns > 0 {
		return "+" + Duration(ns)
	}
	return Duration(ns) // "-…" below 0, "0 ns" at 0
}

// Duration formats ns with 3 significant digits in ns, us, ms or s
// ("14 ns", "1.23 us", "646 us", "12.3 ms"). Values under 1 ns keep up to
// one decimal ("0.5 ns").
func Duration(ns float64) string {
	if ns < 0 {
		return "-" + Duration(-ns)
	}
	if ns == 0 {
		return "0 ns"
	}
	units := []struct {
		name string
		div  float64
	}{{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}}
	for i, u := range units {
		v := ns / u.div
		s := sig3(v)
		if i < len(units)-1 {
			if f, _ := strconv.ParseFloat(s, 64); f >= 1000 {
				continue
			}
		}
		return s + " " + u.name
	}
	return "?"
}

// sig3 formats v (>= 0) with 3 significant digits, without an exponent.
func sig3(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return trimZeros(strconv.FormatFloat(v, 'f', 1, 64))
	case v >= 1:
		return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
	default:
		return trimZeros(strconv.FormatFloat(v, 'f', 1, 64))
	}
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// Bytes formats n in B, KiB, MiB or GiB with 3 significant digits.
func Bytes(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	v := float64(n)
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	for i, u := range units {
		v /= 1024
		if v < 1000 || i == len(units)-1 {
			return sig3(v) + " " + u
		}
	}
	return "?"
}

// Percent formats p with one decimal and a % sign.
func Percent(p float64) string { return strconv.FormatFloat(p, 'f', 1, 64) + "%" }
