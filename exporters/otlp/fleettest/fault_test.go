package fleettest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// outage is how long a collector stays down in the fault tests: 5 s in
// CI, FLEET_OUTAGE seconds when set (bench/fleet/run.sh sets 30).
func outage() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("FLEET_OUTAGE")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 5 * time.Second
}

// faultRun records 4 ranks over 2 hosts, long enough to outlast the
// outage, and runs down (a collector's outage) 1 s after they started.
func faultRun(t *testing.T, p *pipeline, out time.Duration, down func(time.Duration)) []*rank {
	t.Helper()
	iterations := strconv.Itoa(300 + int(out.Seconds())*600) // a few seconds per 1,000 on a busy 2-core machine: meant to outlast the outage
	done := make(chan []*rank)
	go func() { done <- runRanks(t, p, 4, 4, "1s", "-n", iterations) }()
	time.Sleep(time.Second)
	began := time.Now()
	down(out)
	t.Logf("collector down for %v", time.Since(began).Round(time.Millisecond))
	rs := <-done
	if time.Since(began) < out {
		t.Logf("the ranks ended before the outage did: what they sent after it is not tested")
	}
	// The trace files are whole whatever the network did: ownReport
	// checks that none dropped an event, checkRanks that each holds as
	// many calls as its recorder aggregated while it drained.
	return rs
}

// TestPipelineGatewayDown: a gateway killed during the run and started
// again later: the agents' queues hold what its ranks sent, the runs
// finish, no recorder loses anything, and every call arrives.
func TestPipelineGatewayDown(t *testing.T) {
	p := startPipeline(t, 2)
	_, bin := binaries(t)
	rs := faultRun(t, p, outage(), func(d time.Duration) {
		g := p.gateways[0]
		g.kill()
		time.Sleep(d)
		g.start(t, bin)
	})
	checkRanks(t, p, rs, false)
}

// TestPipelineAgentDown: a host's agent killed during the run and started
// again: its ranks' exports fail while it is down, the runs finish, and
// for every rank the calls the backend received plus those the recorder
// reported lost account for every call of its trace, none counted twice
// as received.
func TestPipelineAgentDown(t *testing.T) {
	p := startPipeline(t, 2)
	_, bin := binaries(t)
	// Longer than the recorder's retries (5 s) and an interval: an
	// export must then fail for good (a shorter outage is retried through).
	rs := faultRun(t, p, max(outage(), 8*time.Second), func(d time.Duration) {
		a := p.agents[0]
		a.kill()
		time.Sleep(d)
		a.start(t, bin)
	})
	got := checkRanks(t, p, rs, true)
	lostOnHost0 := false
	for _, rk := range rs {
		calls, lost := reported(t, rk)
		t.Logf("rank %d (host %d): %d calls, %d received, %d reported lost", rk.id, rk.host, calls, got.total(rk.id), lost)
		if rk.host == 0 && lost > 0 {
			lostOnHost0 = true
		}
		if r := got.total(rk.id); r > calls {
			t.Errorf("rank %d: %d calls received, more than the %d it made", rk.id, r, calls)
		}
	}
	if !lostOnHost0 {
		t.Error("no rank of the host whose agent was down reported a loss")
	}
}
