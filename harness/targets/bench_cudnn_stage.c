/* bench_cudnn_stage.c — the cudnn backend's host staging of a case into its padded case's
 * buffers and back (backends/cudnn/cudnn_bucket.h), per run, with fresh blocks and with the
 * pool of blocks the backend keeps between runs, side by side: wall milliseconds of
 * af_cudnn_stage_in and of af_cudnn_stage_out + release, and the thread's CPU. Host code
 * only (no GPU): a case's run, repeats and probes each stage once.
 * Usage: bench_cudnn_stage [runs]   (default 50 per case and mode) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cudnn/cudnn_bucket.h"
#include "util/clock.h"

static const char *const cases[] = {
    "dtype = bf16\nbatch = 1\nheads_q = 4\nheads_kv = 2\nhead_dim = 64\nseqlen_q = 300\nseqlen_kv = 500\n"
    "backward = yes\nmask = causal\n",
    "dtype = bf16\nbatch = 2\nheads_q = 8\nheads_kv = 4\nhead_dim = 128\nseqlen_q = 700\nseqlen_kv = 650\n"
    "backward = yes\nmask = causal\n",
    "dtype = fp16\nbatch = 2\nheads_q = 8\nheads_kv = 8\nhead_dim = 128\nseqlen_q = 1500\nseqlen_kv = 1500\n"
    "backward = yes\nlayout = bhsd\ngap_h = 4\ngap_s = 2\ngap_b = 9\n",
};

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 50;
    if (runs < 1) runs = 1;
    printf("%-44s %9s | %22s | %22s | %s\n", "case (padded)", "MB", "fresh: in / out ms, cpu", "pool: in / out ms, cpu",
           "cpu ratio");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        af_case c, p;
        af_error e;
        char why[256];
        if (af_case_parse(cases[k], "bench", &c, &e) || !af_cudnn_bucket_case(&c, &p)) return 1;
        af_tensors t, tp;
        if (af_tensors_alloc(&t, &c, why, sizeof why)) return 1;
        double in[2], out[2], cpu[2];
        size_t bytes = 0;
        for (int mode = 0; mode < 2; mode++) {
            af_cudnn_stage_pool pool;
            memset(&pool, 0, sizeof pool);
            af_cudnn_stage_pool *pp = mode ? &pool : NULL;
            double t_in = 0, t_out = 0, cpu0 = af_clock_thread_cpu();
            for (int r = 0; r < runs; r++) {
                double a = af_clock_mono();
                if (af_cudnn_stage_in(&c, &t, &p, &tp, pp, why, sizeof why)) return 1;
                double b = af_clock_mono();
                bytes = 0;
                for (int i = 0; i < AF_BUF_COUNT; i++) bytes += tp.bytes[i];
                af_run_info info;
                memset(&info, 0, sizeof info);
                af_cudnn_stage_out(&c, &t, &tp, pp, &info);
                af_cudnn_stage_release(&tp, pp);
                t_in += b - a;
                t_out += af_clock_mono() - b;
            }
            in[mode] = 1e3 * t_in / runs;
            out[mode] = 1e3 * t_out / runs;
            cpu[mode] = 1e3 * (af_clock_thread_cpu() - cpu0) / runs;
            af_cudnn_stage_pool_free(&pool);
        }
        char name[64];
        snprintf(name, sizeof name, "b%d h%d d%d s%dx%d -> %dx%d%s", c.batch, c.heads_q, c.head_dim_qk, c.seqlen_q,
                 c.seqlen_kv, p.seqlen_q, p.seqlen_kv, c.gap_h ? " gaps" : "");
        printf("%-44s %9.1f | %6.2f / %6.2f, %6.2f | %6.2f / %6.2f, %6.2f | %.2fx\n", name, bytes / 1e6, in[0], out[0],
               cpu[0], in[1], out[1], cpu[1], cpu[0] / cpu[1]);
        af_tensors_free(&t);
    }
    return 0;
}
