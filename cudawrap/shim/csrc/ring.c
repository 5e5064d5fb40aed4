/*
 * The shim's recording side: the clock, the per-process ring file and its
 * per-thread chunks, string interning, fork and exit handling, and the C ABI
 * of cuprof.h. See cuprof_ring.h for the file layout and protocol.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cuprof.h"
#include "shim_internal.h"

__thread struct cuprof_tls cuprof_tls __attribute__((tls_model("initial-exec")));
int cuprof_clock_kind;
int cuprof_end_only;
int cuprof_tsc_both;

#define DEFAULT_BUFFER (64u << 20)
/* How much of a ring is faulted in when it is created (see prefault);
 * bench/capture/hypotheses.sh builds a variant with more. */
#ifndef CUPROF_PREFAULT_MAX
#define CUPROF_PREFAULT_MAX (64ull << 20)
#endif
#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define MAX_CHUNK_SLOTS 2047 /* about 64 KiB of 32-byte slots */
#define INTERN_SLOTS (1u << 16)

/* A run of chunks: the ring's own (segs[0]) or a segment it grew by. */
struct chunk_run {
	struct cuprof_chunk_hdr *chunks;
	char *data;
	uint32_t n;          /* chunks */
	uint32_t recs;       /* slots per chunk */
	uint32_t chunk_size; /* bytes per chunk body */
};

static struct {
	struct cuprof_ring_hdr *hdr;
	struct cuprof_thread_slot *slots;
	char *strings;
	size_t size;         /* bytes mapped at hdr */
	uint64_t file_end;   /* bytes of the file in use, segments included */
	uint32_t nchunks;    /* the ring's own chunks (segs[0].n) */
	uint32_t recs;
	uint32_t when_full;
	uint64_t stall_ns; /* how long a waiting writer waits without a poll */
	uint32_t nsegs;      /* runs of segs in use (release-stored after each growth) */
	int cannot_grow;     /* the last growth failed (no room, RLIMIT_FSIZE, CUPROF_MAX_SEGS) */
	struct chunk_run segs[CUPROF_MAX_SEGS + 1];
	dev_t dev;           /* the ring file, to reopen it by path safely */
	ino_t ino;
	char path[4096];
	char lock[4096];     /* the recorder's lock file, "" when none */
} R;

static int ring_state; /* 0 not yet opened, 1 open, -1 off */
static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t intern_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static int exit_key_ok; /* exit_key was created (keys can run out) */
static int once_done;

/* Interning: open addressing over the string area, by content. The
 * tables are static, never allocated: a signal handler's cuprof_intern
 * can interrupt its thread inside malloc (the program's, or the dlsym of
 * a ring-opened hook), where the allocator, re-entered, blocks on the lock
 * the thread holds. They cost memory only as they are touched. */
static uint32_t intern_ids[INTERN_SLOTS];      /* ids, 0 = empty */
static uint32_t intern_offs[INTERN_SLOTS / 2]; /* offset of each id's entry, indexed by id */
static int intern_indexed; /* the tables hold the ring's strings (kept over fork, as the tables are) */
static uint32_t intern_next = 1;

static void detach(void);
static int forked(void);
static void count_lost_child(void);

/* A fork child's parent's ring header, kept mapped until the child has a
 * ring of its own: where it counts itself and its events lost when it can
 * make none (lost_children, lost_child_events). */
static struct cuprof_ring_hdr *parent_hdr;
static int lost_counted; /* this process counted itself in parent_hdr */

/* Strings inherited over fork, copied into the child's new ring. */
static char *fork_strings;
static uint32_t fork_strings_len;

static uint64_t mono_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t a, b, c, d;
	__asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
	if (a < 0x80000007u)
		return 0;
	__asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
	if (getenv("CUPROF_CLOCK") && strcmp(getenv("CUPROF_CLOCK"), "monotonic") == 0)
		return 0;
	return (d >> 8) & 1;
#elif defined(__aarch64__)
	/* The generic timer counts at a constant rate (cntfrq_el0) on every
	 * ARMv8 CPU, in sync across cores: no feature bit to ask. */
	const char *c = getenv("CUPROF_CLOCK");
	return !(c && strcmp(c, "monotonic") == 0);
#else
	return 0;
#endif
}

uint64_t cuprof_clock_slow(void)
{
	if (cuprof_clock_kind == 0) {
		int saved = errno;
		const char *timing = getenv("CUPROF_TIMING");
		cuprof_end_only = timing && strcmp(timing, "end") == 0;
		cuprof_clock_kind = tsc_invariant() ? CUPROF_CLOCK_TSC : CUPROF_CLOCK_MONOTONIC;
		cuprof_tsc_both = cuprof_clock_kind == CUPROF_CLOCK_TSC && !cuprof_end_only;
		errno = saved;
		return cuprof_clock();
	}
	return mono_ns(CLOCK_MONOTONIC);
}

/* cuprof_ticks_for returns how many clock ticks ns nanoseconds are, from
 * the ring's anchor (tsc0, mono0: one instant on both clocks at its
 * opening) and now, once the ring has been open 1 ms or more; else 0. */
uint64_t cuprof_ticks_for(uint64_t ns)
{
	if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) != 1)
		return 0;
	uint64_t t = cuprof_clock(), m = mono_ns(CLOCK_MONOTONIC);
	uint64_t t0 = R.hdr->tsc0, m0 = R.hdr->mono0;
	if (m < m0 + 1000000 || t <= t0)
		return 0;
	uint64_t k = (uint64_t)((double)(t - t0) * (double)ns / (double)(m - m0));
	return k ? k : 1;
}

uint64_t cuprof_clock_start_slow(void)
{
	if (cuprof_end_only)
		return 0;
	uint64_t t = cuprof_clock(); /* the first read initialises the clock */
	return cuprof_end_only ? 0 : t;
}

static uint64_t parse_size(const char *s, uint64_t dflt)
{
	if (!s || !*s)
		return dflt;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s)
		return dflt;
	return v;
}

static void thread_exit(void *arg)
{
	(void)arg;
	struct cuprof_tls *t = &cuprof_tls;
	if (forked())
		detach();
	cuprof_sample_flush(t);
	if (t->ch && ring_state == 1)
		__atomic_store_n(&t->ch->state, CUPROF_CHUNK_FULL, __ATOMIC_RELEASE);
	t->ch = NULL;
	t->cur = t->lim = NULL;
}

static int copy_file(const char *from, const char *to)
{
	int ok = 0;
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return 0;
	/* A new name beside the ring, never a file or link already there (the
	 * ring's directory is the recorder's, but a program may point
	 * CUPROF_DIR anywhere). */
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out >= 0) {
		char buf[8192];
		ssize_t n;
		while ((n = read(in, buf, sizeof buf)) > 0)
			if (write(out, buf, (size_t)n) != n)
				break;
		ok = n == 0;
		close(out);
		if (!ok)
			unlink(to);
	}
	close(in);
	return ok;
}

