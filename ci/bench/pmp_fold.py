#!/usr/bin/env python3
"""pmp_fold.py OUT [TOP] — fold the stacks ci/bench/pmp.sh wrote: for every function, the
share of samples in which some thread had it on its stack (inclusive) and the share in
which it was a thread's innermost frame (self), over the threads that were not idle
(innermost frame not a wait: futex, poll, nanosleep, pthread_cond_*, epoll, select)."""
import collections
import re
import sys

IDLE = re.compile(r"futex|poll|nanosleep|pthread_cond|select|sigtimedwait|sem_wait|accept|read$|wait4|waitpid")


def stacks(path):
    """yields (sample, [frames innermost first]) per thread"""
    sample, cur = 0, None
    frame = re.compile(r"^#\d+\s+(?:0x[0-9a-f]+ in )?([^\s(]+)")
    for line in open(path, errors="replace"):
        if line.startswith("== sample"):
            if cur:
                yield sample, cur
            sample, cur = int(line.split()[2]), None
        elif line.startswith("Thread "):
            if cur:
                yield sample, cur
            cur = []
        else:
            m = frame.match(line)
            if m and cur is not None:
                cur.append(m.group(1))
    if cur:
        yield sample, cur


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    samples, busy = set(), 0
    incl, self_ = collections.Counter(), collections.Counter()
    for s, fr in stacks(path):
        samples.add(s)
        if not fr or IDLE.search(fr[0]):
            continue
        busy += 1
        self_[fr[0]] += 1
        for f in set(fr):
            incl[f] += 1
    print("%d samples, %d busy thread stacks" % (len(samples), busy))
    print("%-8s %-8s function (share of busy thread stacks)" % ("incl", "self"))
    for f, n in incl.most_common(top):
        print("%6.1f%%  %6.1f%%  %s" % (100.0 * n / max(busy, 1), 100.0 * self_[f] / max(busy, 1), f))


if __name__ == "__main__":
    main()
