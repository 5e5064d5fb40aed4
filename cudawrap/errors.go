package cudawrap

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cuprof/cuprof/cudawrap/internal/driver"
	"github.com/cuprof/cuprof/trace"
)

// Sentinel errors callers branch on.
var (
	// ErrNoDriver: the driver library could not be opened.
	ErrNoDriver = errors.New("cuda driver not available")
	// ErrClosed: the object (or the Driver) was already closed.
	ErrClosed = errors.New("already closed")
	// ErrNotOwned: the object belongs to the driver (a primary context, a
	// default stream or default pool) and cannot be closed.
	ErrNotOwned = errors.New("not owned by the caller")
	// ErrLeaked: Driver.Close found objects that were never closed.
	ErrLeaked = errors.New("objects not closed")
)

// The driver results callers most often branch on, for errors.Is.
var (
	ErrInvalidValue   error = trace.ErrInvalidValue
	ErrOutOfMemory    error = trace.ErrOutOfMemory
	ErrNotInitialized error = trace.ErrNotInitialized
	ErrInvalidDevice  error = trace.ErrInvalidDevice
	ErrInvalidContext error = trace.ErrInvalidContext
	ErrInvalidHandle  error = trace.ErrInvalidHandle
	ErrNotReady       error = trace.ErrNotReady
)

// Error is a failed driver call: the operation, the CUresult and the
// driver's name and description of it (from cuGetErrorName/String).
type Error struct {
	Op     string       // the cudawrap operation, e.g. "Stream.Create"
	Result trace.Result // the CUresult
	Name   string       // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Text   string       // e.g. "out of memory"
}

func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = e.Result.String()
	}
	op := strings.ToLower(e.Op)
	if e.Text == "" {
		return fmt.Sprintf("%s: %s", op, name)
	}
	return fmt.Sprintf("%s: %s: %s", op, name, e.Text)
}

// Unwrap returns the trace.Result, so errors.Is(err, trace.ErrOutOfMemory) works.
func (e *Error) Unwrap() error { return e.Result }

// check turns a failed CUresult into an *Error. It asks the driver for the
// name and text: those calls are part of the operation's check span.
func (d *Driver) check(name spanName, rc int32) error {
	return &Error{
		Op:     spanNames[name],
		Result: trace.Result(rc),
		Name:   driver.ErrorName(rc),
		Text:   driver.ErrorString(rc),
	}
}

// LeakError lists the objects Driver.Close found open.
type LeakError struct {
	Leaks []Leak
}

func (e *LeakError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d cuda objects not closed", len(e.Leaks))
	for i, l := range e.Leaks {
		if i == 5 {
			fmt.Fprintf(&b, "; ...")
			break
		}
		fmt.Fprintf(&b, "; %s %#x", l.Kind, l.Handle)
		if len(l.Stack) > 0 {
			fmt.Fprintf(&b, " created at %s", l.Stack[0])
		}
	}
	return b.String()
}

// Is matches ErrLeaked.
func (e *LeakError) Is(target error) bool { return target == ErrLeaked }
