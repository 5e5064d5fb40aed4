package record

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cuprof/cuprof/trace"
)

// TestThousandsOfWaitersLeaveTheCPUToTheRecorder runs 2,000 threads alive
// at once making 3,000 calls each under the default settings (wait for
// room): about 1,500 of them wait for room at a time. They used to wake
// every 1 ms each (wait_for_chunk's nanosleep), and the storm of wake-ups
// starved the recorder (one poll in 10 s; 65-80 s without progress, 716 s
// of the program's CPU and 399 s wall on this 2-core machine where the
// bare program takes 0.1 s of CPU). A waiter now sleeps on a futex the
// recorder wakes when it frees chunks: the program's CPU time stays near
// what its calls cost, whatever the waits last, and every call is
// recorded. The deadline is a failure with the progress made, never a
// hang; it bounds a run that takes 7 s here.
func TestThousandsOfWaitersLeaveTheCPUToTheRecorder(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 threads x 3,000 calls: a load test, run without -short")
	}
	bins, sim := programs(t)
	prog := filepath.Join(bins, "barrier")
	const threads, calls = 2000, 3000

	bare := exec.Command(prog, fmt.Sprint(threads), "10")
	bare.Env = append(os.Environ(), "LD_LIBRARY_PATH="+sim)
	out, err := bare.CombinedOutput()
	if err != nil {
		t.Fatalf("bare run: %v: %s", err, out)
	}
	var made, bareCPU int64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "made %d cpu_us %d", &made, &bareCPU); err != nil {
		t.Fatalf("barrier output %q: %v", out, err)
	}

	var events atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var buf bytes.Buffer
	outPath := filepath.Join(t.TempDir(), "out.cuprof")
	res, err := Run(ctx, []string{prog, fmt.Sprint(threads), fmt.Sprint(calls)}, WithSim(true), WithStdio(nil, &buf, &buf),
		WithOutput(outPath), WithProgress(func(p Progress) { events.Store(int64(p.Events)) }))
	if ctx.Err() != nil {
		t.Fatalf("not finished after 5 minutes: %d of %d calls recorded so far", events.Load(), threads*calls)
	}
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, buf.String())
	}
	tr, err := trace.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	var cpu int64
	if _, err := fmt.Sscanf(strings.TrimSpace(buf.String()), "made %d cpu_us %d", &made, &cpu); err != nil || made != threads*calls {
		t.Fatalf("barrier output %q: %v", buf.String(), err)
	}
	recorded := callCounts(tr)["cuCtxGetCurrent"]
	if drops := tr.TotalDrops(); int64(recorded) != made || drops != 0 {
		t.Errorf("made %d, recorded %d, dropped %d (%+v); want every call recorded", made, recorded, drops, tr.Drops)
	}
	if res.FullWaits == 0 {
		t.Errorf("no writer waited for room: the test does not test the wait")
	}
	// 3,000 calls of the simulated driver cost about what creating the
	// thread does: a bound of 20 bare runs of 10 calls and 10 s leaves
	// room for the recorder's 6 million slots written and a loaded
	// machine, and none for 1,500 threads waking every millisecond.
	if limit := 20*bareCPU + 10_000_000; cpu > limit {
		t.Errorf("the program used %.1f s of CPU (bare, 10 calls a thread: %.2f s; limit %.1f s) over %d waits (%v): waiting writers spin",
			float64(cpu)/1e6, float64(bareCPU)/1e6, float64(limit)/1e6, res.FullWaits, res.FullWait)
	}
	t.Logf("program CPU %.2f s (bare %.2f s), %d waits (%v in all)", float64(cpu)/1e6, float64(bareCPU)/1e6, res.FullWaits, res.FullWait)
}
