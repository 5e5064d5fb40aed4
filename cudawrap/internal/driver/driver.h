/*
 * The C half of package driver: libcuda opened with dlopen, its functions
 * resolved once, one C entry point per cudawrap operation so that an operation
 * costs Go a single cgo call, and cuprof's span ABI (cudawrap/shim/cuprof.h)
 * found with dlsym(RTLD_DEFAULT, ...) when the shim is loaded.
 */
#ifndef CUDAWRAP_DRIVER_H
#define CUDAWRAP_DRIVER_H

#include <stdint.h>

/* What every operation returns: the CUresult, up to two values, and the
 * span bookkeeping: start is the recording clock at the operation's start
 * (0 when not recording) and call_end the end of its last driver call as the
 * shim recorded it. */
typedef struct {
	int32_t rc;
	uint64_t v, v2;
	double f;
	uint64_t start, call_end;
} cw_res;

typedef struct {
	char s[256];
} cw_name;

int cw_open(const char *path, cw_name *err);
int cw_spans_available(void);
uint32_t cw_intern(const char *s);
void cw_set_ids(uint32_t domain, uint32_t check);
void cw_op_end(uint64_t start, uint64_t call_end, uint32_t name);
uint64_t cw_now(void);
void cw_span(uint32_t name, uint64_t start, uint64_t end);
const char *cw_error_name(int32_t rc);
const char *cw_error_string(int32_t rc);

cw_res cw_init(void);
cw_res cw_driver_version(void);
cw_res cw_device_get(int ordinal);
cw_res cw_device_count(void);
cw_res cw_device_name(int dev, cw_name *out);
cw_res cw_device_attribute(int dev, int attr);
cw_res cw_device_total_mem(int dev);
cw_res cw_device_set_current(int dev, uint64_t cached_primary);
cw_res cw_primary_retain(int dev);
cw_res cw_primary_release(int dev);
cw_res cw_ctx_create(int dev, unsigned flags);
cw_res cw_ctx_destroy(uint64_t ctx);
cw_res cw_ctx_set_current(uint64_t ctx);
cw_res cw_ctx_get_current(void);
cw_res cw_ctx_sync(uint64_t ctx);
cw_res cw_stream_create(uint64_t ctx, unsigned flags, int priority, int with_priority);
cw_res cw_stream_destroy(uint64_t s);
cw_res cw_stream_sync(uint64_t s);
cw_res cw_stream_query(uint64_t s);
cw_res cw_event_create(uint64_t ctx, unsigned flags);
cw_res cw_event_destroy(uint64_t e);
cw_res cw_event_record(uint64_t e, uint64_t s);
cw_res cw_event_sync(uint64_t e);
cw_res cw_event_query(uint64_t e);
cw_res cw_event_elapsed(uint64_t start, uint64_t end);
cw_res cw_alloc_async(uint64_t ctx, uint64_t size, uint64_t pool, uint64_t s);
cw_res cw_free_async(uint64_t ctx, uint64_t ptr, uint64_t s);
cw_res cw_mem_info(uint64_t ctx);
cw_res cw_pool_default(int dev);
cw_res cw_pool_current(int dev);
cw_res cw_pool_create(int dev);
cw_res cw_pool_destroy(uint64_t p);
cw_res cw_pool_trim(uint64_t p, uint64_t keep);
cw_res cw_pool_set(uint64_t p, int attr, uint64_t v);
cw_res cw_pool_get(uint64_t p, int attr);

#endif