/* save_maps copies /proc/self/maps to the ring's name + ".maps": a new
 * file written whole under a temporary name, then renamed over the one
 * there (the rename replaces a name, it follows no link). The ring's open
 * saves it once, so a process that ends without running its exit hooks (a
 * Go program's os.Exit, _exit, a signal) before the recorder read its
 * /proc/PID/maps still has its mappings symbolized; the exit hook saves it
 * again with what was loaded since. */
static void save_maps(void)
{
	char maps[4200], tmp[4210];
	snprintf(maps, sizeof maps, "%s.maps", R.path);
	snprintf(tmp, sizeof tmp, "%s.tmp", maps);
	if (copy_file("/proc/self/maps", tmp) && rename(tmp, maps) != 0)
		unlink(tmp);
}

/*
 * at_exit saves the process's mappings next to its ring for symbolization
 * and marks the ring exited with the exit status (CUPROF_EXITED_STATUS:
 * the recorder learns how the program's children ended, which only their
 * parents can wait for). glibc's on_exit passes the status; elsewhere
 * atexit marks the ring exited without one.
 */
/* The lifecycle hooks the shim's parts declared (CUPROF_LIFECYCLE). */
extern const struct cuprof_lifecycle __start_cuprof_lifecycle[] CUPROF_HIDDEN;
extern const struct cuprof_lifecycle __stop_cuprof_lifecycle[] CUPROF_HIDDEN;

enum lifecycle_point { AT_RING_OPENED, AT_EXIT, AT_FORK_PREPARE, AT_FORK_PARENT, AT_FORK_CHILD };

/* run_hooks runs every declared hook for point p: before fork in the
 * reverse order of the sets, otherwise in their order. */
static void run_hooks(enum lifecycle_point p)
{
	const struct cuprof_lifecycle *b = __start_cuprof_lifecycle, *e = __stop_cuprof_lifecycle;
	size_t n = (size_t)(e - b);
	for (size_t k = 0; k < n; k++) {
		const struct cuprof_lifecycle *h = p == AT_FORK_PREPARE ? &b[n - 1 - k] : &b[k];
		void (*f)(void) = NULL;
		switch (p) {
		case AT_RING_OPENED:
			f = h->ring_opened;
			break;
		case AT_EXIT:
			f = h->at_exit;
			break;
		case AT_FORK_PREPARE:
			f = h->fork_prepare;
			break;
		case AT_FORK_PARENT:
			f = h->fork_parent;
			break;
		case AT_FORK_CHILD:
			f = h->fork_child;
			break;
		}
		if (f)
			f();
	}
}

static void at_exit_status(int status, int known)
{
	int saved = errno;
	if (forked()) /* the parent's ring: not this process's to mark */
		detach();
	run_hooks(AT_EXIT);
	if (ring_state == 1) {
		save_maps();
		uint32_t v = CUPROF_EXITED;
		if (known)
			v |= CUPROF_EXITED_STATUS | ((uint32_t)status & 0xff) << 8;
		__atomic_store_n(&R.hdr->exited, v, __ATOMIC_RELEASE);
	}
	errno = saved;
}

#ifdef __GLIBC__
static void at_exit(int status, void *arg)
{
	(void)arg;
	at_exit_status(status, 1);
}
#else
static void at_exit(void)
{
	at_exit_status(0, 0);
}
#endif

/* The ring's locks are held over the fork, until fork_parent or
 * fork_child, and t->locked says so: what the thread does meanwhile (a
 * signal handler's event, the program's fork handlers registered before
 * the shim's, which run after its prepare) is dropped and counted instead
 * of waiting on the locks the thread holds. */
static void fork_prepare(void)
{
	run_hooks(AT_FORK_PREPARE);
	cuprof_tls.locked++;
	pthread_mutex_lock(&ring_mu);
	pthread_mutex_lock(&intern_mu);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&intern_mu);
	pthread_mutex_unlock(&ring_mu);
	cuprof_tls.locked--;
	run_hooks(AT_FORK_PARENT);
}

/* detach lets go of the parent's ring in a fork's child: it opens its own
 * on its next event, with the parent's strings so interned ids stay valid.
 * The chunk the thread held is the parent's: left as it is. */
static void detach(void)
{
	struct cuprof_tls *t = &cuprof_tls;
	if (ring_state == 1) {
		uint32_t used = __atomic_load_n(&R.hdr->strings_used, __ATOMIC_ACQUIRE);
		free(fork_strings);
		fork_strings = NULL;
		fork_strings_len = 0;
		if (used) {
			fork_strings = malloc(used);
			if (fork_strings) {
				memcpy(fork_strings, R.strings, used);
				fork_strings_len = used;
			}
		}
		for (uint32_t k = 1; k < R.nsegs; k++) {
			struct cuprof_ring_seg *seg =
				(struct cuprof_ring_seg *)((char *)R.segs[k].chunks - CUPROF_SEG_HDR_SIZE);
			munmap(seg, seg->size);
		}
		/* The header stays mapped until the child has its own ring. */
		if (parent_hdr)
			munmap(parent_hdr, CUPROF_HDR_SIZE);
		parent_hdr = R.hdr;
		lost_counted = 0;
		munmap((char *)R.hdr + CUPROF_HDR_SIZE, R.size - CUPROF_HDR_SIZE);
		memset(&R, 0, sizeof R);
		ring_state = 0;
	}
	t->cur = t->lim = NULL;
	t->ch = NULL;
	t->count = 0;
	t->slot = 0;
	t->failed = 0;
	t->tid = 0;
	t->stalled = 0;
	t->seen_segs = 0;
	pthread_mutex_init(&intern_mu, NULL);
	pthread_mutex_init(&ring_mu, NULL);
	lost_counted = 0;
	if (ring_state == -1) /* a child of a child that could make no ring */
		count_lost_child();
}

static void fork_child(void)
{
	detach();
	cuprof_tls.locked--;
	run_hooks(AT_FORK_CHILD);
}

/* forked says whether this process is a child that a fork without
 * pthread_atfork's handlers made (glibc's _Fork, syscall(SYS_fork)): it
 * still has its parent's ring. */
static int forked(void)
{
	return __atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == 1 && R.hdr->pid != (uint32_t)getpid();
}

/*
 * cuprof_fork_check detaches such a child from its parent's ring, as
 * fork_child does after fork(): its records would go to its parent's chunk
 * and string area, written by both (1,001 of 50,001 calls were left, all
 * under the parent). It runs where the gate is found unknown (a fork's
 * child finds it zeroed: MADV_WIPEONFORK), where a thread takes a chunk,
 * and at exit. The child's other threads are gone and the parent's locks
 * it inherited are made anew, as fork_child makes them.
 */
