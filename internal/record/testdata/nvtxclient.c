/*
 * A minimal NVTX v3 client: does the injection handshake an NVTX-using
 * program does on its first NVTX call (dlopen $NVTX_INJECTION64_PATH, call
 * InitializeInjectionNvtx2 with an export table), then calls the slots the
 * tool filled, as nvtxRangePushA and friends would.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

typedef void (*fp)(void);
typedef fp **table_t;

static fp core[16], core2[16], cuda[9], cudart[7];
static fp *core_p[16], *core2_p[16], *cuda_p[9], *cudart_p[7];

static int get_table(int module, table_t *out, unsigned *size)
{
	switch (module) {
	case 1: *out = core_p; *size = 16; return 1;
	case 2: *out = cuda_p; *size = 9; return 1;
	case 4: *out = cudart_p; *size = 7; return 1;
	case 5: *out = core2_p; *size = 16; return 1;
	}
	return 0;
}

static struct {
	size_t size;
	int (*get)(int, table_t *, unsigned *);
} callbacks = {sizeof callbacks, get_table};

static const void *export_table(uint32_t id) { return id == 1 ? (const void *)&callbacks : NULL; }

typedef struct {
	uint16_t version, size;
	uint32_t category;
	int32_t colorType;
	uint32_t color;
	int32_t payloadType, reserved0;
	uint64_t payload;
	int32_t messageType;
	const void *message;
} attrs_t;

int main(void)
{
	for (int i = 0; i < 16; i++) {
		core_p[i] = &core[i];
		core2_p[i] = &core2[i];
	}
	for (int i = 0; i < 9; i++)
		cuda_p[i] = &cuda[i];
	for (int i = 0; i < 7; i++)
		cudart_p[i] = &cudart[i];
	const char *path = getenv("NVTX_INJECTION64_PATH");
	void *h = path ? dlopen(path, RTLD_NOW) : NULL;
	int (*init)(const void *(*)(uint32_t)) = h ? (int (*)(const void *(*)(uint32_t)))dlsym(h, "InitializeInjectionNvtx2") : NULL;
	if (!init || !init(export_table)) {
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
