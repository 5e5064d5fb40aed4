/*
 * The shim's interposing side: one exported wrapper per driver symbol of
 * CUPROF_SYMBOLS (for programs linked to libcuda, and handed out in place of
 * the driver's function by the dlsym and cuGetProcAddress hooks), and those
 * hooks.
 *
 * A resolved pointer is replaced only when it is exactly the function the
 * driver exports under one of our symbol names (compared with dlsym of each
 * name on the driver's handle), so the wrapper calls that very function:
 * never chosen by base name, unknown pointers pass through untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "cuprof.h"
#include "shim_internal.h"

/* Evaluate output-pointer expressions only when the call succeeded. */
#undef CUPROF_OUT
#define CUPROF_OUT(expr, dflt) (cuprof_ok ? (expr) : (dflt))
#include "cuprof_cuda.h"
#include "cuprof_apis.h"

typedef void *(*dlsym_fn)(void *, const char *);

#define X_ENUM(sym, ...) SYM_##sym,
enum { CUPROF_SYMBOLS(X_ENUM) NSYM, SYM_GPA = NSYM, SYM_GPA_V2, NALL };

#define X_NAME(sym, ...) #sym,
static const char *const sym_names[NALL] = {CUPROF_SYMBOLS(X_NAME) "cuGetProcAddress", "cuGetProcAddress_v2"};

/* The driver's functions, by symbol index; filled once from the driver's handle. */
static void *real_fn[NALL];
static void *driver;
static void *driver_base; /* the driver library's load address */
static int table_built;
static dlsym_fn real_dlsym_ptr;

static dlsym_fn real_dlsym(void)
{
	dlsym_fn f = __atomic_load_n(&real_dlsym_ptr, __ATOMIC_ACQUIRE);
	if (CUPROF_LIKELY(f != NULL))
		return f;
	static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"};
	for (unsigned i = 0; i < sizeof versions / sizeof versions[0] && !f; i++)
		f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
	__atomic_store_n(&real_dlsym_ptr, f, __ATOMIC_RELEASE);
	return f;
}

/* build_table resolves every symbol on the driver library containing hint
 * (or libcuda.so.1 when hint is NULL or in the shim). It takes no lock (a
 * lock held across dlopen could invert with the loader's own): racing
 * threads compute the same values and publish them the same way. */
