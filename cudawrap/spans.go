package cudawrap

import (
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
)

type spanName uint8

// The operations, each recorded as a span of this name in domain "cudawrap".
const (
	spanCheck spanName = iota
	spanInit
	spanVersion
	spanDeviceCount
	spanDeviceGet
	spanDeviceName
	spanDeviceAttribute
	spanDeviceTotalMemory
	spanDeviceSetCurrent
	spanDeviceRelease
	spanDeviceContext
	spanContextCreate
	spanContextClose
	spanContextSetCurrent
	spanContextSync
	spanContextMemInfo
	spanStreamCreate
	spanStreamClose
	spanStreamSync
	spanStreamQuery
	spanEventCreate
	spanEventClose
	spanEventRecord
	spanEventSync
	spanEventQuery
	spanEventElapsed
	spanPoolDefault
	spanPoolCreate
	spanPoolClose
	spanPoolTrim
	spanPoolSetAttribute
	spanPoolGetAttribute
	spanBufferAlloc
	spanBufferClose
	spanCount
)

var spanNames = [spanCount]string{
	spanCheck:             CheckSpan,
	spanInit:              "Driver.Open",
	spanVersion:           "Driver.Version",
	spanDeviceCount:       "Driver.DeviceCount",
	spanDeviceGet:         "Driver.Device",
	spanDeviceName:        "Device.Name",
	spanDeviceAttribute:   "Device.Attribute",
	spanDeviceTotalMemory: "Device.TotalMemory",
	spanDeviceSetCurrent:  "Device.SetCurrent",
	spanDeviceRelease:     "Device.Release",
	spanDeviceContext:     "Device.Context",
	spanContextCreate:     "Context.Create",
	spanContextClose:      "Context.Close",
	spanContextSetCurrent: "Context.SetCurrent",
	spanContextSync:       "Context.Sync",
	spanContextMemInfo:    "Context.MemInfo",
	spanStreamCreate:      "Stream.Create",
	spanStreamClose:       "Stream.Close",
	spanStreamSync:        "Stream.Sync",
	spanStreamQuery:       "Stream.Done",
	spanEventCreate:       "Event.Create",
	spanEventClose:        "Event.Close",
	spanEventRecord:       "Event.Record",
	spanEventSync:         "Event.Sync",
	spanEventQuery:        "Event.Done",
	spanEventElapsed:      "Event.Elapsed",
	spanPoolDefault:       "MemoryPool.Default",
	spanPoolCreate:        "MemoryPool.Create",
	spanPoolClose:         "MemoryPool.Close",
	spanPoolTrim:          "MemoryPool.Trim",
	spanPoolSetAttribute:  "MemoryPool.SetAttribute",
	spanPoolGetAttribute:  "MemoryPool.Attribute",
	spanBufferAlloc:       "Buffer.Alloc",
	spanBufferClose:       "Buffer.Close",
}

// SpanNames returns the names of the spans cudawrap records, "check" first.
func SpanNames() []string { return append([]string(nil), spanNames[:]...) }

func endOtel(span oteltrace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