int cuprof_fork_check(void)
{
	if (!forked())
		return 0;
	detach();
	run_hooks(AT_FORK_CHILD);
	return 1;
}

/* The variables trace.Process.Env keeps: every one analysis.IdentityVars
 * reads (the launchers' ranks, sizes, node ranks and job ids; a test checks
 * the two lists), job ids last, as they are the longest. */
static const char *const kept_env[] = {
	"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
	"OMPI_COMM_WORLD_NODE_RANK", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE",
	"PMIX_RANK", "PMIX_LOCAL_RANK", "PMIX_SIZE", "PMIX_NODE_RANK",
	"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NODEID",
	"CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID", "SLURM_STEP_ID", "TORCHELASTIC_RUN_ID",
	"OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE", NULL,
};

static void read_env(struct cuprof_ring_hdr *h)
{
	size_t off = 0;
	for (int i = 0; kept_env[i]; i++) {
		const char *v = getenv(kept_env[i]);
		if (!v)
			continue;
		int n = snprintf(h->env + off, CUPROF_ENV_MAX - off, "%s=%s", kept_env[i], v);
		if (n < 0 || off + (size_t)n + 2 > CUPROF_ENV_MAX) {
			h->env[off] = 0;
			break;
		}
		off += (size_t)n + 1;
	}
}

static void read_cmdline(struct cuprof_ring_hdr *h)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n, total = 0;
	while (total < CUPROF_CMDLINE_MAX &&
	       (n = read(fd, h->cmdline + total, CUPROF_CMDLINE_MAX - (size_t)total)) > 0)
		total += n;
	close(fd);
	h->cmdline_len = (uint32_t)total;
}

/* ring_open maps this process's ring file; it returns the new ring_state. */
/*
 * prefault maps the first len bytes of a new ring into the page tables before
 * any record is written. Without it every 4 KiB page (51 records) costs a page
 * fault inside some traced call: on the H200 machine (a VM) that added about
 * 50 ns to every recorded call of a fresh ring. MADV_POPULATE_WRITE (Linux
 * 5.14) does it in one call; older kernels get one store per page.
 */
static void prefault(void *m, uint64_t len)
{
	if (madvise(m, len, MADV_POPULATE_WRITE) == 0)
		return;
	volatile char *p = m;
	for (uint64_t off = 0; off < len; off += 4096)
		p[off] = p[off];
}

/* ring_size is the size of a ring file of nchunks chunks of chunk bytes; it
 * sets the offsets of the string area and the chunk bodies. */
static uint64_t ring_size(uint64_t nchunks, uint64_t chunk, uint64_t *strings_off, uint64_t *data_off)
{
	uint64_t chunks_off = CUPROF_HDR_SIZE + CUPROF_MAX_THREADS * sizeof(struct cuprof_thread_slot);
	*strings_off = (chunks_off + nchunks * sizeof(struct cuprof_chunk_hdr) + 4095) & ~(uint64_t)4095;
	*data_off = *strings_off + CUPROF_STRINGS_SIZE;
	return *data_off + nchunks * chunk;
}

/*
 * reserve sizes the new ring file and gives it its storage. A store to a
 * page of a shared mapping the file system has no room for is a SIGBUS in
 * the traced program (a small /dev/shm: Docker's default is 64 MiB, less
 * than the default ring), so the blocks are allocated now, halving the
 * number of chunks while there is no room. It returns 0 or -1.
 */
static int reserve(int fd, uint64_t *nchunks, uint64_t chunk, uint64_t *size, uint64_t *strings_off,
		   uint64_t *data_off)
{
	/* Fit the room there is first: a failed allocation of more than the
	 * file system holds (a tmpfs) costs the time to allocate all of it.
	 * Take at most half of it, so that the processes a program starts
	 * later (8 ranks on Docker's 64 MiB /dev/shm) still get a ring. */
	struct statvfs vfs;
	if (fstatvfs(fd, &vfs) == 0 && vfs.f_frsize > 0) {
		uint64_t room = (uint64_t)vfs.f_bavail * vfs.f_frsize / 2;
		while (*size > room && *nchunks > 2) {
			*nchunks = *nchunks / 2 < 2 ? 2 : *nchunks / 2;
			*size = ring_size(*nchunks, chunk, strings_off, data_off);
		}
	}
	for (;;) {
		if (ftruncate(fd, (off_t)*size) != 0)
			return -1;
		int err;
		do
			err = posix_fallocate(fd, 0, (off_t)*size);
		while (err == EINTR);
		if (err == 0)
			return 0;
		if (*nchunks <= 2 || (err != ENOSPC && err != EFBIG && err != ENOMEM))
			return -1;
		*nchunks = *nchunks / 2 < 2 ? 2 : *nchunks / 2;
		*size = ring_size(*nchunks, chunk, strings_off, data_off);
	}
}

/* count_lost_child counts this process, a fork child that could make no
 * ring of its own, in its parent's ring header (once). */
static void count_lost_child(void)
{
	if (parent_hdr && !lost_counted) {
		lost_counted = 1;
		__atomic_fetch_add(&parent_hdr->lost_children, 1, __ATOMIC_RELAXED);
	}
}

/* ring_dir opens dir for the ring's creation when it is a directory (not
 * a link) of this user's that neither group nor others can write, and
 * returns its descriptor, else -1: a directory that another user made
 * again at a name the program inherited, after the recorder removed it,
 * gets no ring. */
static int ring_dir(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	struct stat st;
	if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		close(dfd);
		return -1;
	}
	return dfd;
}

/* same_host says whether this process runs where the recorder that
 * started it does: CUPROF_HOST is the recorder's boot id and PID
 * namespace ("BOOTID/pid:[N]"). A launcher the recorder wrapped (srun,
 * mpirun) passes the environment on to ranks on other hosts, or in other
 * PID namespaces, whose rings the recorder must never read as its own
 * host's (their pids name other processes here): they record nothing, and
 * the recorder says how to record every host. Unset (older recorders,
 * cudawrap): no check. */
static int same_host(void)
{
	const char *want = getenv("CUPROF_HOST");
	if (!want || !*want)
		return 1;
	char have[160];
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, have, 64);
	close(fd);
	if (n <= 0)
		return 0;
	while (n > 0 && (have[n - 1] == '\n' || have[n - 1] == ' '))
		n--;
	have[n++] = '/';
	ssize_t l = readlink("/proc/self/ns/pid", have + n, sizeof have - (size_t)n - 1);
	if (l <= 0)
		return 0;
	have[n + l] = 0;
	return strcmp(have, want) == 0;
}

