/*
 * A stand-in libcupti for selftest.sh: the entry points cupti_callback.c and
 * cupti_activity.c call, plus fake_cupti_fire() and a flush that hands back
 * one buffer of made-up records, so the tools' counting and output can be
 * exercised without CUDA. Record layout here is the stub's, not CUPTI's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_stub/cupti.h"

static CUpti_CallbackFunc callback;
static void *callback_userdata;
static int domains;
static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;
static int kinds;

CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
	*s = r ? "CUPTI_ERROR_FAKE" : "CUPTI_SUCCESS";
	return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *userdata)
{
	*sub = (CUpti_SubscriberHandle)&callback;
	callback = cb;
	callback_userdata = userdata;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle sub, CUpti_CallbackDomain d)
{
	(void)sub;
	if (enable)
		domains |= 1 << d;
	return CUPTI_SUCCESS;
}

/* fake_cupti_fire makes n API calls in the driver domain: an enter and an exit callback each. */
int fake_cupti_fire(int n)
{
	CUpti_CallbackData data;
	memset(&data, 0, sizeof data);
	if (!callback || !(domains & (1 << CUPTI_CB_DOMAIN_DRIVER_API)))
		return -1;
	for (int i = 0; i < n; i++) {
		data.callbackSite = CUPTI_API_ENTER;
		callback(callback_userdata, CUPTI_CB_DOMAIN_DRIVER_API, 1, &data);
		data.callbackSite = CUPTI_API_EXIT;
		callback(callback_userdata, CUPTI_CB_DOMAIN_DRIVER_API, 1, &data);
	}
	return domains;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done)
{
	requested = req;
	completed = done;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
	kinds |= 1 << k;
	return CUPTI_SUCCESS;
}

/* Records are one CUpti_Activity each, back to back. */
CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	uint8_t *next = *record ? (uint8_t *)(*record + 1) : buffer;
	if (next + sizeof(CUpti_Activity) > buffer + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)next;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *dropped)
{
	(void)c;
	(void)s;
	*dropped = 1;
	return CUPTI_SUCCESS;
}

/* Flushing hands back one buffer: 2 driver records, 1 runtime, 1 other (if those kinds are on). */
CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	uint8_t *buf;
	size_t size, max;
	(void)flag;
	if (!requested || !completed || !(kinds & (1 << CUPTI_ACTIVITY_KIND_DRIVER)) ||
	    !(kinds & (1 << CUPTI_ACTIVITY_KIND_RUNTIME)))
		return CUPTI_SUCCESS;
	requested(&buf, &size, &max);
	CUpti_ActivityKind seq[] = {CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
				    CUPTI_ACTIVITY_KIND_INVALID};
	CUpti_Activity *r = (CUpti_Activity *)buf;
	for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
		r[i].kind = seq[i];
	completed(NULL, 0, buf, size, sizeof seq / sizeof seq[0] * sizeof(CUpti_Activity));
	return CUPTI_SUCCESS;
}
