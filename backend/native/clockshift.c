/*
 * locklab's clock shift: an LD_PRELOAD library that moves CLOCK_REALTIME
 * for one process, by an amount another process changes while it runs.
 *
 * Why not Debian's libfaketime: it finds the real clock functions with
 * dlsym(), and dlsym() allocates; the jemalloc that Debian's redis-server
 * links reads the clock while it initialises, so the two recurse
 * ("Unexpected recursive calls to clock_gettime()") and the server never
 * starts (wolfcw/libfaketime#130). This library never looks the real
 * functions up: it asks the kernel through the raw clock_gettime system
 * call, allocates nothing and takes no lock, so it is safe wherever the
 * clock is read, jemalloc's start included.
 *
 * The shift comes from a file named by $LOCKLAB_CLOCK_FILE, mapped shared
 * on first use, which the backend (backend/src/faults/clock.rs) rewrites
 * at run time. Its layout, little-endian, guarded by a sequence lock (the
 * writer makes `seq` odd, writes the fields, makes it even; a reader
 * retries while it is odd or changed under it):
 *
 *   0   u64  seq
 *   8   i64  offset_ns   shift at the anchor
 *   16  i64  drift_ppm   how fast the shift grows: +1000 gains 1 ms per second
 *   24  i64  anchor_ns   real CLOCK_REALTIME the offset was measured at
 *
 *   shifted(real) = real + offset_ns + (real - anchor_ns) * drift_ppm / 1e6
 *
 * which is core's clock (core/src/world/clock.rs): piecewise linear, a jump
 * or a drift change re-anchors at the current instant.
 *
 * Only the realtime clocks move (clock_gettime's CLOCK_REALTIME and
 * CLOCK_REALTIME_COARSE, gettimeofday, time): that is the clock Redis
 * expires keys by (mstime() -> ustime() -> gettimeofday) and answers TIME
 * with. The monotonic clock is passed through: an NTP step does not move
 * it either.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define FILE_LEN 64
#define MAPPING_NONE ((volatile int64_t *)1)
#define MAX_SHIFT_NS ((int64_t)50 * 365 * 24 * 3600 * 1000000000)

/* NULL: not tried yet; MAPPING_NONE: no file (no shift); else the mapping. */
static volatile int64_t *mapping;

static volatile int64_t *shared(void) {
    volatile int64_t *m = __atomic_load_n(&mapping, __ATOMIC_ACQUIRE);
    if (m != NULL) {
        return m;
    }
    volatile int64_t *found = MAPPING_NONE;
    const char *path = getenv("LOCKLAB_CLOCK_FILE");
    if (path != NULL && path[0] != '\0') {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            void *p = mmap(NULL, FILE_LEN, PROT_READ, MAP_SHARED, fd, 0);
            close(fd);
            if (p != MAP_FAILED) {
                found = (volatile int64_t *)p;
            }
        }
    }
    volatile int64_t *expected = NULL;
    if (!__atomic_compare_exchange_n(&mapping, &expected, found, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        /* Another thread mapped it first: use theirs. */
        if (found != MAPPING_NONE) {
            munmap((void *)found, FILE_LEN);
        }
        return expected;
    }
    return found;
}

/* How far the clock is moved at real time `real_ns`. */
static int64_t shift_ns(int64_t real_ns) {
    volatile int64_t *m = shared();
    if (m == MAPPING_NONE) {
        return 0;
    }
    for (;;) {
        int64_t seq = __atomic_load_n(&m[0], __ATOMIC_ACQUIRE);
        if (seq & 1) {
            continue; /* a write is under way */
        }
        int64_t offset = __atomic_load_n(&m[1], __ATOMIC_RELAXED);
        int64_t ppm = __atomic_load_n(&m[2], __ATOMIC_RELAXED);
        int64_t anchor = __atomic_load_n(&m[3], __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&m[0], __ATOMIC_RELAXED) != seq) {
            continue;
        }
        /* The backend keeps the drift where core does and the shift within
         * ±50 years; clamp here too, so no file content can make the
         * arithmetic overflow. */
        if (ppm < -900000) {
            ppm = -900000;
        } else if (ppm > 10000000) {
            ppm = 10000000;
        }
        __int128 shift = (__int128)offset + ((__int128)real_ns - anchor) * ppm / 1000000;
        if (shift > MAX_SHIFT_NS) {
            shift = MAX_SHIFT_NS;
        } else if (shift < -MAX_SHIFT_NS) {
            shift = -MAX_SHIFT_NS;
        }
        return (int64_t)shift;
    }
}

static int real_clock(clockid_t clk, struct timespec *ts) {
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

static void shift_timespec(struct timespec *ts) {
    int64_t real = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
    int64_t t = real + shift_ns(real);
    int64_t sec = t / 1000000000, nsec = t % 1000000000;
    if (nsec < 0) {
        nsec += 1000000000;
        sec -= 1;
    }
    ts->tv_sec = (time_t)sec;
    ts->tv_nsec = (long)nsec;
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    int r = real_clock(clk, ts);
    if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
        shift_timespec(ts);
    }
    return r;
}

/* glibc declares `tv` non-null; a caller that passes NULL anyway gets what
 * glibc's own gettimeofday gives it, not a crash. */
#pragma GCC diagnostic ignored "-Wnonnull-compare"
int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;
    int r = real_clock(CLOCK_REALTIME, &ts);
    if (r != 0) {
        return r;
    }
    shift_timespec(&ts);
    if (tv != NULL) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    if (tz != NULL) {
        /* glibc reports no time zone here either. */
        struct timezone *z = tz;
        z->tz_minuteswest = 0;
        z->tz_dsttime = 0;
    }
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    if (real_clock(CLOCK_REALTIME, &ts) != 0) {
        return (time_t)-1;
    }
    shift_timespec(&ts);
    if (out != NULL) {
        *out = ts.tv_sec;
    }
    return ts.tv_sec;
}
