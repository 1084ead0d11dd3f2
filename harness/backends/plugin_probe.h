/* backends/plugin_probe.h — a plugin is first loaded in a forked probe child, never in
 * attnfuzz itself: the child dlopens it (its constructors run there), checks its entry
 * points and ABI version, reads its descriptor (af_plugin_info) and reports it over a
 * pipe. A constructor that segfaults, aborts, calls exit() or never returns ends the
 * child, not attnfuzz: the plugin is reported as "crashed while loading" and is not
 * used. Only a plugin whose probe reported a descriptor becomes a backend, and even
 * then this process dlopens it only when it calls the plugin itself (plugin_loader.c:
 * af_plugin_state_open), which an isolated run never does (its children do). */
#ifndef ATTNFUZZ_PLUGIN_PROBE_H
#define ATTNFUZZ_PLUGIN_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/case.h"

#define AF_PLUGIN_PROBE_DEADLINE_S 60 /* one plugin's loading in the probe child, at most */

/* What the probe learnt of one plugin file. Plain data: it crosses the pipe. */
typedef struct {
    int index;      /* which of the probed paths this is */
    bool loaded;    /* true: flags, name, description are the plugin's; false: why */
    uint32_t flags; /* af_plugin_info.flags (AF_PLUGIN_*) */
    char name[AF_NAME_MAX];
    char description[256];
    char why[1024]; /* "cannot load plugin 'PATH': ..." or "plugin PATH crashed while loading (...)" */
} af_plugin_descriptor;

/* Probe paths[0..n) (n > 0) in forked children, filling out[0..n): one child loads them
 * in order and reports each; when it dies or hangs while loading paths[i], out[i] says
 * so ("plugin PATH crashed while loading (killed by signal 11)", "(exited 0)", "hung
 * while loading (no descriptor after 60 s)") and a fresh child goes on from paths[i+1].
 * The children's stdout goes to stderr (a constructor's chatter never mixes into
 * attnfuzz's output). Returns 0, or -1 when a pipe or fork failed (the paths not probed
 * say so in their why). */
int af_plugin_probe(const char *const *paths, int n, af_plugin_descriptor *out);

/* The checks of one plugin, in the probe child (plugin_loader.c): dlopen, the four
 * entry points, the ABI version, the info struct and its name. Fills d (index kept). */
void af_plugin_check_in_child(const char *path, af_plugin_descriptor *d);

#endif
