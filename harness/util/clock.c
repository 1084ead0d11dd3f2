/* clock.c — util/clock.h. */
#include "util/clock.h"

#include <time.h>

static double seconds_of(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double af_clock_mono(void) { return seconds_of(CLOCK_MONOTONIC); }
double af_clock_unix(void) { return seconds_of(CLOCK_REALTIME); }
double af_clock_thread_cpu(void) { return seconds_of(CLOCK_THREAD_CPUTIME_ID); }
