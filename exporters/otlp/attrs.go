package otlp

// Attribute keys cuprof sets on spans and resources. docs/attributes.md
// describes each one; a test checks that every key here is documented.
const (
	// Span attributes of API call spans.
	AttrAPI        = "cuda.api"            // base name of the driver API, e.g. cuMemAllocAsync
	AttrCategory   = "cuda.category"       // API category: memory, stream, sync, ...
	AttrResult     = "cuda.result"         // CUresult name, e.g. CUDA_SUCCESS
	AttrResultCode = "cuda.result.code"    // CUresult number
	AttrBytes      = "cuda.bytes"          // byte count of the call or allocation
	AttrStream     = "cuda.stream"         // stream handle, hex
	AttrHandle     = "cuda.handle"         // object handle the call is about, hex
	AttrAux        = "cuda.aux"            // second object (pool, event, source pointer), hex
	AttrFlags      = "cuda.flags"          // flags, attribute or error-code argument
	AttrDevice     = "cuda.device.ordinal" // device ordinal
	AttrObjectKind = "cuda.object.kind"    // stream, event, allocation, pool, context, ...
	AttrObjectRole = "cuda.object.role"    // create, destroy, use, get, retain, release
	AttrCaller     = "cuda.caller.address" // return address of the call in the program, hex
	AttrThreadID   = "thread.id"
	AttrThreadName = "thread.name"
	AttrCodeFunc   = "code.function.name" // calls: the caller's symbol; frames: module.qualname
	AttrCodeFile   = "code.file.path"     // frames: the Python source file
	AttrCodeLine   = "code.line.number"   // frames: the function's first line

	// Span attributes of Python frame spans (plus code.*, thread.id).
	AttrFrameKind   = "cuda.frame.kind"      // python (a Python function) or native (a C callable called from Python)
	AttrFrameEnd    = "cuda.frame.end"       // returned, unwound (an exception), yielded or open (still running at the end)
	AttrFrameSelf   = "cuda.frame.self_ns"   // self time, the capture's cost taken out
	AttrFrameDriver = "cuda.frame.driver_ns" // time in driver calls inside, at any depth

	// Span attributes of range spans.
	AttrRangeDomain       = "cuda.range.domain"       // NVTX domain ("" for the default domain)
	AttrRangeKind         = "cuda.range.kind"         // push, start or span
	AttrRangeUnterminated = "cuda.range.unterminated" // true when never closed

	// Span attributes of object lifetime spans (plus kind, handle, bytes, device).
	AttrObjectName   = "cuda.object.name"   // name given by nvtxNameCu*
	AttrPool         = "cuda.pool"          // pool an allocation came from, hex
	AttrObjectLeaked = "cuda.object.leaked" // true when never destroyed in the trace
	AttrObjectEnd    = "cuda.object.end"    // destroyed, context-destroyed, replaced, owner-ended or alive
	AttrLinkRole     = "cuda.link.role"     // on links: create, destroy, or ended (an implicit end)

	// Resource attributes, one resource per traced process.
	AttrServiceName     = "service.name"
	AttrServiceInstance = "service.instance.id"
	AttrHostName        = "host.name"
	AttrPID             = "process.pid"
	AttrPPID            = "process.parent_pid"
	AttrCommandLine     = "process.command_line"
	AttrExecutable      = "process.executable.path"
	AttrExitCode        = "process.exit.code"
	AttrRank            = "cuda.rank"             // MPI or torchrun global rank
	AttrLocalRank       = "cuda.local_rank"       // rank on this host
	AttrWorldSize       = "cuda.world_size"       // number of ranks
	AttrNodeRank        = "cuda.node_rank"        // rank of the host in the job (GROUP_RANK, SLURM_NODEID)
	AttrJobID           = "cuda.job.id"           // job id: SLURM_JOB_ID[.STEP], TORCHELASTIC_RUN_ID, MPI job
	AttrLauncher        = "cuda.launcher"         // launcher whose variables gave the rank: torchrun, slurm, openmpi, pmi, pmix
	AttrHostID          = "host.id"               // machine id (/etc/machine-id)
	AttrBootID          = "cuda.host.boot_id"     // kernel boot id
	AttrContainerID     = "container.id"          // container id from the cgroup path
	AttrGPUNames        = "cuda.gpu.names"        // names of the GPUs the recording saw
	AttrGPUUUIDs        = "cuda.gpu.uuids"        // their UUIDs
	AttrDriverVersion   = "cuda.driver.version"   // e.g. 13.0
	AttrProfilerVersion = "cuda.profiler.version" // cuprof version that recorded
	AttrCapture         = "cuda.capture"          // shim, sim, cudawrap or text
	AttrDroppedEvents   = "cuda.dropped_events"   // events the process could not record
)

// documentedKeys lists every key above, for the documentation test.
var documentedKeys = []string{
	AttrAPI, AttrCategory, AttrResult, AttrResultCode, AttrBytes, AttrStream, AttrHandle, AttrAux,
	AttrFlags, AttrDevice, AttrObjectKind, AttrObjectRole, AttrCaller, AttrThreadID, AttrThreadName,
	AttrCodeFunc, AttrCodeFile, AttrCodeLine, AttrFrameKind, AttrFrameEnd, AttrFrameSelf, AttrFrameDriver, AttrRangeDomain, AttrRangeKind, AttrRangeUnterminated, AttrObjectName,
	AttrPool, AttrObjectLeaked, AttrObjectEnd, AttrLinkRole, AttrServiceName, AttrServiceInstance, AttrHostName,
	AttrPID, AttrPPID, AttrCommandLine, AttrExecutable, AttrExitCode, AttrRank, AttrLocalRank,
	AttrWorldSize, AttrGPUNames, AttrGPUUUIDs, AttrDriverVersion, AttrProfilerVersion, AttrCapture,
	AttrDroppedEvents,
}
