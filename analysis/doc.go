// Package analysis is cuprof's one semantic layer: it replays a trace once,
// in trace order, through one tracker of devices, per-thread context
// stacks, object lifecycles, range and Python frame nesting, the calibrated
// cost subtraction and the error rule, and hands every consumer the same
// answers. Decoding a file is package trace's job; understanding it is this
// package's. report, lint, flame, the exporters and the live streamer read
// what it resolved instead of re-deriving it, so each rule is written once.
//
// # Using it
//
// The whole trace in memory:
//
//	a := analysis.Of(t) // never modifies t
//	for _, o := range a.Objects { ... o.Kind, o.Reason, o.Lifetime() ... }
//
// Resolved events as they are replayed (what per-call consumers need), with
// the tables at the end:
//
//	a := analysis.Of(t,
//		analysis.OnEvent(func(e *analysis.Event) {
//			// e.Event is the recorded event; e.Device, e.Context,
//			// e.Duration (cost taken out), e.Error, e.Object (and
//			// e.Created(): this call made it), e.Ended,
//			// e.Range/e.Path/e.InRange() (enclosing ranges), e.Frame
//			// (Python stack), e.Scope (both, as they nest: what a flame
//			// graph stacks), e.Outer (the activation directly around
//			// the event: what a span or slice exporter parents it by)
//		}),
//		analysis.OnRangeEnd(func(r *analysis.Range) { ... }),
//		analysis.OnFrameEnd(func(f *analysis.Frame) { ... }),
//		analysis.OnObjectEnd(func(o *analysis.Object) { ... }),
//	)
//
// A streaming reader feeds the tracker itself (or passes an iter.Seq of
// events to Run), giving it the trace's tables (Meta, Strings, Threads,
// Code; Processes are read at Finish):
//
//	tk := analysis.NewTracker(tables, opts...)
//	for e := range events { ev := tk.Step(e); ... }
//	a := tk.Finish()
//
// The *Event a callback or Step gets is reused for the next event: copy what
// you keep. The hot path allocates nothing per event; the tables grow with
// objects, ranges and distinct range paths and Python stacks, not with calls.
// A consumer that sums objects and ranges in the callbacks passes Forget, and
// the tables then keep only what is open (report, lint and flame do; Tally
// sums objects into per-kind rows). Event.Analysis gives the tables as far
// as the replay has gone, for a consumer that needs them while it streams:
// the names of the paths and stacks handed out so far, and during the
// callbacks the object an event names (lint reads them).
//
// # Devices
//
// Event.Device is the recorded device, or for a call recorded without one
// the device the tracker attributes, replaying what the driver does:
// cuDevicePrimaryCtxRetain and cuCtxCreate bind the context they return to
// their dev argument; an object inherits the device of the call that
// created it (streams, events, allocations, pools, modules), and
// cuDeviceGetDefaultMemPool/cuDeviceGetMemPool bind the pool they return;
// cuCtxGetDevice binds the context it asked about when nothing else did. A
// destroyed object keeps its device while it is among the last 4,096
// objects destroyed (a use after free mostly comes soon after; a trace
// making objects forever keeps that many, not one per object made). A
// call with an unknown device takes the device of the object it names
// (Handle, then Aux, then Stream; default-stream handles 0, 1, 2 name no
// object: IsDefaultStream, the one default-stream rule, with StreamOf), and otherwise that of its thread's current context. Failed calls
// still get a device but create or bind nothing. A device exists once a
// successful call of its process records it or the recording's GPU list
// names it: a failed call recording a device that does not exist, such as
// cuDeviceGet(9999) failing with CUDA_ERROR_INVALID_DEVICE, is on no device
// (NoDevice), so that consumers grouping calls by device show no device the
// program only asked for. The trace is never modified.
//
// # Context stacks
//
// Each thread has a context stack: cuCtxCreate and cuCtxPushCurrent push,
// cuCtxPopCurrent pops, cuCtxSetCurrent replaces the top (a 0 handle pops
// it), cuCtxDestroy pops the context when it is on top, and a
// cuCtxGetCurrent that returns a context seeds an empty stack. Event.Context
// is the top before the call. Primary contexts are retained and released
// without touching the stack.
//
// # Object lifecycles
//
// Objects are keyed by (process, object kind, handle); a handle may be
// reused once its object ended; failed calls create and destroy nothing.
// Every object family of trace.APIInfo is tracked: a create starts a life, a
// destroy ends it (cuMemFree also frees managed memory, cuMemFreeHost host
// memory). Primary contexts are reference counted: the first
// cuDevicePrimaryCtxRetain creates the context, later ones count,
// cuDevicePrimaryCtxRelease ends it when the count drops to zero and
// cuDevicePrimaryCtxReset ends it at once. Ends may be implicit: destroying a
// context ends the objects created while it was current (EndContext), and a
// create returning a live handle again ends the old object (EndReplaced).
// A lifetime runs from the create call's Start to the ending call's End
// (the replacing create's Start), or to the process's last time seen for
// objects alive at the end. Destroys of objects never seen created are
// Problems.
//
// A call may act on a second object, the one its Aux names (the API table's
// AuxObject and AuxRole; Event.AuxObject): cuGraphInstantiate creates a
// graph exec from a graph (a use of the graph), cuStreamEndCapture ends the
// stream's capture and creates a graph (and ends the capture even when it
// answers CUDA_ERROR_STREAM_CAPTURE_INVALIDATED), cuGraphExecUpdate uses
// the exec and the new graph, cuMemMap creates a mapping of physical memory.
// Object.Parent is the handle an object was made from. A stream capture is
// keyed by its stream's handle and ends with the stream. A library's
// kernels and modules and a kernel's functions are made by their first get
// (cuLibraryGetKernel, cuKernelGetFunction; later gets are uses) and end
// when what they came from ends (EndOwner): unloading a library ends its
// kernels and their functions. Libraries, kernels, graphs, physical memory,
// reserved ranges and mappings belong to the process, not to the context
// current at their creation. cuMemRelease ends a physical handle (its
// memory lives on in the mappings of it), and one cuMemUnmap ends every
// mapping that starts in its range. Mappings are memory: IsAllocation
// counts them, so that BytesInUse shows what a virtual-memory allocator
// (PyTorch's expandable segments) has mapped the way it shows allocations.
//
// # Ranges and Python frames
//
// NVTX push/pop ranges, cudawrap spans (trace.KindSpan) and Python frames
// (trace.KindFrame) nest in one stack per thread, by time: a scope encloses
// the events of its thread from its Start to its End inclusive; a pop closes
// the innermost push range still open. A span or frame that ends after the
// scope it starts in (a broken clock, a capture bug) is cut at that scope's
// end, so that each thread's scopes stay a stack. NVTX start/end ranges may end on
// another thread; they do not nest, and enclose the events of the thread
// that started them when no push/pop range or span does. A pop with nothing
// open, an end of an unknown id and an id started twice are RangeProblems;
// ranges never closed end at their process's last event (Unterminated).
//
// Event.Path is the path of ranges around an event (PathString names it,
// "step/inner"); frames do not appear in it. Event.Frame is the Python stack
// around it (FrameStack lists the code, outermost first); ranges do not
// appear in it. An opening event is enclosed by what it opens.
//
// # Costs
//
// Cost comes from trace.Meta.Overhead (CostOf; Raw keeps recorded times):
// each call's Duration is End-Start less InsideNs, clamped at 0. A range's or
// frame's InclusiveNs is End-Start less AddedNs per call recorded inside it
// (the whole cost a wrapped call adds, inside and around the driver) and
// PyEventNs twice per frame recorded inside it (its entry and exit), at any
// depth; SelfNs is InclusiveNs less the InclusiveNs of the ranges and frames
// directly inside and the Durations of the calls directly inside; DriverNs
// sums the Durations of the calls inside at any depth. FrameStats sums the
// activations of one Python stack, ByCode those of one piece of code (with
// recursion counted once in inclusive times).
//
// # Names
//
// Every output names a call site, a piece of Python code and a named object
// by the strings made here (names.go): CallSite resolves a caller address
// against the recorded symbols and mappings (a symbol holds [Addr,
// Addr+Size), a size-0 symbol only its own address, the innermost holder
// names it) and Name shows it (the function, else file+0xOFF, else the
// address); CodeName is a code's qualified name or "(code N)", CodeFunction
// adds the module ("module.name"); Object.Name is the name a
// trace.KindObjectName event gave the live object of its handle, or the next
// one created with it (ObjectName).
//
// # Streams
//
// IsDefaultStream (handles 0, 1, 2) and StreamOf (0 for the default stream
// and for calls recording none, UnknownStream for an API whose record cannot
// hold its stream) are the one default-stream rule. With Synchronizes, the
// replay follows the work queued per process, device and stream, and
// Event.Sync says whether each successful synchronize was idle;
// Event.ContextGen counts a thread's context changes so far.
//
// # Errors
//
// A call counts as an error when it returned anything but CUDA_SUCCESS,
// except CUDA_ERROR_NOT_READY from cuStreamQuery and cuEventQuery, which is
// their "still running" status (isError).
package analysis