static void build_table(void *hint)
{
	if (__atomic_load_n(&table_built, __ATOMIC_ACQUIRE))
		return;
	dlsym_fn rd = real_dlsym();
	if (!rd)
		return;
	void *h = NULL;
	Dl_info self, info;
	if (hint && dladdr((void *)build_table, &self) && dladdr(hint, &info) && info.dli_fname &&
	    info.dli_fbase != self.dli_fbase)
		h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (h && !rd(h, "cuInit"))
		h = NULL; /* a library with cu* names that is not the driver */
	if (!h)
		h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		h = dlopen("libcuda.so", RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return; /* no driver loaded yet: try again on the next lookup */
	for (int i = 0; i < NALL; i++)
		__atomic_store_n(&real_fn[i], rd(h, sym_names[i]), __ATOMIC_RELEASE);
	Dl_info di;
	void *init = rd(h, "cuInit");
	if (init && dladdr(init, &di))
		__atomic_store_n(&driver_base, di.dli_fbase, __ATOMIC_RELEASE);
	__atomic_store_n(&driver, h, __ATOMIC_RELEASE);
	__atomic_store_n(&table_built, 1, __ATOMIC_RELEASE);
}

static void *resolve_real(int i)
{
	int saved = errno;
	build_table(NULL);
	errno = saved;
	return __atomic_load_n(&real_fn[i], __ATOMIC_ACQUIRE);
}

/* ---- the wrappers ---- */

/* The body every wrapper starts with: the driver's function, resolved on
 * first use, and the capture gate (a call outside a capture range passes
 * straight through). */
#define X_PROLOGUE(sym, api_, params, args)                                                     \
	CUresult(*fn_) params = (CUresult(*) params)real_fn[SYM_##sym];                              \
	if (CUPROF_UNLIKELY(fn_ == NULL)) {                                                          \
		fn_ = (CUresult(*) params)resolve_real(SYM_##sym);                                       \
		if (fn_ == NULL)                                                                         \
			return CUDA_ERROR_NOT_FOUND;                                                         \
	}                                                                                            \
	if (CUPROF_UNLIKELY(!cuprof_capturing(CUPROF_API_##api_)))                                   \
		return fn_ args;

/* A wrapper of an API the table describes: its arguments are recorded. */
#define X_WRAP(sym, api_, params, args, h, st, ax, sz, fl, dv)                                  \
	CUPROF_EXPORT CUresult sym params                                                        \
	{                                                                                        \
		X_PROLOGUE(sym, api_, params, args)                                                  \
		struct cuprof_tls *t_ = &cuprof_tls;                                                 \
		if (t_->depth) { /* inside a wrapped call: a signal handler's */                  \
			cuprof_count_nested();                                                           \
			return fn_ args;                                                                 \
		}                                                                                    \
		int w_ = cuprof_sample(t_);                                                          \
		cuprof_guard_enter(t_);                                                              \
		uint64_t s_ = cuprof_clock_start();                                                  \
		CUresult res_ = fn_ args;                                                            \
		uint64_t e_ = cuprof_clock();                                                        \
		if (CUPROF_UNLIKELY(s_ == 0))                                                        \
			s_ = e_;                                                                     \
		/* depth stays set until the record is committed: a signal handler's      \
		 * driver call passes through instead of writing the same slot. */       \
		{                                                                                    \
			int cuprof_ok = res_ == CUDA_SUCCESS;                                            \
			(void)cuprof_ok;                                                                 \
			cuprof_record_call(t_, s_, e_, CUPROF_API_##api_, res_, (uint64_t)(uintptr_t)(h), \
					   !(CUPROF_ZERO(st) && CUPROF_ZERO(ax) && CUPROF_ZERO(sz) && CUPROF_ZERO(fl)), \
					   (uint64_t)(uintptr_t)(st), (uint64_t)(uintptr_t)(ax), (uint64_t)(sz), \
					   (uint64_t)(fl), (int32_t)(dv),                                 \
					   (uint64_t)(uintptr_t)__builtin_return_address(0));             \
		}                                                                                    \
		cuprof_guard_exit(t_);                                                               \
		if (CUPROF_UNLIKELY(w_))                                                             \
			cuprof_sample_after(t_);                                                         \
		return res_;                                                                         \
	}

/* A wrapper of an API that costs a microsecond or more, or that the table
 * does not describe (recorded with name, time and result only): the same
 * guard, clock reads and record, out of line (one copy of them for the
 * hundreds of these keeps the shim small and quick to build). */
#define X_WRAP_COLD(sym, api_, params, args, h, st, ax, sz, fl, dv)                             \
	CUPROF_EXPORT CUresult sym params                                                        \
	{                                                                                        \
		struct cuprof_cold c_;                                                               \
		CUresult(*fn_) params = (CUresult(*) params)cuprof_cold_enter(&c_, SYM_##sym, CUPROF_API_##api_); \
		if (CUPROF_UNLIKELY(fn_ == NULL))                                                    \
			return CUDA_ERROR_NOT_FOUND;                                                     \
		if (!c_.rec)                                                                         \
			return fn_ args;                                                                 \
		CUresult res_ = fn_ args;                                                            \
		int cuprof_ok = res_ == CUDA_SUCCESS;                                                \
		(void)cuprof_ok;                                                                     \
		cuprof_cold_exit(&c_, res_, (uint64_t)(uintptr_t)(h),                                 \
				 !(CUPROF_ZERO(st) && CUPROF_ZERO(ax) && CUPROF_ZERO(sz) && CUPROF_ZERO(fl)), \
				 (uint64_t)(uintptr_t)(st), (uint64_t)(uintptr_t)(ax), (uint64_t)(sz),    \
				 (uint64_t)(fl), (int32_t)(dv),                                          \
				 (uint64_t)(uintptr_t)__builtin_return_address(0));                      \
		return res_;                                                                         \
	}

/* What a cold wrapper keeps between its two halves. */
struct cuprof_cold {
	struct cuprof_tls *t;
	uint64_t s;
	uint16_t api;
	int rec; /* the call is recorded: the guard is set */
};

/* cuprof_cold_enter resolves the driver's function (NULL when it has
 * none), asks the capture gate and the guard, and when the call is to be
 * recorded sets the guard and reads the start clock. */
__attribute__((noinline)) static void *cuprof_cold_enter(struct cuprof_cold *c, int sym, uint16_t api)
{
	void *fn = __atomic_load_n(&real_fn[sym], __ATOMIC_RELAXED);
	if (CUPROF_UNLIKELY(fn == NULL) && !(fn = resolve_real(sym)))
		return NULL;
	c->t = &cuprof_tls;
	c->api = api;
	int cap = cuprof_capturing(api);
	c->rec = cap && !c->t->depth;
	if (CUPROF_UNLIKELY(cap && c->t->depth))
		cuprof_count_nested(); /* inside a wrapped call: a signal handler's */
	if (c->rec) {
		cuprof_guard_enter(c->t);
		c->s = cuprof_clock_start();
	}
	return fn;
}

/* cuprof_cold_exit reads the end clock, records the call and clears the
 * guard. */
__attribute__((noinline)) static void cuprof_cold_exit(struct cuprof_cold *c, CUresult res, uint64_t h,
							unsigned has_args, uint64_t st, uint64_t ax, uint64_t sz,
							uint64_t fl, int32_t dv, uint64_t caller)
{
	uint64_t e = cuprof_clock();
	uint64_t s = c->s;
	if (CUPROF_UNLIKELY(s == 0))
		s = e;
	cuprof_record_call(c->t, s, e, c->api, res, h, has_args, st, ax, sz, fl, dv, caller);
	cuprof_guard_exit(c->t);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wint-to-pointer-cast"
#pragma GCC diagnostic ignored "-Wpointer-to-int-cast"
CUPROF_SYMBOLS_HOT(X_WRAP)
CUPROF_SYMBOLS_COLD(X_WRAP_COLD)
CUPROF_SYMBOLS_PLAIN(X_WRAP_COLD)
#pragma GCC diagnostic pop

CUPROF_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUPROF_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
					   CUdriverProcAddressQueryResult *symbolStatus);

#define X_PTR(sym, ...) (void *)sym,
static void *const wrappers[NALL] = {CUPROF_SYMBOLS(X_PTR)(void *) cuGetProcAddress, (void *)cuGetProcAddress_v2};

static int wrapper_index(void *p)
{
	for (int i = 0; i < NALL; i++)
		if (wrappers[i] == p)
			return i;
	return -1;
}

static int is_driver_name(const char *name);
static int in_driver(void *p);

/* map_pointer_named returns what to hand out for p, a driver-resolved
 * pointer looked up as name (or NULL when unknown). */
static void *map_pointer_named(void *p, const char *name)
{
	if (!p)
		return p;
	int w = wrapper_index(p);
	if (w >= 0) {
		/* A lookup that found the shim's own export (RTLD_DEFAULT): keep
		 * it only when the driver really has that symbol. */
		build_table(NULL);
		return __atomic_load_n(&real_fn[w], __ATOMIC_ACQUIRE) ? p : NULL;
	}
	build_table(p);
	if (!__atomic_load_n(&table_built, __ATOMIC_ACQUIRE))
		return p;
	for (int i = 0; i < NALL; i++)
		if (real_fn[i] == p)
			return wrappers[i];
	/* A driver function the table does not know: counted by name. */
	if (name && is_driver_name(name) && in_driver(p))
		return cuprof_unknown_function(p, name);
	return p;
}

/* in_driver reports whether p is a function of the driver library (not a
 * data symbol, not another library's cu* name). */
static int in_driver(void *p)
{
	void *h = __atomic_load_n(&driver_base, __ATOMIC_ACQUIRE);
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!h || !dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) || info.dli_fbase != h)
		return 0;
	return !sym || ELF64_ST_TYPE(sym->st_info) == STT_FUNC || ELF64_ST_TYPE(sym->st_info) == STT_GNU_IFUNC;
}

static CUresult gpa_missing(void **pfn)
{
	if (pfn)
		*pfn = NULL;
	return CUDA_ERROR_NOT_FOUND;
}

/* gpa_finish replaces the pointer a successful lookup returned with what
 * the shim hands out for it. */
static void gpa_finish(struct cuprof_tls *t, const char *symbol, void **pfn, CUresult res)
{
	if (res == CUDA_SUCCESS && pfn && *pfn && !t->in_hook) {
		int saved = errno;
		t->in_hook = 1;
		*pfn = map_pointer_named(*pfn, symbol);
		t->in_hook = 0;
		errno = saved;
	}
}

/* gpa_record records a lookup as a call of cuGetProcAddress (size: the
 * version asked for, flags: its flags) and clears the guard. */
/* gpa_begin is the entry of both cuGetProcAddress variants: whether the
 * lookup is recorded (the gate open and the thread not inside a wrapped
 * call, whose nested call is counted instead), the guard entered when it is. */
static int gpa_begin(struct cuprof_tls *t)
{
	int cap = cuprof_capturing(CUPROF_API_cuGetProcAddress);
	int rec = cap && !t->depth;
	if (CUPROF_UNLIKELY(cap && t->depth))
		cuprof_count_nested();
	if (rec)
		cuprof_guard_enter(t);
	return rec;
}

static void gpa_record(struct cuprof_tls *t, uint64_t s, uint64_t e, CUresult res, int version, cuuint64_t flags,
		       uint64_t caller)
{
	if (CUPROF_UNLIKELY(s == 0))
		s = e;
	cuprof_record_call(t, s, e, CUPROF_API_cuGetProcAddress, res, 0, 1, 0, 0, (uint64_t)(unsigned)version,
			   (uint64_t)flags, -1, caller);
	cuprof_guard_exit(t);
}

CUPROF_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	cuGetProcAddress_fn fn = (cuGetProcAddress_fn)real_fn[SYM_GPA];
	if (CUPROF_UNLIKELY(!fn) && !(fn = (cuGetProcAddress_fn)resolve_real(SYM_GPA)))
		return gpa_missing(pfn);
	struct cuprof_tls *t = &cuprof_tls;
	int rec = gpa_begin(t);
	uint64_t s = rec ? cuprof_clock_start() : 0;
	CUresult res = fn(symbol, pfn, cudaVersion, flags);
	uint64_t e = rec ? cuprof_clock() : 0;
	gpa_finish(t, symbol, pfn, res);
	if (rec)
		gpa_record(t, s, e, res, cudaVersion, flags, (uint64_t)(uintptr_t)__builtin_return_address(0));
	return res;
}

CUPROF_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
					   CUdriverProcAddressQueryResult *symbolStatus)
{
	cuGetProcAddress_v2_fn fn = (cuGetProcAddress_v2_fn)real_fn[SYM_GPA_V2];
	if (CUPROF_UNLIKELY(!fn) && !(fn = (cuGetProcAddress_v2_fn)resolve_real(SYM_GPA_V2)))
		return gpa_missing(pfn);
	struct cuprof_tls *t = &cuprof_tls;
	int rec = gpa_begin(t);
	uint64_t s = rec ? cuprof_clock_start() : 0;
	CUresult res = fn(symbol, pfn, cudaVersion, flags, symbolStatus);
	uint64_t e = rec ? cuprof_clock() : 0;
	gpa_finish(t, symbol, pfn, res);
	if (rec)
		gpa_record(t, s, e, res, cudaVersion, flags, (uint64_t)(uintptr_t)__builtin_return_address(0));
	return res;
}

/* ---- dlsym ---- */

static int is_driver_name(const char *name)
{
	return name && name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

/* next_after emulates dlsym(RTLD_NEXT, name) for a caller outside the shim:
 * the first definition in an object loaded after the caller's. */
static void *next_after(dlsym_fn rd, void *caller, const char *name)
{
	Dl_info info;
	struct link_map *lm = NULL;
	if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return rd(RTLD_NEXT, name);
	for (struct link_map *l = lm->l_next; l; l = l->l_next) {
		/* A link map is a valid dlsym handle only once the loader has
		 * opened it as one: objects loaded at startup (and dependencies
		 * of dlopen'ed ones) have no search list until then, and glibc
		 * crashes looking a name up in them. A no-load dlopen gives it
		 * one (and the close undoes the reference); the lookup comes
		 * last so that dlerror() is what it left. */
		if (!l->l_name || !l->l_name[0])
			continue;
		void *h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		dlclose(h);
		if (h != (void *)l)
			continue;
		void *p = rd(l, name);
		if (!p)
			continue;
		struct link_map *owner = NULL;
		if (dladdr1(p, &info, (void **)&owner, RTLD_DL_LINKMAP) && owner == l)
			return p;
	}
	return NULL;
}

/* ---- dlerror ---- */

typedef char *(*dlerror_fn)(void);
static dlerror_fn real_dlerror_ptr;
static char **prog_argv; /* the loader's argv: its [0] names the program in its messages */

/* dl_init resolves the real dlsym and dlerror when the shim is loaded,
 * before the program can have an error pending (a successful lookup clears
 * it), and keeps the argv the loader passes constructors. */
__attribute__((constructor)) static void dl_init(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)envp;
	prog_argv = argv;
	dlsym_fn rd = real_dlsym();
	if (rd)
		__atomic_store_n(&real_dlerror_ptr, (dlerror_fn)rd(RTLD_NEXT, "dlerror"), __ATOMIC_RELEASE);
}

/* A failed lookup of a driver name for the program's own code (its lookup
 * names the program: "PROG: undefined symbol: NAME") cannot be repeated
 * where it fails as the program's: the program's scope holds the shim's
 * exports. It is repeated in the dynamic loader's object instead, and
 * dlerror() gives the program's message for it: while the loader's
 * message is that lookup's (loader_name, then ": undefined symbol: "
 * name), dlerror returns it with the program's name in front instead. */
struct dlerror_fix {
	int armed;
	const char *loader_name;
	char text[512]; /* ": undefined symbol: NAME", then the message returned */
};
static __thread struct dlerror_fix dlerror_fix __attribute__((tls_model("initial-exec")));

CUPROF_EXPORT char *dlerror(void)
{
	dlerror_fn real = __atomic_load_n(&real_dlerror_ptr, __ATOMIC_ACQUIRE);
	if (!real) {
		/* The constructor has not run (the shim is being loaded by
		 * dlopen and this is another thread): resolve it now. */
		dlsym_fn rd = real_dlsym();
		if (!rd || !(real = (dlerror_fn)rd(RTLD_NEXT, "dlerror")))
			return NULL;
		__atomic_store_n(&real_dlerror_ptr, real, __ATOMIC_RELEASE);
	}
	char *e = real();
	struct dlerror_fix *f = &dlerror_fix;
	if (!f->armed)
		return e;
	f->armed = 0;
	size_t n = strlen(f->loader_name);
	if (!e || strncmp(e, f->loader_name, n) != 0 || strcmp(e + n, f->text) != 0)
		return e;
	const char *prog = prog_argv && prog_argv[0] ? prog_argv[0] : "<main program>";
	char msg[sizeof f->text];
	if (snprintf(msg, sizeof msg, "%s%s", prog, f->text) >= (int)sizeof msg)
		return e;
	memcpy(f->text, msg, sizeof msg);
	return f->text;
}

/* loader_map returns the dynamic loader's own link map (its base is
 * AT_BASE), else the last object of caller's list. */
static struct link_map *loader_map(struct link_map *lm)
{
	uintptr_t base = (uintptr_t)getauxval(AT_BASE);
	struct link_map *last = NULL;
	while (lm && lm->l_prev)
		lm = lm->l_prev;
	for (struct link_map *l = lm; l; l = l->l_next) {
		if (base && l->l_addr == base)
			return l;
		last = l;
	}
	return last;
}

/* fail_in repeats the lookup of name in the object l, where it fails (its
 * local scope does not hold the shim), so that dlerror() says name is
 * undefined; it returns whether it did. */
static int fail_in(dlsym_fn rd, struct link_map *l, const char *name)
{
	if (!l || !l->l_name || !l->l_name[0])
		return 0;
	/* A link map is a valid dlsym handle only once the loader has opened
	 * it as one (see next_after). */
	void *h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	dlclose(h);
	return h == (void *)l && !rd(h, name);
}

/* lookup_failed leaves dlerror() saying that name is undefined as the
 * loader would without the shim, naming the object it names: the handle's
 * for a lookup in one, the caller's for RTLD_DEFAULT and RTLD_NEXT. A
 * library's is repeated in that library; the program's (the main map, whose
 * name is "") in the loader's object, its message made the program's by
 * dlerror. found says the lookup found a definition (the shim's export for
 * a driver that lacks it): a lookup in a handle that found none has left
 * the loader's message for it already. */
static void lookup_failed(dlsym_fn rd, void *handle, const char *name, void *caller, int found)
{
	struct link_map *ref = NULL;
	if (handle == RTLD_DEFAULT || handle == RTLD_NEXT) {
		Dl_info info;
		if (!dladdr1(caller, &info, (void **)&ref, RTLD_DL_LINKMAP))
			ref = NULL;
	} else {
		if (!found)
			return;
		ref = handle;
	}
	dlerror_fix.armed = 0;
	if (ref && ref->l_name && ref->l_name[0] && fail_in(rd, ref, name))
		return;
	struct link_map *ld = loader_map(ref);
	if (!ld || !ld->l_name)
		return;
	struct dlerror_fix *f = &dlerror_fix;
	int fits = snprintf(f->text, sizeof f->text, ": undefined symbol: %s", name) < (int)sizeof f->text;
	if (fail_in(rd, ld, name) && fits && ref && (!ref->l_name || !ref->l_name[0])) {
		f->loader_name = ld->l_name;
		f->armed = 1;
	}
}

/* driver_visible reports whether a lookup of name from caller in the
 * default scope would find the driver's definition without the shim: the
 * driver is in the global scope after the shim (linked, or dlopen'ed
 * RTLD_GLOBAL), or among the dependencies of the caller, a library
 * dlopen'ed with the driver in its own local scope. A driver dlopen'ed
 * RTLD_LOCAL by someone else is neither: without the shim
 * dlsym(RTLD_DEFAULT, "cuInit") is NULL then, and the shim's export must
 * not make it a function (issue 47). */
static int driver_visible(dlsym_fn rd, void *caller, const char *name)
{
	if (rd(RTLD_NEXT, name)) /* called from the shim: the objects after it */
		return 1;
	Dl_info info;
	struct link_map *l = NULL;
	if (!dladdr1(caller, &info, (void **)&l, RTLD_DL_LINKMAP) || !l || !l->l_name || !l->l_name[0])
		return 0; /* the program: its scope is the global one */
	/* A link map is a valid dlsym handle only once the loader has opened
	 * it as one (see next_after). */
	void *h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	void *s = h == (void *)l ? rd(h, name) : NULL;
	dlclose(h);
	return s && wrapper_index(s) < 0;
}

/* dlsym_driver is the hook's lookup of a cu[A-Z]* name for caller. */
__attribute__((noinline)) static void *dlsym_driver(dlsym_fn rd, void *handle, const char *name, void *caller)
{
	void *p = handle == RTLD_NEXT ? next_after(rd, caller, name) : rd(handle, name);
	struct cuprof_tls *t = &cuprof_tls;
	if (t->in_hook)
		return p;
	int saved = errno;
	t->in_hook = 1;
	/* as without the shim: undefined, said by lookup_failed. RTLD_DEFAULT
	 * found the shim's own export; RTLD_NEXT's emulation walks every
	 * loaded object, RTLD_LOCAL ones too, which the loader's does not */
	if (p && ((handle == RTLD_DEFAULT && wrapper_index(p) >= 0) || handle == RTLD_NEXT) && !driver_visible(rd, caller, name))
		p = NULL;
	void *q = p ? map_pointer_named(p, name) : NULL;
	if (!q)
		lookup_failed(rd, handle, name, caller, p != NULL);
	t->in_hook = 0;
	errno = saved;
	return q;
}

#if defined(__has_attribute)
#if __has_attribute(musttail)
#define CUPROF_MUSTTAIL __attribute__((musttail))
#endif
#endif
#ifndef CUPROF_MUSTTAIL
#define CUPROF_MUSTTAIL
#endif

CUPROF_EXPORT void *dlsym(void *handle, const char *name)
{
	dlsym_fn rd = real_dlsym();
	if (!rd)
		return NULL;
	/* Every other name goes to the real dlsym as a tail call (a jump, at
	 * -O2): it then sees our caller's return address, so RTLD_NEXT means
	 * the next definition after the caller's object by the loader's own
	 * rules (which differ for dlopen'ed callers, and which link maps alone
	 * cannot reproduce), and dlerror() is what the loader left. */
	if (!is_driver_name(name))
		CUPROF_MUSTTAIL return rd(handle, name);
	return dlsym_driver(rd, handle, name, __builtin_return_address(0));
}

/* ---- calibration ---- */

static CUresult cuprof_noop(void)
{
	__asm__ __volatile__("" ::: "memory");
	return CUDA_SUCCESS;
}

static CUresult (*volatile noop_ptr)(void) = cuprof_noop;

/* The same body as every wrapper, around a function that does nothing:
 * what the shim adds to a call. */
__attribute__((noinline)) static CUresult cuprof_wrapped_noop(void)
{
	CUresult (*fn_)(void) = noop_ptr;
	struct cuprof_tls *t_ = &cuprof_tls;
	if (t_->depth)
		return fn_();
	int w_ = cuprof_sample(t_);
	cuprof_guard_enter(t_);
	uint64_t s_ = cuprof_clock_start();
	CUresult res_ = fn_();
	uint64_t e_ = cuprof_clock();
	if (CUPROF_UNLIKELY(s_ == 0))
		s_ = e_;
	cuprof_record_call(t_, s_, e_, 0, res_, 0, 0, 0, 0, 0, 0, -1, (uint64_t)(uintptr_t)__builtin_return_address(0));
	cuprof_guard_exit(t_);
	if (CUPROF_UNLIKELY(w_))
		cuprof_sample_after(t_);
	return res_;
}

static CUresult (*volatile wrapped_ptr)(void) = cuprof_wrapped_noop;

/*
 * cuprof_calibrate measures the shim's own cost, for trace.Meta.Overhead.
 * It runs n plain and n wrapped calls of a no-op through a function pointer,
 * in 7 alternating rounds (each wrapped call records, as in a real run;
 * 3n records in all per round, so give it a buffer of that), and writes
 * ring-clock ticks: out[0] the best round of
 * plain calls, out[1] the best round of wrapped calls, out[2] the smallest
 * recorded duration of a wrapped call summed over a round (what a recorded
 * duration carries besides the callee), out[3] the number of calls per round,
 * and of the best round of wrapped calls the shadow calls measured as at a
 * program's calls (cuprof_sample, inplace.c): out[4] the cold ones' ticks
 * in all and out[5] their number, out[6] and out[7] the warm ones'. The
 * wrapped calls it times take their shadows at the sparsest rate, where a
 * long program's calls spend most of their time; the pass that reads back
 * durations takes them at the first, so that a round has a shadow of each
 * kind every 128 calls to measure. The thread's measurements of its own
 * calls and its schedule are kept out of it and left as they were.
 * It returns the clock kind (CUPROF_CLOCK_*), or 0 when not recording.
 */
CUPROF_EXPORT int cuprof_calibrate(uint64_t n, uint64_t out[8])
{
	if (!cuprof_active())
		return 0;
	struct cuprof_tls *t = &cuprof_tls;
	uint64_t best_plain = UINT64_MAX, best_wrapped = UINT64_MAX, best_inside = UINT64_MAX;
	struct cuprof_samples best = {0}, kept = t->samples;
	struct cuprof_sample_rate kept_rate = t->sample_rate;
	uint32_t kept_left = t->sample_left;
	const struct cuprof_sample_rate sparsest = {.level = CUPROF_SAMPLE_LEVELS, .pinned = 1},
					 densest = {.pinned = 1};
	t->sample_hold = 1;
	for (int round = 0; round < 7; round++) {
		uint64_t a = cuprof_clock();
		for (uint64_t i = 0; i < n; i++)
			noop_ptr();
		t->sample_rate = sparsest;
		t->sample_left = 0;
		uint64_t b = cuprof_clock();
		for (uint64_t i = 0; i < n; i++)
			wrapped_ptr();
		uint64_t c = cuprof_clock();
		/* A separate pass reads back each recorded duration, and takes
		 * the shadows that are kept. */
		t->sample_rate = densest;
		t->sample_left = 0;
		t->samples = (struct cuprof_samples){0};
		uint64_t inside = 0;
		for (uint64_t i = 0; i < n; i++) {
			wrapped_ptr();
			if (t->ch && t->count > 0) {
				struct cuprof_rec *r = t->cur - 1; /* one slot: no args, no detail */
				inside += r->dur;
			}
		}
		struct cuprof_samples round_samples = t->samples;
		if (b - a < best_plain)
			best_plain = b - a;
		if (c - b < best_wrapped) {
			best_wrapped = c - b;
			best = round_samples;
		}
		if (inside < best_inside)
			best_inside = inside;
	}
	t->samples = kept;
	t->sample_rate = kept_rate;
	t->sample_left = kept_left;
	t->sample_hold = 0;
	out[0] = best_plain;
	out[1] = best_wrapped;
	out[2] = best_inside;
	out[3] = n;
	out[4] = best.ticks[0];
	out[5] = best.n[0];
	out[6] = best.ticks[1];
	out[7] = best.n[1];
	return cuprof_clock_kind;
}