static int ring_open(void)
{
	int saved = errno; /* the program's: open, madvise... may set it */
	struct cuprof_tls *t = &cuprof_tls;
	t->locked++;
	pthread_mutex_lock(&ring_mu);
	if (ring_state != 0)
		goto out;
	const char *dir = getenv("CUPROF_DIR");
	if (!dir || !*dir || !same_host()) {
		ring_state = -1;
		goto out;
	}
	if (cuprof_clock_kind == 0)
		(void)cuprof_clock_slow();
	uint64_t buffer = parse_size(getenv("CUPROF_BUFFER"), DEFAULT_BUFFER);
	uint64_t recs = buffer / 16 / CUPROF_SLOT_BYTES; /* slots per chunk */
	if (recs > MAX_CHUNK_SLOTS)
		recs = MAX_CHUNK_SLOTS;
	if (recs < 8)
		recs = 8;
	uint64_t chunk = recs * CUPROF_SLOT_BYTES;
	uint64_t nchunks = buffer / chunk;
	if (nchunks < 2)
		nchunks = 2;
	if (nchunks > (1u << 20))
		nchunks = 1u << 20;
	uint64_t threads_off = CUPROF_HDR_SIZE;
	uint64_t chunks_off = threads_off + CUPROF_MAX_THREADS * sizeof(struct cuprof_thread_slot);
	uint64_t strings_off, data_off;
	uint64_t size = ring_size(nchunks, chunk, &strings_off, &data_off);
	/* Growing a file past RLIMIT_FSIZE kills the program (SIGXFSZ): take
	 * fewer chunks (the events that do not fit are dropped and counted). */
	struct rlimit fsize;
	if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY) {
		while (size > fsize.rlim_cur && nchunks > 2)
			size = ring_size(nchunks = nchunks / 2 < 2 ? 2 : nchunks / 2, chunk, &strings_off, &data_off);
		if (size > fsize.rlim_cur) {
			ring_state = -1;
			goto out;
		}
	}

	/* The ring goes to CUPROF_DIR (memory: /dev/shm) or, when no ring fits
	 * there, to CUPROF_DIR_FALLBACK (the recorder's directory on disk):
	 * each only when it is a directory of this user's that nobody else
	 * can write (ring_dir), the ring created in it through that checked
	 * descriptor. */
	pid_t pid = getpid();
	/* The name carries the time too: the recorder removes a ring's name
	 * once it has opened it, and an exec'd image of this pid must not take
	 * the old image's name (nor its .maps file). */
	unsigned long long opened_ns = (unsigned long long)mono_ns(CLOCK_MONOTONIC);
	const uint64_t want_chunks = nchunks;
	void *m = MAP_FAILED;
	const char *dirs[2] = {dir, getenv("CUPROF_DIR_FALLBACK")};
	for (int d = 0; d < 2 && m == MAP_FAILED; d++) {
		if (!dirs[d] || !*dirs[d])
			continue;
		int dfd = ring_dir(dirs[d]);
		if (dfd < 0)
			continue;
		int fd = -1;
		for (int i = 0; i < 1000 && fd < 0; i++) {
			int n = snprintf(R.path, sizeof R.path, "%s/%d-%llu-%d.ring", dirs[d], (int)pid, opened_ns, i);
			if (n < 0 || n >= (int)sizeof R.path)
				break;
			fd = openat(dfd, strrchr(R.path, '/') + 1, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd < 0 && errno != EEXIST)
				break;
		}
		close(dfd);
		if (fd < 0)
			continue;
		nchunks = want_chunks;
		size = ring_size(nchunks, chunk, &strings_off, &data_off);
		if (reserve(fd, &nchunks, chunk, &size, &strings_off, &data_off) == 0)
			m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		struct stat st;
		if (m != MAP_FAILED && fstat(fd, &st) == 0) {
			R.dev = st.st_dev;
			R.ino = st.st_ino;
		}
		close(fd);
		if (m == MAP_FAILED)
			unlink(R.path);
	}
	if (m == MAP_FAILED) {
		ring_state = -1;
		goto out;
	}
	prefault(m, data_off + (nchunks * chunk < CUPROF_PREFAULT_MAX ? nchunks * chunk : CUPROF_PREFAULT_MAX));
	struct cuprof_ring_hdr *h = m;
	R.hdr = h;
	R.size = size;
	R.file_end = size;
	R.slots = (struct cuprof_thread_slot *)((char *)m + threads_off);
	R.strings = (char *)m + strings_off;
	R.nchunks = (uint32_t)nchunks;
	R.recs = (uint32_t)recs;
	R.segs[0] = (struct chunk_run){(struct cuprof_chunk_hdr *)((char *)m + chunks_off), (char *)m + data_off,
				       (uint32_t)nchunks, (uint32_t)recs, (uint32_t)chunk};
	R.nsegs = 1;
	if (snprintf(R.lock, sizeof R.lock, "%s/%s", dir, CUPROF_LOCK_NAME) >= (int)sizeof R.lock)
		R.lock[0] = 0;
	const char *wf = getenv("CUPROF_WHEN_FULL");
	R.when_full = wf && strcmp(wf, "wait") == 0 ? CUPROF_WHEN_FULL_WAIT : CUPROF_WHEN_FULL_DROP;
	h->when_full = R.when_full;
	/* CUPROF_STALL_MS, when set to 1..3600000, replaces the default stall
	 * period (the tests shorten it; a slow recorder may want it longer). */
	uint64_t stall = parse_size(getenv("CUPROF_STALL_MS"), CUPROF_STALL_MS);
	R.stall_ns = (stall >= 1 && stall <= 3600000 ? stall : CUPROF_STALL_MS) * 1000000ull;
	h->version = CUPROF_RING_VERSION;
	h->hdr_size = CUPROF_HDR_SIZE;
	h->rec_size = CUPROF_SLOT_BYTES;
	h->chunk_size = (uint32_t)chunk;
	h->nchunks = (uint32_t)nchunks;
	h->max_threads = CUPROF_MAX_THREADS;
	h->clock = (uint32_t)cuprof_clock_kind;
	h->pid = (uint32_t)pid;
	h->ppid = (uint32_t)getppid();
	h->threads_off = threads_off;
	h->chunks_off = chunks_off;
	h->strings_off = strings_off;
	h->strings_size = CUPROF_STRINGS_SIZE;
	h->data_off = data_off;
	h->file_size = size;
	h->wall0 = mono_ns(CLOCK_REALTIME);
	h->mono0 = mono_ns(CLOCK_MONOTONIC);
	h->tsc0 = cuprof_clock();
	ssize_t n = readlink("/proc/self/exe", h->exe, CUPROF_EXE_MAX - 1);
	if (n < 0)
		h->exe[0] = 0;
	read_cmdline(h);
	read_env(h);
	if (fork_strings) {
		uint32_t len = fork_strings_len < CUPROF_STRINGS_SIZE ? fork_strings_len : 0;
		memcpy(R.strings, fork_strings, len);
		h->strings_used = len;
		free(fork_strings);
		fork_strings = NULL;
		fork_strings_len = 0;
	}
	save_maps();
	__atomic_store_n(&h->magic, CUPROF_RING_MAGIC, __ATOMIC_RELEASE);
	if (!once_done) {
		once_done = 1;
		exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		/* Where the kernel cannot (before Linux 4.14), a child of _Fork
		 * is found when its thread takes a chunk (rec_slow). */
		madvise(&cuprof_gate_page, sizeof cuprof_gate_page, MADV_WIPEONFORK);
#ifdef __GLIBC__
		on_exit(at_exit, NULL);
#else
		atexit(at_exit);
#endif
	}
	__atomic_store_n(&ring_state, 1, __ATOMIC_RELEASE);
