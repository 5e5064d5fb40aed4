package trace

import (
	"fmt"
	"strconv"
	"strings"
)

// Result is a CUresult as returned by a driver call.
type Result int32

// Success is CUDA_SUCCESS.
const Success Result = 0

// The results cuprof's tools branch on.
const (
	ErrInvalidValue   Result = 1
	ErrOutOfMemory    Result = 2
	ErrNotInitialized Result = 3
	ErrDeinitialized  Result = 4
	ErrNoDevice       Result = 100
	ErrInvalidDevice  Result = 101
	ErrInvalidContext Result = 201
	ErrInvalidHandle  Result = 400
	ErrNotFound       Result = 500
	ErrNotReady       Result = 600
	ErrNotSupported   Result = 801
)

var resultNames = map[Result]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	5:   "CUDA_ERROR_PROFILER_DISABLED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	202: "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
	205: "CUDA_ERROR_MAP_FAILED",
	206: "CUDA_ERROR_UNMAP_FAILED",
	208: "CUDA_ERROR_ALREADY_MAPPED",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	210: "CUDA_ERROR_ALREADY_ACQUIRED",
	211: "CUDA_ERROR_NOT_MAPPED",
	214: "CUDA_ERROR_ECC_UNCORRECTABLE",
	215: "CUDA_ERROR_UNSUPPORTED_LIMIT",
	216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
	218: "CUDA_ERROR_INVALID_PTX",
	300: "CUDA_ERROR_INVALID_SOURCE",
	301: "CUDA_ERROR_FILE_NOT_FOUND",
	400: "CUDA_ERROR_INVALID_HANDLE",
	401: "CUDA_ERROR_ILLEGAL_STATE",
	500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	708: "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
	709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	800: "CUDA_ERROR_NOT_PERMITTED",
	801: "CUDA_ERROR_NOT_SUPPORTED",
	900: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
	999: "CUDA_ERROR_UNKNOWN",
}

// String returns the driver's name for r (CUDA_ERROR_...), or CUresult(N).
func (r Result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return "CUresult(" + strconv.Itoa(int(r)) + ")"
}

// OK reports whether r is CUDA_SUCCESS.
func (r Result) OK() bool { return r == Success }

// Error implements error, so a failed Result can be returned as one.
func (r Result) Error() string { return r.String() }

// ParseResult accepts a driver name (CUDA_ERROR_...), CUresult(N) or a number.
func ParseResult(s string) (Result, error) {
	for r, n := range resultNames {
		if n == s {
			return r, nil
		}
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "CUresult("), ")")
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("unknown CUresult %q", s)
	}
	return Result(n), nil
}
