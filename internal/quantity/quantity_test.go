package quantity

import "testing"

func TestDuration(t *testing.T) {
	cases := map[float64]string{0: "0 ns", 14: "14 ns", 14.5: "14.5 ns", 999: "999 ns", 999.7: "1 us",
		1234: "1.23 us", 12345: "12.3 us", 646000: "646 us", 999999: "1 ms", 12.3e6: "12.3 ms",
		2.5e9: "2.5 s", 4000e9: "4000 s", 0.5: "0.5 ns"}
	for ns, want := range cases {
		if got := Duration(ns); got != want {
			t.Errorf("Duration(%v) = %q, want %q", ns, got, want)
		}
	}
	if Bytes(1048576) != "1 MiB" || Bytes(4096) != "4 KiB" || Bytes(100) != "100 B" || Bytes(1536) != "1.5 KiB" {
		t.Errorf("Bytes: %s %s %s %s", Bytes(1048576), Bytes(4096), Bytes(100), Bytes(1536))
	}
}