out:;
	int st = ring_state;
	if (st == 1 && parent_hdr) {
		munmap(parent_hdr, CUPROF_HDR_SIZE);
		parent_hdr = NULL;
	} else if (st == -1 && getenv("CUPROF_DIR") && *getenv("CUPROF_DIR")) {
		/* A fork child that cannot make its ring (a privilege drop: the
		 * ring directory is another user's now) says so in its parent's. */
		count_lost_child();
	}
	pthread_mutex_unlock(&ring_mu);
	t->locked--;
	if (st == 1)
		run_hooks(AT_RING_OPENED);
	errno = saved;
	return st;
}

static int ring_ready(void)
{
	int st = __atomic_load_n(&ring_state, __ATOMIC_ACQUIRE);
	if (CUPROF_LIKELY(st == 1))
		return 1;
	if (st < 0)
		return 0;
	return ring_open() == 1;
}

/* count_reentrant_drop counts an event a signal handler made while its
 * thread was inside the shim (writing a record, holding the ring's locks),
 * where it cannot be written. */
static void count_reentrant_drop(struct cuprof_tls *t)
{
	if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) != 1)
		return;
	if (t->slot)
		__atomic_fetch_add(&R.slots[t->slot - 1].drops, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&R.hdr->overflow_drops, 1, __ATOMIC_RELAXED);
}

/* cuprof_count_nested counts a driver call made while its thread was
 * inside a wrapped call (a signal handler's): it goes to the driver
 * unrecorded. */
void cuprof_count_nested(void)
{
	if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == 1)
		__atomic_fetch_add(&R.hdr->nested_drops, 1, __ATOMIC_RELAXED);
}

static void slot_alloc(struct cuprof_tls *t)
{
	t->tid = (uint32_t)syscall(SYS_gettid);
	uint32_t i = __atomic_fetch_add(&R.hdr->nthreads, 1, __ATOMIC_ACQ_REL);
	t->serial = i;
	t->hint = (i * 7919u) % R.nchunks;
	if (i >= CUPROF_MAX_THREADS)
		return; /* no slot: drops go to overflow_drops */
	struct cuprof_thread_slot *s = &R.slots[i];
	prctl(PR_GET_NAME, s->name, 0, 0, 0);
	s->name[15] = 0;
	__atomic_store_n(&s->tid, t->tid, __ATOMIC_RELEASE);
	t->slot = i + 1;
}

/*
 * claim takes a FREE chunk for the thread, scanning the ring's own chunks
 * from the thread's hint, then the segments the ring grew by; NULL when
 * there is none. t->failed then says what the scan found: 1 every chunk
 * held by a thread (the recorder has nothing to free: grow), 2 some FULL
 * chunk (the recorder is behind: the ring is full). A failed thread scans
 * again only once the recorder has freed a chunk or the ring has grown.
 */
static struct cuprof_rec *claim(struct cuprof_tls *t)
{
	uint32_t rel = __atomic_load_n(&R.hdr->released, __ATOMIC_ACQUIRE);
	uint32_t nsegs = __atomic_load_n(&R.nsegs, __ATOMIC_ACQUIRE);
	if (t->failed && rel == t->seen_released && nsegs == t->seen_segs)
		return NULL;
	int full = 0;
	for (uint32_t s = 0; s < nsegs; s++) {
		const struct chunk_run *run = &R.segs[s];
		uint32_t n = run->n, from = s == 0 ? t->hint % n : 0;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t c = (from + k) % n;
			struct cuprof_chunk_hdr *ch = &run->chunks[c];
			uint32_t want = CUPROF_CHUNK_FREE, st = __atomic_load_n(&ch->state, __ATOMIC_RELAXED);
			if (st != CUPROF_CHUNK_FREE ||
			    !__atomic_compare_exchange_n(&ch->state, &want, CUPROF_CHUNK_OWNED, 0, __ATOMIC_ACQ_REL,
							 __ATOMIC_RELAXED)) {
				full |= st == CUPROF_CHUNK_FULL;
				continue;
			}
			ch->tid = t->tid;
			ch->slot = t->serial; /* the thread, whatever its tid (reused by the kernel) */
			__atomic_store_n(&ch->count, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&ch->gen, ch->gen + 1, __ATOMIC_RELEASE);
			t->ch = ch;
			t->count = 0;
			t->claims++;
			t->cur = (struct cuprof_rec *)(run->data + (size_t)c * run->chunk_size);
			t->lim = t->cur + run->recs;
			/* Every thread that owns a chunk hands it back when it exits
			 * (thread_exit), with a slot or not; set again on each claim, as
			 * a later thread-exit destructor may record after ours ran (the
			 * loader then runs ours again). Without a key (the program used
			 * them all up), key 0 is someone else's: no hook. */
			if (exit_key_ok)
				pthread_setspecific(exit_key, (void *)1);
			/* t->hint stays: the next claim scans from the thread's own start
			 * again and takes the first chunk the recorder has handed back, so a
			 * thread cycles through few, cache- and TLB-warm chunks instead of
			 * the whole buffer. */
			t->failed = 0;
			return t->cur;
		}
	}
	t->failed = full ? 2 : 1;
	t->seen_released = rel;
	t->seen_segs = nsegs;
	return NULL;
}

/* reopen opens the ring file by its name, only when that name is still
 * this ring (not a file put in its place); -1 otherwise. */
