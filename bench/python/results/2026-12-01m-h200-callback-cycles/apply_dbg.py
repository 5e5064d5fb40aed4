import sys
p=sys.argv[1]
s=open(p).read()
def rep(a,b):
    global s
    assert a in s, a[:60]
    s=s.replace(a,b,1)
rep('''static PyObject *mon_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{''','''static unsigned long long dbg_cyc[4], dbg_n[4];
static inline uint64_t dbg_tsc(void) { uint32_t lo, hi; __asm__ __volatile__("lfence; rdtsc" : "=a"(lo), "=d"(hi)); return ((uint64_t)hi << 32) | lo; }
static PyObject *mon_start0(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *mon_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	uint64_t t0 = dbg_tsc();
	PyObject *r = mon_start0(self, args, nargs);
	dbg_cyc[0] += dbg_tsc() - t0; dbg_n[0]++;
	return r;
}
static PyObject *mon_start0(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{''')
rep('''static PyObject *mon_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return mon_end(args, nargs, 0, 1);
}''','''static PyObject *mon_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	uint64_t t0 = dbg_tsc();
	PyObject *r = mon_end(args, nargs, 0, 1);
	dbg_cyc[1] += dbg_tsc() - t0; dbg_n[1]++;
	return r;
}''')
rep('''static PyObject *mon_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{''','''static PyObject *mon_call0(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *mon_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	uint64_t t0 = dbg_tsc();
	PyObject *r = mon_call0(self, args, nargs);
	dbg_cyc[2] += dbg_tsc() - t0; dbg_n[2]++;
	return r;
}
static PyObject *mon_call0(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{''')
rep('''static PyObject *mon_c_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return mon_c_end(args, nargs, 0);
}''','''static PyObject *mon_c_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	uint64_t t0 = dbg_tsc();
	PyObject *r = mon_c_end(args, nargs, 0);
	dbg_cyc[3] += dbg_tsc() - t0; dbg_n[3]++;
	return r;
}''')
rep('''	py_stopped = 1; /* callbacks return at once from now on */
	flush_open();''','''	py_stopped = 1; /* callbacks return at once from now on */
	if (getenv("CUPROF_PY_DEBUG")) {
		const char *nm[4] = {"start", "return", "call", "c_return"};
		for (int i = 0; i < 4; i++)
			fprintf(stderr, "cuprof-debug: %s n=%llu cyc/ev=%.1f\\n", nm[i], dbg_n[i], dbg_n[i] ? (double)dbg_cyc[i] / dbg_n[i] : 0.0);
	}
	flush_open();''')
open(p,'w').write(s)
