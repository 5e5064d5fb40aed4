/*
 * NVTX from a program's side: every kind of range, mark, domain, registered
 * string and resource name through the minimal client (nvtx_client.h), then
 * cuprof's own C ABI (cuprof.h) as cudawrap uses it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "nvtx_client.h"

int main(void)
{
	if (!nvtx_inject()) {
		printf("no injection\n");
		return 1;
	}
	attrs_t a = {3, sizeof(attrs_t), 0, 1, 0xff00ff00, 0, 0, 0, 1, "attributed"};
	((int (*)(const char *))core[9])("outer");                  /* RangePushA */
	((void (*)(const char *))core[2])("checkpoint");            /* MarkA */
	uint64_t id = ((uint64_t(*)(const char *))core[5])("load"); /* RangeStartA */
	((void (*)(uint64_t))core[7])(id);                          /* RangeEnd */
	((int (*)(const attrs_t *))core[8])(&a);                    /* RangePushEx */
	((int (*)(const wchar_t *))core[10])(L"wide\u00e9");        /* RangePushW */
	((int (*)(void))core[11])();
	((int (*)(void))core[11])();
	void *d = ((void *(*)(const char *))core2[12])("mydomain");          /* DomainCreateA */
	void *reg = ((void *(*)(void *, const char *))core2[10])(d, "registered"); /* DomainRegisterStringA */
	attrs_t b = {3, sizeof(attrs_t), 0, 0, 0, 0, 0, 0, 3, reg};
	((int (*)(void *, const attrs_t *))core2[4])(d, &b); /* DomainRangePushEx */
	((int (*)(void *))core2[5])(d);                      /* DomainRangePop */
	((int (*)(void))core[11])();                         /* pops "outer" */
	((void (*)(void *, const char *))cuda[5])((void *)0x1234, "compute");  /* NameCuStreamA */
	((void (*)(void *, const char *))cudart[5])((void *)0x99, "done");     /* NameCudaEventA */
	((void (*)(int, const char *))cuda[1])(0, "gpu0");                      /* NameCuDeviceA */
	/* cuprof's own C ABI (cuprof.h), as cudawrap uses it. */
	int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cuprof_active");
	uint64_t (*now)(void) = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "cuprof_now");
	uint32_t (*intern)(const char *) = (uint32_t(*)(const char *))dlsym(RTLD_DEFAULT, "cuprof_intern");
	void (*span)(uint32_t, uint32_t, uint64_t, uint64_t) =
		(void (*)(uint32_t, uint32_t, uint64_t, uint64_t))dlsym(RTLD_DEFAULT, "cuprof_span");
	if (!active || !now || !intern || !span || !active()) {
		printf("no cuprof ABI\n");
		return 1;
	}
	uint64_t t0 = now();
	uint32_t dom = intern("cudawrap"), name = intern("Stream.Create");
	if (intern("cudawrap") != dom || dom == name || dom == 0) {
		printf("intern ids %u %u\n", dom, name);
		return 1;
	}
	span(dom, name, t0, now());
	printf("ok\n");
	return 0;
}