static int reopen(void)
{
	int fd = open(R.path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_dev != R.dev || st.st_ino != R.ino) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * grow appends a segment of chunks to the ring when every chunk is held by
 * a thread (seen: the number of runs the caller's claim scanned; a thread
 * that grew meanwhile is enough). The segment's storage is allocated before
 * it is used (a store past the file system's room is a SIGBUS), within
 * RLIMIT_FSIZE. It returns 0 when there are more runs to claim from now,
 * -1 when the ring cannot grow (the caller drops, counted in grow_drops).
 */
static int grow(struct cuprof_tls *t, uint32_t seen)
{
	int saved = errno, rc = -1, fd = -1;
	t->locked++;
	pthread_mutex_lock(&ring_mu);
	uint32_t k = R.nsegs;
	if (k != seen) {
		rc = 0;
		goto out;
	}
	if (k > CUPROF_MAX_SEGS || R.cannot_grow)
		goto out;
	R.cannot_grow = 1; /* until it grew: a full file system is not asked at every event */
	uint32_t recs = R.recs < CUPROF_SEG_CHUNK_SLOTS ? R.recs : CUPROF_SEG_CHUNK_SLOTS;
	uint64_t n = (uint64_t)CUPROF_SEG_CHUNKS << (k - 1), chunk = (uint64_t)recs * CUPROF_SLOT_BYTES;
	uint64_t off = (R.file_end + 4095) & ~(uint64_t)4095;
	uint64_t chunks_off = off + CUPROF_SEG_HDR_SIZE;
	uint64_t data_off = (chunks_off + n * sizeof(struct cuprof_chunk_hdr) + 4095) & ~(uint64_t)4095;
	uint64_t size = (data_off + n * chunk - off + 4095) & ~(uint64_t)4095;
	struct rlimit fsize;
	if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY && off + size > fsize.rlim_cur)
		goto out;
	if ((fd = reopen()) < 0)
		goto out;
	if (ftruncate(fd, (off_t)(off + size)) != 0)
		goto out;
	int err;
	do
		err = posix_fallocate(fd, (off_t)off, (off_t)size);
	while (err == EINTR);
	void *m = err == 0 ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off) : MAP_FAILED;
	if (m == MAP_FAILED) {
		if (ftruncate(fd, (off_t)R.file_end) != 0) {
			/* the file keeps its length: nothing uses the part past file_end */
		}
		goto out;
	}
	struct cuprof_ring_seg *seg = m;
	seg->chunks_off = chunks_off;
	seg->data_off = data_off;
	seg->size = size;
	seg->nchunks = (uint32_t)n;
	seg->chunk_size = (uint32_t)chunk;
	__atomic_store_n(&seg->magic, CUPROF_SEG_MAGIC, __ATOMIC_RELEASE);
	R.segs[k] = (struct chunk_run){(struct cuprof_chunk_hdr *)((char *)m + (chunks_off - off)),
				       (char *)m + (data_off - off), (uint32_t)n, recs, (uint32_t)chunk};
	/* Link it for the recorder, after its header: from the ring's header
	 * or the previous segment's. */
	uint64_t *link = &R.hdr->ext_off;
	if (k > 1)
		link = &((struct cuprof_ring_seg *)((char *)R.segs[k - 1].chunks - CUPROF_SEG_HDR_SIZE))->next_off;
	__atomic_store_n(link, off, __ATOMIC_RELEASE);
	R.file_end = off + size;
	__atomic_store_n(&R.hdr->file_size, R.file_end, __ATOMIC_RELEASE);
	__atomic_store_n(&R.nsegs, k + 1, __ATOMIC_RELEASE);
	R.cannot_grow = 0;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&ring_mu);
	t->locked--;
	errno = saved;
	return rc;
}

/* recorder_alive says whether the recorder holds its lock ($CUPROF_DIR's
 * CUPROF_LOCK_NAME, shared, for as long as it records; the kernel lets go
 * of it when the recorder dies): a try for an exclusive lock fails. -1
 * when there is no lock to ask (not recorded by cuprof record, or the file
 * cannot be opened): the heartbeat has to tell. */
static int recorder_alive(void)
{
	if (!R.lock[0])
		return -1;
	int fd = open(R.lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int alive = -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || !S_ISREG(st.st_mode)) {
		/* not the recorder's: someone else's lock would hold writers forever */
	} else if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		alive = 0;
		flock(fd, LOCK_UN);
	} else if (errno == EWOULDBLOCK) {
		alive = 1;
	}
	close(fd);
	return alive;
}

/* futex_wait sleeps until *word is no longer val, a wake-up or timeout_ns
 * (shared: the word is in the ring file, which the recorder maps). */
static void futex_wait(uint32_t *word, uint32_t val, uint64_t timeout_ns)
{
	struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
	syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

/*
 * wait_for_chunk is the wait policy: with no chunk free and some FULL (the
 * recorder is behind), sleep on the ring's `released` word (a futex in the
 * shared file: the recorder wakes as many waiters as it freed chunks after
 * each poll) and claim again whenever the recorder has freed a chunk,
 * growing the ring when a scan finds every chunk held by threads, for as
 * long as the recorder lives. A waiter takes no CPU until the recorder
 * has freed something, however many threads wait: they used to wake every
 * 1 ms, and 1,500 of them starved the recorder (no poll in 10 s). It waits
 * on nothing of the traced process (no lock is held: the callers return
 * before when t->locked), only on the recorder, so it cannot deadlock.
 * Whether the recorder lives is its lock's to say (recorder_alive),
 * however long one of its polls takes; without a lock, the heartbeat's:
 * when neither `polls` nor `released` moved for CUPROF_STALL_MS the
 * recorder is gone or stuck. A sleep lasts at most half that period, so
 * the heartbeat is looked at in time. A wait that finds the recorder gone
 * returns NULL with t->stalled set (the event is counted in stall_drops),
 * and the thread does not wait again until the recorder polls. A signal
 * handler's event waits the same way (a handler cannot be told apart),
 * bounded the same way.
 */
static struct cuprof_rec *wait_for_chunk(struct cuprof_tls *t)
{
	struct cuprof_ring_hdr *h = R.hdr;
	uint32_t polls = __atomic_load_n(&h->polls, __ATOMIC_ACQUIRE);
	if (t->stalled) {
		if (polls == t->stalled_polls)
			return NULL;
		t->stalled = 0;
	}
	uint32_t rel = __atomic_load_n(&h->released, __ATOMIC_ACQUIRE);
	uint64_t t0 = mono_ns(CLOCK_MONOTONIC), moved = t0, now = t0;
	uint64_t nap = R.stall_ns / 2 ? R.stall_ns / 2 : 1;
	struct cuprof_rec *r = NULL;
	__atomic_fetch_add(&h->waiters, 1, __ATOMIC_RELAXED);
	for (;;) {
		/* t->seen_released is what the failed claim saw: a chunk freed
		 * since makes the futex return at once. */
		futex_wait(&h->released, t->seen_released, nap);
		if ((r = claim(t)) != NULL)
			break;
		if (t->failed == 1) {
			if (grow(t, t->seen_segs) != 0)
				break; /* counted in grow_drops by the caller */
			if ((r = claim(t)) != NULL)
				break;
		}
		now = mono_ns(CLOCK_MONOTONIC);
		uint32_t p = __atomic_load_n(&h->polls, __ATOMIC_ACQUIRE);
		uint32_t rl = __atomic_load_n(&h->released, __ATOMIC_ACQUIRE);
		if (p != polls || rl != rel) {
			polls = p;
			rel = rl;
			moved = now;
		} else if (now - moved > R.stall_ns) {
			if (recorder_alive() == 1) {
				moved = now; /* a long poll, or a stopped recorder: it lives */
				continue;
			}
			t->stalled = 1;
			t->stalled_polls = p;
			break;
		}
	}
	__atomic_fetch_sub(&h->waiters, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->waits, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->wait_ns, (r ? mono_ns(CLOCK_MONOTONIC) : now) - t0, __ATOMIC_RELAXED);
	return r;
}

static struct cuprof_rec *rec_slow(struct cuprof_tls *t, int frame);

struct cuprof_rec *cuprof_rec_slow(struct cuprof_tls *t)
{
	return rec_slow(t, 0);
}

struct cuprof_rec *cuprof_rec_slow_frame(struct cuprof_tls *t)
{
	return rec_slow(t, 1);
}

/* cuprof_py_count_drop counts a Python frame that was lost: for want of a
 * chunk (code 0) or of room for its code's name (code 1). */
void cuprof_py_count_drop(struct cuprof_tls *t, int code)
{
	if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) != 1)
		return;
	if (code)
		__atomic_fetch_add(&R.hdr->py_code_drops, 1, __ATOMIC_RELAXED);
	else if (t->slot)
		__atomic_fetch_add(&R.slots[t->slot - 1].py_drops, 1, __ATOMIC_RELEASE); /* as drops: see rec_slow */
	else
		__atomic_fetch_add(&R.hdr->overflow_drops, 1, __ATOMIC_RELAXED);
}

