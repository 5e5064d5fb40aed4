/*
 * A minimal NVTX v3 client for the test programs (nvtxclient.c, capture.c):
 * the injection handshake an NVTX-using program does on its first NVTX call
 * (dlopen $NVTX_INJECTION64_PATH, call InitializeInjectionNvtx2 with an
 * export table whose callbacks hand out the slot tables), then the slots
 * the tool filled, called as nvtxRangePushA and friends would.
 *
 * Modules and their slot tables: 1 core, 2 CUDA naming, 4 CUDA runtime
 * naming, 5 core2 (domains).
 */
#ifndef CUPROF_TEST_NVTX_CLIENT_H
#define CUPROF_TEST_NVTX_CLIENT_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

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

/* nvtxEventAttributes_t, version 3 */
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

/* nvtx_inject does the handshake; 0 when no tool is injected or it
 * refused. */
static int nvtx_inject(void)
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
	return init && init(export_table);
}

#endif
