/* campaign/interrupt.c — SIGINT / SIGTERM during a campaign: the first one asks the
 * campaign to stop (fuzzing stops, nothing new is minimised, pending findings are stored
 * as found, the reports are written, exit "interrupted"); a second one of the same kind
 * ends the process at once (the default action).
 *
 * The one piece of process-wide state in the campaign: a signal handler can reach no
 * context struct, so the signal that arrived lives in a sig_atomic_t here; everything
 * else reads it through af_camp_interrupted(). */
#include <signal.h>
#include <string.h>

#include "campaign/campaign_internal.h"

static volatile sig_atomic_t stop_signal; /* 0, or the signal that asked to stop */

static void on_stop_signal(int sig) {
    if (stop_signal) { /* the second one: the user insists */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_signal = sig;
}

void af_camp_interrupt_install(af_camp_saved_signals *saved) {
    stop_signal = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: poll / waitpid / sleep return early */
    sigaction(SIGINT, &sa, &saved->sigint);
    sigaction(SIGTERM, &sa, &saved->sigterm);
}

void af_camp_interrupt_restore(const af_camp_saved_signals *saved) {
    sigaction(SIGINT, &saved->sigint, NULL);
    sigaction(SIGTERM, &saved->sigterm, NULL);
}

int af_camp_interrupted(void) { return (int)stop_signal; }