uint64_t *cuprof_ring_pass_calls(void)
{
	return __atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == 1 ? R.hdr->pass_calls : NULL;
}

void cuprof_ring_add_inplace(uint64_t cold_ticks, uint64_t warm_ticks, uint64_t counts)
{
	if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) != 1)
		return;
	struct cuprof_ring_hdr *h = R.hdr;
	__atomic_add_fetch(&h->inplace_cold_ticks, cold_ticks, __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->inplace_warm_ticks, warm_ticks, __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->inplace_counts, counts, __ATOMIC_RELAXED);
}

/* cuprof_py_publish writes the Python status and event cost into the
 * ring's header (also called again after a fork, for the child's ring). */
void cuprof_py_publish(const char *status, const struct cuprof_py_costs *c)
{
	if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) != 1)
		return;
	struct cuprof_ring_hdr *h = R.hdr;
	if (c && c->event_mt) {
		__atomic_store_n(&h->py_c_event_milliticks, c->c_event_mt, __ATOMIC_RELAXED);
		__atomic_store_n(&h->py_inside_milliticks, c->inside_mt, __ATOMIC_RELAXED);
		__atomic_store_n(&h->py_c_inside_milliticks, c->c_inside_mt, __ATOMIC_RELAXED);
		__atomic_store_n(&h->py_hidden_milliticks, c->hidden_mt, __ATOMIC_RELAXED);
		__atomic_store_n(&h->py_c_hidden_milliticks, c->c_hidden_mt, __ATOMIC_RELAXED);
		__atomic_store_n(&h->py_lone_milliticks, c->lone_mt, __ATOMIC_RELAXED);
		__atomic_store_n(&h->py_event_milliticks, c->event_mt, __ATOMIC_RELEASE);
	}
	if (status && status[0]) {
		size_t n = strlen(status);
		if (n > CUPROF_PY_STATUS_MAX - 1)
			n = CUPROF_PY_STATUS_MAX - 1;
		memcpy(h->py_status + 1, status + 1, n > 0 ? n - 1 : 0);
		h->py_status[n] = 0;
		__atomic_store_n(&h->py_status[0], status[0], __ATOMIC_RELEASE);
	}
}

/* rec_slow hands the thread a fresh chunk: it holds at least 8 slots, a
 * record at most 3, so any record fits. */
static struct cuprof_rec *rec_slow(struct cuprof_tls *t, int frame)
{
	int saved = errno;
	struct cuprof_rec *r = NULL;
	/* A child of _Fork still holding its parent's chunk (where the gate's
	 * page could not be wiped); not at every drop of a full ring. */
	if (!t->locked && (t->ch || !t->failed))
		cuprof_fork_check();
	if (t->ch) {
		__atomic_store_n(&t->ch->state, CUPROF_CHUNK_FULL, __ATOMIC_RELEASE);
		t->ch = NULL;
		t->cur = t->lim = NULL;
	}
	if (CUPROF_UNLIKELY(t->locked)) {
		/* A signal handler's event while this thread holds the ring's
		 * locks (opening the ring, interning): opening it here would
		 * deadlock. Dropped, and counted once there is a ring. */
		count_reentrant_drop(t);
		goto out;
	}
	if (!ring_ready()) {
		if (parent_hdr) /* a fork child without a ring of its own */
			__atomic_fetch_add(&parent_hdr->lost_child_events, 1, __ATOMIC_RELAXED);
		goto out;
	}
	if (!t->tid)
		slot_alloc(t);
	r = claim(t);
	/* Every chunk held by a thread: the ring grows (a wait would wait on
	 * threads that may be waiting on this one, and nothing is full). */
	int cannot_grow = 0;
	while (!r && t->failed == 1) {
		if (grow(t, t->seen_segs) != 0) {
			cannot_grow = 1;
			break;
		}
		r = claim(t);
	}
	if (!r && !cannot_grow && R.when_full == CUPROF_WHEN_FULL_WAIT) {
		r = wait_for_chunk(t);
		cannot_grow = !r && !t->stalled;
	}
	if (!r && cannot_grow) {
		__atomic_fetch_add(&R.hdr->grow_drops, 1, __ATOMIC_RELAXED);
	} else if (!r && t->stalled) {
		__atomic_fetch_add(&R.hdr->stall_drops, 1, __ATOMIC_RELAXED);
	} else if (!r && frame) {
		cuprof_py_count_drop(t, 0);
	} else if (!r) {
		if (t->slot) {
			/* An add, not a load and a store: a signal handler's event
			 * landing between them is counted on this same counter
			 * (count_reentrant_drop), and its count was overwritten. */
			__atomic_fetch_add(&R.slots[t->slot - 1].drops, 1, __ATOMIC_RELEASE);
		} else {
			__atomic_fetch_add(&R.hdr->overflow_drops, 1, __ATOMIC_RELAXED);
		}
	}
out:
	errno = saved;
	return r;
}

/* cuprof_record_call_detail is cuprof_record_call's rare case: a call that
 * failed, has a device or lasted more than 2^32 ticks gets a detail slot. */
