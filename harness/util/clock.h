/* util/clock.h — the one clock of the project, in seconds as doubles.
 *   af_clock_mono()  CLOCK_MONOTONIC: durations and deadlines (never jumps)
 *   af_clock_unix()  CLOCK_REALTIME: timestamps written to files (first_seen, stats)
 *   af_clock_thread_cpu()  CLOCK_THREAD_CPUTIME_ID: the calling thread's CPU time (user + system)
 */
#ifndef ATTNFUZZ_UTIL_CLOCK_H
#define ATTNFUZZ_UTIL_CLOCK_H

#ifdef __cplusplus
extern "C" {
#endif

double af_clock_mono(void);
double af_clock_unix(void);
double af_clock_thread_cpu(void);

#ifdef __cplusplus
}
#endif
#endif
