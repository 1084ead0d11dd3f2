/* summary.c — the campaign's closing summary block (campaign_internal.h). The progress
 * lines and the messages stay on stderr; this block goes to the stream the caller named
 * (the CLI: stdout), so that `attnfuzz campaign ... > summary.txt` keeps it. */
#include <inttypes.h>
#include <stdio.h>

#include "campaign/campaign_internal.h"

void af_camp_print_summary(const af_campaign_state *cp, const af_triage_summary *sum, FILE *f) {
    const af_campaign_stats *st = &cp->st;
    double rate = st->elapsed_s > 0 ? (double)st->cases / st->elapsed_s : 0;
    fprintf(f, "attnfuzz campaign summary\n");
    fprintf(f, "  directory     %s\n", cp->dir);
    fprintf(f, "  backend       %s%s%s, %s, %d job(s), seed %" PRIu64 "%s\n", st->backend, st->engine[0] ? ":" : "",
            st->engine, st->mode ? st->mode : "", st->jobs, cp->seed, cp->o->seed ? "" : " (drawn)");
    fprintf(f, "  cases         %lld in %.1f s (%.1f cases/s); %lld declined, %lld could not run", st->cases,
            st->elapsed_s, rate, st->declined, st->errors);
    if (st->judge_timeouts)
        fprintf(f, " (%lld not judged within the deadline: attnfuzz's own stages; %s/errors/)", st->judge_timeouts,
                cp->dir);
    fputc('\n', f);
    fprintf(f,
            "  coverage      %d feature(s); %d of %d config cells (hashed configuration classes: dtype, mask, "
            "window, layout, head dim, ...)\n",
            cp->queue.features, af_stats_config_cells(st), AF_STATS_CONFIG_CELLS);
    fprintf(f, "  findings      %lld in %d bucket(s), %d defect group(s)", st->findings, st->buckets, sum->groups);
    int listed = 0;
    for (int i = 0; i < AF_V_COUNT - 1; i++) {
        af_verdict_kind k = af_triage_severity_order[i];
        if (!sum->by_kind[k]) continue;
        fprintf(f, "%s%s %d", listed++ ? ", " : ": ", af_verdict_name(k), sum->by_kind[k]);
    }
    fputc('\n', f);
    if (st->interrupted) fprintf(f, "  stopped       by a signal: pending findings stored unminimised\n");
    if (st->backend_lost[0])
        fprintf(f, "  LOST          the backend went away after %.1f s (%s); %d case(s) in flight kept in %s/lost/\n",
                st->backend_lost_at_s, st->backend_lost, st->lost_cases, cp->dir);
    if (st->write_errors || st->findings_unstored)
        fprintf(f, "  FAILED        %lld write error(s); %lld finding(s) not stored (see stderr)\n", st->write_errors,
                st->findings_unstored);
    fprintf(f, "  reports       %s/report.{json,junit.xml,sarif,html}; plot data %s/plot_data\n", cp->dir, cp->dir);
    fflush(f);
}
