/* test_registry.c — the backend registry's capacity: the built-ins (cpu, cudnn, every
 * planted plugin) leave room for plugins and workers (a registry of built-ins filled to its
 * old size of 64 once made `--worker-cmd` fail with "has no command"), and a full registry
 * refuses an addition with -1 instead of dropping it in silence. */
#include <stdio.h>

#include "backends/backend.h"
#include "util/check.h"

int main(void) {
    af_registry r;
    af_registry_init(&r);
    int builtins = r.count;
    printf("built-in backends: %d of %d\n", builtins, AF_REGISTRY_MAX);
    CHECK_MSG(builtins > 0, "no built-in backend registered");
    CHECK_MSG(builtins + 64 <= AF_REGISTRY_MAX, "%d built-ins leave less than 64 places of %d for plugins and workers",
              builtins, AF_REGISTRY_MAX);
    int added = 0, refused = 0;
    for (int i = builtins; i < AF_REGISTRY_MAX + 3; i++) {
        if (af_registry_add(&r, af_backend_cpu_new()) == 0)
            added++;
        else
            refused++;
    }
    CHECK_MSG(r.count == AF_REGISTRY_MAX, "count %d after filling, want %d", r.count, AF_REGISTRY_MAX);
    CHECK_MSG(added == AF_REGISTRY_MAX - builtins && refused == 3, "added %d refused %d", added, refused);
    char why[256];
    CHECK(af_registry_find(&r, "cpu", why, sizeof why) != NULL);
    af_registry_free(&r);
    CHECK_DONE("test_registry");
}