void cuprof_record_call_detail(struct cuprof_tls *t, uint64_t s, uint64_t e, uint16_t api, int32_t res, uint64_t h,
			       unsigned has_args, uint64_t st, uint64_t ax, uint64_t sz, uint64_t fl, int32_t dv,
			       uint64_t caller)
{
	unsigned n = 2 + has_args;
	struct cuprof_rec *r = cuprof_rec_begin(t, n);
	if (r == NULL)
		return;
	r->start = s;
	r->handle = h;
	r->caller = caller;
	r->dur = (uint32_t)(e - s);
	cuprof_rec_tag(r, api, CUPROF_REC_CALL, (uint8_t)(has_args | CUPROF_EXT_DETAIL));
	struct cuprof_rec *x = r + 1;
	if (has_args) {
		struct cuprof_rec_args *a = (struct cuprof_rec_args *)x++;
		a->stream = st;
		a->aux = ax;
		a->size = sz;
		a->flags = fl;
	}
	struct cuprof_rec_detail *dt = (struct cuprof_rec_detail *)x;
	memset(dt, 0, sizeof *dt);
	dt->end = e;
	dt->result = res;
	dt->device = dv;
	cuprof_rec_commit(t, r, n);
	t->last_end = e;
}

static uint32_t hash_bytes(const char *s, uint32_t n)
{
	uint32_t h = 2166136261u;
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

uint32_t cuprof_intern_n(const char *s, uint32_t n)
{
	struct cuprof_tls *t = &cuprof_tls;
	if (!s || n == 0)
		return 0;
	if (CUPROF_UNLIKELY(t->locked)) {
		/* A signal handler that interrupted this thread inside the
		 * ring's locks: taking them again would deadlock. */
		if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == 1)
			__atomic_fetch_add(&R.hdr->string_drops, 1, __ATOMIC_RELAXED);
		return 0;
	}
	if (CUPROF_UNLIKELY(cuprof_gate == CUPROF_GATE_UNKNOWN))
		cuprof_fork_check(); /* before the parent's string area is written */
	if (!ring_ready())
		return 0;
	int saved = errno;
	uint32_t id = 0;
	t->locked++;
	pthread_mutex_lock(&intern_mu);
	if (!intern_indexed) {
		intern_indexed = 1;
		/* Re-index strings inherited over fork. */
		uint32_t used = R.hdr->strings_used, off = 0;
		while (off + 8 <= used) {
			uint32_t eid, elen;
			memcpy(&eid, R.strings + off, 4);
			memcpy(&elen, R.strings + off + 4, 4);
			if (eid == 0 || eid >= INTERN_SLOTS / 2)
				break;
			intern_offs[eid] = off;
			uint32_t hh = hash_bytes(R.strings + off + 8, elen) & (INTERN_SLOTS - 1);
			while (intern_ids[hh])
				hh = (hh + 1) & (INTERN_SLOTS - 1);
			intern_ids[hh] = eid;
			if (eid >= intern_next)
				intern_next = eid + 1;
			off += 8 + ((elen + 3) & ~3u);
		}
	}
	uint32_t h = hash_bytes(s, n) & (INTERN_SLOTS - 1);
	for (uint32_t probe = 0; probe < INTERN_SLOTS; probe++) {
		uint32_t cand = intern_ids[h];
		if (cand == 0)
			break;
		uint32_t off = intern_offs[cand], clen;
		memcpy(&clen, R.strings + off + 4, 4);
		if (clen == n && memcmp(R.strings + off + 8, s, n) == 0) {
			id = cand;
			goto out;
		}
		h = (h + 1) & (INTERN_SLOTS - 1);
	}
	if (intern_ids[h] != 0)
		goto full;
	uint32_t used = R.hdr->strings_used;
	uint32_t need = 8 + ((n + 3) & ~3u);
	if (used + need > CUPROF_STRINGS_SIZE || intern_next >= INTERN_SLOTS / 2)
		goto full;
	id = intern_next++;
	memcpy(R.strings + used, &id, 4);
	memcpy(R.strings + used + 4, &n, 4);
	memcpy(R.strings + used + 8, s, n);
	intern_offs[id] = used;
	intern_ids[h] = id;
	__atomic_store_n(&R.hdr->strings_used, used + need, __ATOMIC_RELEASE);
	goto out;
full:
	__atomic_fetch_add(&R.hdr->string_drops, 1, __ATOMIC_RELAXED);
out:
	pthread_mutex_unlock(&intern_mu);
	t->locked--;
	errno = saved;
	return id;
}

void cuprof_emit(uint8_t kind, uint32_t name, uint32_t domain, uint64_t handle, uint8_t object)
{
	struct cuprof_tls *t = &cuprof_tls;
	if (t->depth) {
		/* a signal handler interrupting a record being written */
		count_reentrant_drop(t);
		return;
	}
	cuprof_guard_enter(t);
	uint64_t now = cuprof_clock();
	cuprof_rec_full(t, kind, now, now, handle, domain, 0, name, object);
	cuprof_guard_exit(t);
}

/* ---- The C ABI of cuprof.h ---- */

CUPROF_EXPORT int cuprof_active(void)
{
	if (CUPROF_UNLIKELY(cuprof_tls.locked)) /* see cuprof_intern_n */
		return __atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == 1;
	return ring_ready();
}

CUPROF_EXPORT uint64_t cuprof_now(void)
{
	return cuprof_clock();
}

/* cuprof_count_cut counts a string cut to fit (string_cuts: the recorder
 * reports them). */
void cuprof_count_cut(void)
{
	if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == 1 || (!cuprof_tls.locked && ring_ready()))
		__atomic_fetch_add(&R.hdr->string_cuts, 1, __ATOMIC_RELAXED);
}

uint32_t cuprof_intern_cut(const char *s, size_t n)
{
	if (n > CUPROF_STRING_MAX) {
		n = CUPROF_STRING_MAX;
		cuprof_count_cut();
	}
	return cuprof_intern_n(s, (uint32_t)n);
}

CUPROF_EXPORT uint32_t cuprof_intern(const char *s)
{
	if (!s)
		return 0;
	return cuprof_intern_cut(s, strlen(s));
}

CUPROF_EXPORT void cuprof_span(uint32_t domain, uint32_t name, uint64_t start, uint64_t end)
{
	struct cuprof_tls *t = &cuprof_tls;
	if (t->depth) {
		count_reentrant_drop(t); /* see cuprof_emit */
		return;
	}
	if (!cuprof_gate_open() || start < cuprof_gate_since)
		return; /* outside a capture range */
	cuprof_guard_enter(t);
	cuprof_rec_full(t, CUPROF_REC_SPAN, start, end, 0, domain, (uint64_t)(uintptr_t)__builtin_return_address(0),
			name, 0);
	cuprof_guard_exit(t);
}

CUPROF_EXPORT uint64_t cuprof_last_call_end(void)
{
	return cuprof_tls.last_end;
}
