/* failsecure._spin: the guard's caller waits for its batch without the GIL, for a moment.

   wait(flag, limit) -> bool: poll flag[0] (a writable buffer, a bytearray the guard's
   worker sets to 1 when its batch ended) for up to `limit` seconds with the GIL released,
   yielding the CPU every few microseconds. True when it was set.

   A Python-level poll has to take the GIL between two polls, and the worker holds it
   while it runs the gates: the caller then sleeps on the GIL, and on a VM its idle vCPU
   is slow to come back. This loop never asks for the GIL until the batch ended or the
   time is up, so the caller's CPU stays busy and the worker runs undisturbed. Optional:
   without it (no compiler at install time) the guard polls in Python. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sched.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#define RELAX() __asm__ __volatile__("pause")
#elif defined(__aarch64__) || defined(__arm__)
#define RELAX() __asm__ __volatile__("yield")
#else
#define RELAX() do { } while (0)
#endif

static double
monotonic(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static PyObject *
spin_wait(PyObject *self, PyObject *args)
{
    Py_buffer view;
    double limit;
    int set = 0;

    if (!PyArg_ParseTuple(args, "w*d", &view, &limit))
        return NULL;
    if (view.len < 1) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "wait: empty flag");
        return NULL;
    }
    const unsigned char *flag = (const unsigned char *)view.buf;
    Py_BEGIN_ALLOW_THREADS
    double end = monotonic() + limit;
    for (unsigned n = 1;; n++) {
        if (__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
            set = 1;
            break;
        }
        RELAX();
        if ((n & 63) == 0) {  /* every few microseconds: the clock, and the CPU to anyone waiting for it */
            if (monotonic() >= end)
                break;
            sched_yield();
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyBool_FromLong(set);
}

static PyMethodDef methods[] = {
    {"wait", spin_wait, METH_VARARGS, "wait(flag, limit) -> bool: poll flag[0] without the GIL for up to limit seconds."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "failsecure._spin", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__spin(void)
{
    return PyModule_Create(&module);
}
