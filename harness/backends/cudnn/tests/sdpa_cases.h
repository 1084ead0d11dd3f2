/* sdpa_cases.h — the cudnn backend's GPU test cases as case text: masks, windows, GQA / MQA,
 * d_qk != d_v, layouts, packing, padding, THD and paged KV (test_cudnn_sdpa runs each on
 * every engine; test_cudnn_ahead runs some with and without the builds ahead). */
#ifndef ATTNFUZZ_CUDNN_TESTS_SDPA_CASES_H
#define ATTNFUZZ_CUDNN_TESTS_SDPA_CASES_H

static const char *const cudnn_sdpa_cases[] = {
    "dtype = fp16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 64\nseqlen_kv = 96\nhead_dim_qk = 64\n"
    "head_dim_v = 64\nmask = causal\nbackward = yes\nseed = 1\n",
    "dtype = bf16\nbatch = 1\nheads_q = 4\nheads_kv = 4\nseqlen_q = 100\nseqlen_kv = 160\nhead_dim_qk = 64\n"
    "head_dim_v = 64\nmask = causal\nalign = bottom_right\nwindow = 20,0\nbackward = yes\nseed = 2\n",
    "dtype = bf16\nbatch = 2\nheads_q = 8\nheads_kv = 1\nseqlen_q = 128\nseqlen_kv = 128\nhead_dim_qk = 128\n"
    "head_dim_v = 64\nlayout = bhsd\nbackward = yes\nseed = 3\n",
    "dtype = fp16\nbatch = 2\nheads_q = 2\nheads_kv = 2\nseqlen_q = 80\nseqlen_kv = 80\nhead_dim_qk = 64\n"
    "head_dim_v = 64\nlayout = sbhd\npacking = qkv\nmask = causal\nbackward = yes\nseed = 4\n",
    "dtype = fp16\nbatch = 3\nheads_q = 4\nheads_kv = 2\nseqlen_q = 64\nseqlen_kv = 96\nseqlens_q = 10,64,33\n"
    "seqlens_kv = 50,96,7\nhead_dim_qk = 64\nhead_dim_v = 64\nmask = padding\nbackward = yes\nseed = 5\n",
    "dtype = bf16\nbatch = 3\nheads_q = 4\nheads_kv = 4\nseqlen_q = 64\nseqlen_kv = 64\nseqlens_q = 17,64,40\n"
    "seqlens_kv = 17,64,40\nhead_dim_qk = 64\nhead_dim_v = 64\nlayout = thd\nthd_gap = 3\nmask = padding_causal\n"
    "backward = yes\nseed = 6\n",
    "dtype = fp16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 32\nseqlen_kv = 192\nseqlens_q = 32,5\n"
    "seqlens_kv = 192,77\nhead_dim_qk = 64\nhead_dim_v = 64\npage_size = 32\nmask = padding\nseed = 7\n",
    "dtype = bf16\nbatch = 1\nheads_q = 2\nheads_kv = 2\nseqlen_q = 200\nseqlen_kv = 333\nhead_dim_qk = 64\n"
    "head_dim_v = 64\nwindow = 30,10\nbackward = yes\nseed = 8\n",
    /* ragged queries over paged K/V (ragged offsets on Q, O, Stats; page tables on K, V) */
    "dtype = bf16\nbatch = 3\nheads_q = 8\nheads_kv = 2\nseqlen_q = 40\nseqlen_kv = 150\nseqlens_q = 40,7,19\n"
    "seqlens_kv = 150,33,64\nhead_dim_qk = 64\nhead_dim_v = 64\nlayout = thd\nthd_gap = 3\npage_size = 16\n"
    "mask = causal\nalign = bottom_right\nseed = 9\n",
};
#define CUDNN_SDPA_CASES (int)(sizeof cudnn_sdpa_cases / sizeof cudnn_sdpa_cases[0])

#endif
