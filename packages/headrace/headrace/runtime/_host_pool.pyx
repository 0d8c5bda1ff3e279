# cython: language_level=3
"""headrace's host caching allocator for NumPy arrays' data (``host_memory`` says when it is
used and why).

NumPy (>= 1.22) lets a program choose the functions that allocate arrays' data: a
``PyDataMem_Handler`` in a PyCapsule named "mem_handler", set with ``PyDataMem_SetHandler``
into a context variable (per thread, per asyncio task). Every array remembers the handler
that allocated it and is freed through it, whenever and wherever it dies.

Blocks are cached in size classes, four a power of two (64-byte steps up to 256 bytes; at
most 25% rounding, 12% on average), each a LIFO free list threaded through the free blocks
themselves: the block freed last (warmest in cache) is the next one handed out. A free that
would take the cache above its limit goes to malloc instead. Each block is 64-byte aligned
(AVX-512 loads of whole lines) with a 32-byte header before it: malloc's own pointer, the
block's capacity and class. Blocks of 4 MiB and more are marked for transparent huge pages,
as NumPy's own allocator marks them. One mutex guards the lists and counters: NumPy calls the
handler without the GIL (a kernel's nogil section freeing an array, another thread's run);
the critical sections are a few loads and stores, the malloc/free/memset outside them.
"""

cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>
    #include <pthread.h>
    #ifdef __linux__
    #include <sys/mman.h>
    #endif
    #ifndef NPY_TARGET_VERSION
    #define NPY_TARGET_VERSION NPY_1_22_API_VERSION
    #endif
    #include "numpy/arrayobject.h"

    #define HR_ALIGN 64
    #define HR_EXTRA (sizeof(hr_hdr) + HR_ALIGN)     /* header + worst alignment shift */
    #define HR_NCLASS 132                            /* up to 2^40 bytes */
    #define HR_BIG 0xFFFFFFFFu                       /* larger: never cached */
    #define HR_MAGIC 0x68726870u                     /* "hrhp" */
    #define HR_HUGE ((size_t)4 << 20)

    typedef struct { void *raw; size_t cap; uint32_t cls; uint32_t magic; uint64_t pad; } hr_hdr;

    static pthread_mutex_t hr_mutex = PTHREAD_MUTEX_INITIALIZER;
    static void *hr_heads[HR_NCLASS];
    static size_t hr_cached, hr_in_use, hr_peak, hr_limit = (size_t)256 << 20;
    static unsigned long long hr_n_alloc, hr_n_hit, hr_n_fresh, hr_n_free, hr_n_release;
    static unsigned long long hr_served;   /* bytes handed out, by capacity, ever */
    static PyObject *hr_capsule;

    /* The class of a request of n bytes and its capacity: 64..256 in 64-byte steps, then
       four classes between successive powers of two. */
    static inline uint32_t hr_class(size_t n, size_t *cap) {
        if (n <= 256) {
            uint32_t c = n ? (uint32_t)((n + 63) >> 6) - 1 : 0;
            *cap = (size_t)(c + 1) << 6;
            return c;
        }
        unsigned b = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
        if (b >= 40) { *cap = n; return HR_BIG; }
        size_t step = (size_t)1 << (b - 2);
        size_t k = (n - ((size_t)1 << b) + step - 1) >> (b - 2);
        *cap = ((size_t)1 << b) + k * step;
        return 4 + (b - 8) * 4 + (uint32_t)(k - 1);
    }

    static void *hr_alloc(size_t n, int zero) {
        size_t cap;
        void *p = NULL, *raw;
        hr_hdr *h;
        uint32_t c;
        if (n > ((size_t)1 << 62)) return NULL;
        c = hr_class(n, &cap);
        pthread_mutex_lock(&hr_mutex);
        hr_n_alloc++;
        hr_served += cap;
        if (c != HR_BIG && (p = hr_heads[c]) != NULL) {
            hr_heads[c] = *(void **)p;
            hr_cached -= cap;
            hr_n_hit++;
        } else {
            hr_n_fresh++;
        }
        hr_in_use += cap;
        if (hr_in_use > hr_peak) hr_peak = hr_in_use;
        pthread_mutex_unlock(&hr_mutex);
        if (p != NULL) {
            if (zero) memset(p, 0, n);
            return p;
        }
        raw = zero ? calloc(1, cap + HR_EXTRA) : malloc(cap + HR_EXTRA);
        if (raw == NULL) {
            pthread_mutex_lock(&hr_mutex);
            hr_in_use -= cap;
            hr_n_fresh--;
            pthread_mutex_unlock(&hr_mutex);
            return NULL;
        }
        p = (void *)(((uintptr_t)raw + sizeof(hr_hdr) + HR_ALIGN - 1) & ~(uintptr_t)(HR_ALIGN - 1));
        h = (hr_hdr *)p - 1;
        h->raw = raw; h->cap = cap; h->cls = c; h->magic = HR_MAGIC;
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (cap >= HR_HUGE) {
            uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
            uintptr_t e = ((uintptr_t)p + cap) & ~(uintptr_t)4095;
            if (e > a) madvise((void *)a, e - a, MADV_HUGEPAGE);
        }
    #endif
        return p;
    }

    static void hr_release(void *p) {
        hr_hdr *h = (hr_hdr *)p - 1;
        if (h->magic != HR_MAGIC)
            Py_FatalError("headrace host pool: a block it did not allocate was freed through it");
        h->magic = 0;
        free(h->raw);
    }

    static void hr_free(void *ctx, void *p, size_t size) {
        hr_hdr *h;
        int keep = 0;
        (void)ctx; (void)size;   /* the header knows the block's size */
        if (p == NULL) return;
        h = (hr_hdr *)p - 1;
        if (h->magic != HR_MAGIC)
            Py_FatalError("headrace host pool: a block it did not allocate was freed through it");
        pthread_mutex_lock(&hr_mutex);
        hr_in_use -= h->cap;
        hr_n_free++;
        if (h->cls != HR_BIG && hr_cached + h->cap <= hr_limit) {
            *(void **)p = hr_heads[h->cls];
            hr_heads[h->cls] = p;
            hr_cached += h->cap;
            keep = 1;
        } else {
            hr_n_release++;
        }
        pthread_mutex_unlock(&hr_mutex);
        if (!keep) hr_release(p);
    }

    static void *hr_malloc(void *ctx, size_t n) { (void)ctx; return hr_alloc(n, 0); }

    static void *hr_calloc(void *ctx, size_t nelem, size_t elsize) {
        size_t n;
        (void)ctx;
        if (__builtin_mul_overflow(nelem, elsize, &n)) return NULL;
        return hr_alloc(n, 1);
    }

    static void *hr_realloc(void *ctx, void *p, size_t n) {
        hr_hdr *h;
        size_t cap;
        void *q;
        if (p == NULL) return hr_alloc(n, 0);
        h = (hr_hdr *)p - 1;
        if (n <= ((size_t)1 << 62) && hr_class(n, &cap) == h->cls && n <= h->cap)
            return p;   /* the same class: the block already fits */
        q = hr_alloc(n, 0);
        if (q == NULL) return NULL;   /* p stays valid, as realloc's contract says */
        memcpy(q, p, n < h->cap ? n : h->cap);
        hr_free(ctx, p, 0);
        return q;
    }

    static PyDataMem_Handler hr_handler = {
        "headrace_host_pool", 1, {NULL, hr_malloc, hr_calloc, hr_realloc, hr_free}
    };

    /* Cached blocks back to malloc (all of them, or those above the limit). */
    static void hr_trim(size_t keep_bytes) {
        void *chain = NULL, *p, *next;
        int c;
        pthread_mutex_lock(&hr_mutex);
        for (c = HR_NCLASS - 1; c >= 0 && hr_cached > keep_bytes; c--) {
            while ((p = hr_heads[c]) != NULL && hr_cached > keep_bytes) {
                hr_heads[c] = *(void **)p;
                hr_cached -= ((hr_hdr *)p - 1)->cap;
                hr_n_release++;
                *(void **)p = chain;
                chain = p;
            }
        }
        pthread_mutex_unlock(&hr_mutex);
        for (p = chain; p != NULL; p = next) {
            next = *(void **)p;
            hr_release(p);
        }
    }

    static void hr_atfork_prepare(void) { pthread_mutex_lock(&hr_mutex); }
    static void hr_atfork_release(void) { pthread_mutex_unlock(&hr_mutex); }

    static int hr_init(void) {
        if (_import_array() < 0) return -1;
        hr_capsule = PyCapsule_New(&hr_handler, "mem_handler", NULL);
        if (hr_capsule == NULL) return -1;
        /* A fork while another thread holds the mutex would leave the child's locked. */
        pthread_atfork(hr_atfork_prepare, hr_atfork_release, hr_atfork_release);
        return 0;
    }

    static PyObject *hr_enter(void) { return PyDataMem_SetHandler(hr_capsule); }

    static int hr_exit(PyObject *old) {
        PyObject *mine = PyDataMem_SetHandler(old);
        if (mine == NULL) return -1;
        Py_DECREF(mine);
        return 0;
    }

    static PyObject *hr_capsule_ref(void) { Py_INCREF(hr_capsule); return hr_capsule; }

    static PyObject *hr_stats(void) {
        size_t cached, in_use, peak, limit;
        unsigned long long a, h, f, fr, r, sv;
        pthread_mutex_lock(&hr_mutex);
        cached = hr_cached; in_use = hr_in_use; peak = hr_peak; limit = hr_limit;
        a = hr_n_alloc; h = hr_n_hit; f = hr_n_fresh; fr = hr_n_free; r = hr_n_release;
        sv = hr_served;
        pthread_mutex_unlock(&hr_mutex);
        return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:K,s:K,s:K,s:K,s:K,s:K}",
            "allocated_bytes", (Py_ssize_t)in_use, "reserved_bytes", (Py_ssize_t)(in_use + cached),
            "cached_bytes", (Py_ssize_t)cached, "peak_allocated_bytes", (Py_ssize_t)peak,
            "cache_limit_bytes", (Py_ssize_t)limit, "allocations", a, "cache_hits", h,
            "fresh_allocations", f, "frees", fr, "releases", r, "served_bytes", sv);
    }

    static void hr_set_limit(size_t limit) {
        pthread_mutex_lock(&hr_mutex);
        hr_limit = limit;
        pthread_mutex_unlock(&hr_mutex);
        hr_trim(limit);
    }

    static void hr_reset_peak(void) {
        pthread_mutex_lock(&hr_mutex);
        hr_peak = hr_in_use;
        pthread_mutex_unlock(&hr_mutex);
    }

    static unsigned long long hr_served_bytes(void) {
        unsigned long long sv;
        pthread_mutex_lock(&hr_mutex);
        sv = hr_served;
        pthread_mutex_unlock(&hr_mutex);
        return sv;
    }

    static size_t hr_class_size(size_t n) { size_t cap; hr_class(n, &cap); return cap; }
    """
    int hr_init() except -1
    object hr_enter()
    int hr_exit(object old) except -1
    object hr_capsule_ref()
    object hr_stats()
    void hr_trim(size_t keep_bytes) nogil
    void hr_set_limit(size_t limit) nogil
    void hr_reset_peak() nogil
    size_t hr_class_size(size_t n) nogil
    unsigned long long hr_served_bytes() nogil

hr_init()

NAME = "headrace_host_pool"   # numpy's get_handler_name of the arrays it allocates


def enter():
    """Make the pool allocate this context's new arrays; returns the handler it replaced (for
    :func:`leave`)."""
    return hr_enter()


def leave(old):
    """Put back ``old`` (what :func:`enter` returned) as this context's handler."""
    hr_exit(old)


def handler():
    """The pool's "mem_handler" PyCapsule (for ``numpy``'s handler API and tests)."""
    return hr_capsule_ref()


def stats():
    """The pool's counters as a dict: bytes of live blocks (``allocated_bytes``, by class
    capacity), cached ones, their sum (``reserved_bytes``), the peak of allocated bytes, the
    cache limit; and counts of allocations, cache hits, fresh (malloc'd) blocks, frees and
    blocks released to malloc; ``served_bytes``, the capacity of every block handed out."""
    return hr_stats()


def served():
    """Bytes (by block capacity) the pool has handed out since the process started."""
    return hr_served_bytes()


def trim(size_t keep_bytes=0):
    """Release cached blocks to malloc until at most ``keep_bytes`` stay cached."""
    with nogil:
        hr_trim(keep_bytes)


def set_limit(size_t limit):
    """Cache at most ``limit`` bytes of free blocks (those above it released now)."""
    with nogil:
        hr_set_limit(limit)


def reset_peak():
    """Restart ``peak_allocated_bytes`` from the bytes allocated now."""
    hr_reset_peak()


def class_size(size_t n):
    """The capacity of the block a request of ``n`` bytes gets."""
    return hr_class_size(n)
