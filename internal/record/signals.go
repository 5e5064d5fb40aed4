package record

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// How signals reach the traced program (docs/cli.md, "Signals"):
//
//   - cuprof in the foreground process group of its controlling terminal:
//     the program stays in cuprof's group, so Ctrl-C and Ctrl-\ reach it
//     from the terminal; cuprof forwards the other signals it gets to the
//     program, but not SIGINT and SIGQUIT (the terminal sent them).
//   - no controlling terminal (setsid, a service, CI, timeout): the program
//     gets a process group of its own, and every SIGINT, SIGTERM, SIGHUP
//     and SIGQUIT cuprof gets is forwarded to that group. A signal sent to
//     cuprof's whole group (kill -INT -PGID) would otherwise reach the
//     program twice: once from the sender, once forwarded. The program's
//     own children, in its group, get it once as they did from a
//     group-wide signal.
//     A sender that signals cuprof and then its group (timeout(1) does)
//     makes cuprof get the signal twice within microseconds; the same
//     signal again within echoWindow of the last one forwarded is taken as
//     that echo and not forwarded again.
//   - a controlling terminal with cuprof in the background: the program
//     stays in cuprof's group (so a later fg gives it the terminal) and
//     gets what cuprof gets, forwarded.

// echoWindow is how close a second copy of a signal must follow the first
// to be taken as the same signal sent to cuprof and to its group: far
// shorter than any person or script repeating a signal on purpose, far
// longer than the microseconds between timeout's two kill calls.
const echoWindow = 50 * time.Millisecond

// signalPlan is how the program is started and signalled.
type signalPlan struct {
	fromTerminal bool // the terminal signals the program itself (INT, QUIT)
	ownGroup     bool // the program leads a process group of its own
	last         map[os.Signal]time.Time
}

// planSignals decides for cmd (before it starts) and sets its process group.
func planSignals(cmd *exec.Cmd) *signalPlan {
	p := &signalPlan{fromTerminal: inTerminalForeground(), last: map[os.Signal]time.Time{}}
	if !p.fromTerminal && !hasControllingTerminal() {
		p.ownGroup = true
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Setpgid = true
	}
	return p
}

// forward sends s, which cuprof received, to the program as the plan says.
// It is called from one goroutine.
func (p *signalPlan) forward(proc *os.Process, s os.Signal) {
	if p.fromTerminal && (s == syscall.SIGINT || s == syscall.SIGQUIT) {
		return // the terminal signalled the whole foreground group
	}
	if sig, ok := s.(syscall.Signal); ok && p.ownGroup {
		now := time.Now()
		if t, ok := p.last[s]; ok && now.Sub(t) < echoWindow {
			return // the group's copy of a signal just forwarded
		}
		p.last[s] = now
		_ = syscall.Kill(-proc.Pid, sig)
		return
	}
	_ = proc.Signal(s)
}

// hasControllingTerminal reports whether cuprof has a controlling terminal.
func hasControllingTerminal() bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		return false
	}
	tty.Close()
	return true
}
