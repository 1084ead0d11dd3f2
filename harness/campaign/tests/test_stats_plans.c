/* test_stats_plans.c — a campaign's stats.json carries the plans its cases' runs read from a
 * plan folder and wrote to it (plans_from_disk, plans_to_disk): written and read back; read
 * as 0 from an older stats.json without them; summed by attnfuzz merge over two campaigns.
 * (The in-process engine adds each verdict's counts, campaign/inprocess.c; the counts of a
 * verdict are test_plan_counters'.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "campaign/merge.h"
#include "campaign/stats.h"
#include "util/check.h"
#include "util/json.h"

static void write_stats(const char *dir, long long from, long long to) {
    af_campaign_stats *st = calloc(1, sizeof *st);
    CHECK(st != NULL);
    snprintf(st->backend, sizeof st->backend, "cpu");
    st->mode = "inprocess";
    st->cases = 10;
    st->time_to_first_finding_s = -1;
    st->plans_from_disk = from;
    st->plans_to_disk = to;
    char why[512] = "";
    CHECK_MSG(af_stats_write(dir, st, why, sizeof why) == 0, "%s", why);
    free(st);
}

int main(void) {
    char root[] = "/tmp/attnfuzz-stats-plans-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char a[600], b[600], out[600], path[700], why[512] = "";
    snprintf(a, sizeof a, "%s/a", root);
    snprintf(b, sizeof b, "%s/b", root);
    snprintf(out, sizeof out, "%s/merged", root);
    CHECK(mkdir(a, 0755) == 0 && mkdir(b, 0755) == 0);
    af_campaign_stats *back = calloc(1, sizeof *back);
    CHECK(back != NULL);

    write_stats(a, 7, 3);
    CHECK_MSG(af_stats_read(a, back, why, sizeof why) == 0, "%s", why);
    CHECK_MSG(back->plans_from_disk == 7 && back->plans_to_disk == 3, "read back %lld and %lld", back->plans_from_disk,
              back->plans_to_disk);

    /* an older stats.json: the keys absent, the counts 0 */
    write_stats(b, 11, 5);
    snprintf(path, sizeof path, "%s/stats.json", b);
    json_error_t err;
    json_t *o = json_load_file(path, 0, &err);
    CHECK(o != NULL);
    CHECK(json_object_del(o, "plans_from_disk") == 0 && json_object_del(o, "plans_to_disk") == 0);
    CHECK(json_dump_file(o, path, 0) == 0);
    json_decref(o);
    CHECK_MSG(af_stats_read(b, back, why, sizeof why) == 0, "%s", why);
    CHECK(back->plans_from_disk == 0 && back->plans_to_disk == 0);

    /* merged: summed */
    write_stats(b, 11, 5);
    const char *dirs[2] = {a, b};
    af_merge_summary sum;
    int rc = af_campaign_merge(out, dirs, 2, &sum, why, sizeof why);
    CHECK_MSG(rc == 0, "merge: %d %s", rc, why);
    CHECK_MSG(af_stats_read(out, back, why, sizeof why) == 0, "%s", why);
    CHECK_MSG(back->plans_from_disk == 18 && back->plans_to_disk == 8, "merged %lld and %lld", back->plans_from_disk,
              back->plans_to_disk);
    free(back);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    CHECK_DONE("test_stats_plans");
}
