/* test_case.c — the .case format: parsing, canonical printing, every error path. */
#include <string.h>

#include "model/case.h"
#include "model/case_fields.h"
#include "util/check.h"

static int parse(const char *text, af_case *c, af_error *e) { return af_case_parse(text, "t.case", c, e); }

/* Expect a parse error on `line` naming `field` with `needle` in the message. */
static void expect_error(const char *text, int line, const char *field, const char *needle) {
    af_case c;
    af_error e;
    memset(&e, 0, sizeof e);
    int rc = parse(text, &c, &e);
    CHECK_MSG(rc == -1, "expected an error for:\n%s", text);
    CHECK_MSG(e.line == line, "line %d, expected %d (%s: %s)", e.line, line, e.field, e.message);
    CHECK_MSG(strcmp(e.field, field) == 0, "field '%s', expected '%s' (%s)", e.field, field, e.message);
    CHECK_MSG(strstr(e.message, needle) != NULL, "message '%s' lacks '%s'", e.message, needle);
    char buf[1024];
    af_error_format(&e, buf, sizeof buf);
    char prefix[64];
    if (line > 0)
        snprintf(prefix, sizeof prefix, "t.case:%d: %s: ", line, field);
    else
        snprintf(prefix, sizeof prefix, "t.case: %s: ", field);
    CHECK_MSG(strncmp(buf, prefix, strlen(prefix)) == 0, "formatted '%s'", buf);
}

static void roundtrip(const char *text) {
    af_case a, b;
    af_error e;
    CHECK_MSG(parse(text, &a, &e) == 0, "%s: %s", e.field, e.message);
    char p1[8192], p2[8192];
    af_case_print(&a, p1, sizeof p1);
    CHECK_MSG(parse(p1, &b, &e) == 0, "reparse: %s: %s\n%s", e.field, e.message, p1);
    af_case_print(&b, p2, sizeof p2);
    CHECK_MSG(strcmp(p1, p2) == 0, "print(parse(print)) differs:\n%s\n---\n%s", p1, p2);
    CHECK(af_case_equal(&a, &b));
    CHECK(memcmp(&a.seed, &b.seed, sizeof a.seed) == 0);
}

/* heads_v: V's own head count (0 = heads_kv), printed only when it differs; the V and dV
 * shapes follow it; validation names the field. */
/* packing kv_h / qkv_h, layout_kv, layout_do: print and parse, and what needs what,
 * each error naming its field */
static void test_side_layouts(void) {
    roundtrip("packing = kv_h\nstride_gap = 2\nhead_dim = 32\n");
    {
        /* gap_h, gap_s, gap_b: printed only when set, after stride_gap; each its own error */
        roundtrip("gap_h = 3\ngap_s = 1\ngap_b = 4096\nlayout = bhsd\n");
        af_case g, g2;
        af_error e;
        CHECK(parse("gap_s = 5\n", &g, &e) == 0 && g.gap_s == 5 && g.gap_h == 0 && g.gap_b == 0);
        char out[8192];
        af_case_print(&g, out, sizeof out);
        CHECK_MSG(strstr(out, "stride_gap = 0\ngap_s = 5\n") && !strstr(out, "gap_h") && !strstr(out, "gap_b"), "%s",
                  out);
        CHECK(parse("gap_s = 6\n", &g2, &e) == 0 && !af_case_equal(&g, &g2));
        expect_error("gap_h = 4097\n", 1, "gap_h", "[0, 4096]");
        expect_error("gap_b = -1\n", 1, "gap_b", "[0, 4096]");
        expect_error("dtype = fp8_e4m3\ngap_s = 2\n", 2, "gap_s", "fp8_e4m3 needs gap_s = 0");
        expect_error("layout = thd\nseqlens_q = 3\nseqlens_kv = 3\ngap_b = 2\n", 4, "gap_b", "needs a batch stride");
        roundtrip("layout = thd\nseqlens_q = 3\nseqlens_kv = 3\ngap_b = 2\npage_size = 4\n"); /* pages have one */
        roundtrip("layout = thd\nlayout_kv = bshd\nseqlens_q = 3\nseqlens_kv = 3\ngap_b = 2\ngap_h = 1\n");
        /* the other orders of b, s, h: separate packing only, each error naming the fields */
        roundtrip("layout = hbsd\nlayout_kv = shbd\nlayout_do = hsbd\nbackward = yes\n");
        roundtrip("layout = thd\nlayout_kv = hsbd\nseqlens_q = 3\nseqlens_kv = 3\n");
        CHECK(parse("layout = shbd\nlayout_kv = hbsd\n", &g, &e) == 0 && g.layout == AF_LAYOUT_SHBD &&
              af_case_layout_kv(&g) == AF_LAYOUT_HBSD && !strcmp(af_layout_name(g.layout), "shbd"));
        expect_error("layout = hsbd\npacking = kv\n", 2, "packing", "packing = kv needs layout and layout_kv bshd");
        expect_error("layout_kv = shbd\npacking = kv_h\n", 2, "packing", "no peer packs shbd");
        expect_error("layout = hsbd\nlayout_kv = hsbd\n", 2, "layout_kv", "is the layout itself");
        expect_error("layout = dbhs\n", 1, "layout", "dbhs");
    }
    roundtrip("packing = qkv_h\nlayout = thd\nseqlens_q = 3,4\nseqlens_kv = 3,4\nbatch = 2\n");
    roundtrip("layout = thd\nlayout_kv = bshd\nseqlens_q = 3\nseqlens_kv = 9\nseqlen_kv = 12\n");
    roundtrip("layout = sbhd\nlayout_do = bhsd\nlayout_kv = bshd\nbackward = yes\n");
    af_case c;
    af_error e;
    CHECK(parse("layout_kv = sbhd\n", &c, &e) == 0 && af_case_layout_kv(&c) == AF_LAYOUT_SBHD);
    CHECK(af_case_layout_do(&c) == AF_LAYOUT_BSHD);
    char out[8192];
    af_case_print(&c, out, sizeof out);
    CHECK(strstr(out, "layout_kv = sbhd\n") && !strstr(out, "layout_do"));
    expect_error("layout_kv = thd\n", 1, "layout_kv", "not one of");
    expect_error("layout = bhsd\npacking = kv_h\n", 2, "packing", "needs layout bshd, sbhd or thd");
    expect_error("packing = qkv_h\nheads_q = 2\n", 1, "packing", "qkv_h packing needs heads_q == heads_kv");
    expect_error("packing = kv_h\nhead_dim_v = 32\n", 1, "packing", "kv_h packing needs head_dim_qk == head_dim_v");
    expect_error("heads_q = 4\nheads_kv = 4\nheads_v = 2\npacking = kv_h\nhead_dim = 32\n", 4, "heads_v",
                 "needs packing = separate");
    expect_error("layout = sbhd\nlayout_kv = sbhd\n", 2, "layout_kv", "is the layout itself");
    expect_error("layout_kv = sbhd\npacking = qkv\n", 2, "layout_kv", "apart from Q");
    expect_error("layout_kv = bhsd\npacking = kv_h\n", 2, "layout_kv", "needs layout_kv bshd or sbhd");
    expect_error("layout_kv = sbhd\npage_size = 4\n", 2, "layout_kv", "pages have their own layout");
    expect_error("layout_do = sbhd\n", 1, "layout_do", "needs backward = yes");
    expect_error("layout = thd\nseqlens_q = 3\nseqlens_kv = 3\nlayout_do = bshd\nbackward = yes\n", 4, "layout_do",
                 "follows Q's tokens");
    expect_error("layout_do = bshd\nbackward = yes\n", 1, "layout_do", "is the layout itself");
}

static void test_heads_v(void) {
    af_case c;
    af_error e;
    char out[8192];
    CHECK(parse("heads_q = 4\nheads_kv = 1\nheads_v = 2\n", &c, &e) == 0);
    CHECK(c.heads_v == 2 && af_case_heads_v(&c) == 2);
    af_case_print(&c, out, sizeof out);
    CHECK_MSG(strstr(out, "heads_kv = 1\nheads_v = 2\n") != NULL, "printed:\n%s", out);
    roundtrip("heads_q = 6\nheads_kv = 3\nheads_v = 2\nbackward = yes\n");
    /* default and heads_v == heads_kv: not printed, V has K's heads */
    CHECK(parse("heads_q = 4\nheads_kv = 2\n", &c, &e) == 0);
    CHECK(c.heads_v == 0 && af_case_heads_v(&c) == 2);
    af_case_print(&c, out, sizeof out);
    CHECK(strstr(out, "heads_v") == NULL);
    CHECK(parse("heads_q = 4\nheads_kv = 2\nheads_v = 2\n", &c, &e) == 0);
    af_case_print(&c, out, sizeof out);
    CHECK(strstr(out, "heads_v") == NULL);
    /* errors name the field */
    expect_error("heads_q = 4\nheads_v = 3\n", 2, "heads_v", "heads_q = 4 is not a multiple of heads_v = 3");
    expect_error("heads_v = 257\n", 1, "heads_v", "not an integer in [0, 256]");
    expect_error("heads_v = -1\n", 1, "heads_v", "not an integer in [0, 256]");
    expect_error("heads_q = 4\nheads_kv = 4\nheads_v = 2\npacking = kv\nhead_dim = 32\n", 4, "heads_v",
                 "needs packing = separate");
    expect_error("heads_q = 4\nheads_kv = 4\nheads_v = 1\npacking = qkv\nseqlen = 8\nhead_dim = 32\n", 4, "heads_v",
                 "needs packing = separate");
}

/* page_layout = nhd | hnd, page_kv = split | joint: printed when set, parsed back, and
 * refused without pages naming the field. */
static void test_page_forms(void) {
    af_case c;
    af_error e;
    char out[8192];
    CHECK(parse("seqlen = 16\npage_size = 4\npage_layout = hnd\npage_kv = joint\n", &c, &e) == 0);
    CHECK(c.page_hnd && c.page_kv_joint);
    af_case_print(&c, out, sizeof out);
    CHECK_MSG(strstr(out, "page_layout = hnd\npage_kv = joint\n") != NULL, "printed:\n%s", out);
    roundtrip("seqlen = 16\npage_size = 4\npage_layout = hnd\n");
    roundtrip("seqlen = 16\npage_size = 5\npage_kv = joint\nheads_q = 4\nheads_kv = 2\n");
    CHECK(parse("seqlen = 16\npage_size = 4\npage_layout = nhd\npage_kv = split\n", &c, &e) == 0);
    af_case_print(&c, out, sizeof out);
    CHECK(!c.page_hnd && !c.page_kv_joint && !strstr(out, "page_layout") && !strstr(out, "page_kv"));
    expect_error("page_layout = hnd\n", 1, "page_layout", "page_layout = hnd needs page_size > 0");
    expect_error("seqlen = 8\npage_kv = joint\n", 2, "page_kv", "page_kv = joint needs page_size > 0");
    expect_error("page_layout = hdn\n", 1, "page_layout", "nhd");
    expect_error("page_kv = both\n", 1, "page_kv", "joint");
}

int main(void) {
    af_case c;
    af_error e;
    test_page_forms();
    test_heads_v();
    test_side_layouts();

    /* defaults */
    CHECK(parse("", &c, &e) == 0);
    CHECK(c.dtype == AF_DT_FP16 && c.batch == 1 && c.seqlen_q == 16 && c.head_dim_qk == 64);
    CHECK(c.window_left == -1 && c.window_right == -1 && !c.backward && c.cp_size == 1);
    CHECK(af_case_scale(&c) == (float)(1.0 / 8.0));

    /* a full case */
    const char *full = "# comment line\n"
                       "dtype = bf16\n"
                       "batch = 2   # trailing comment\n"
                       "heads_q = 8\nheads_kv = 2\n"
                       "seqlen_q = 200\nseqlen_kv = 333\n"
                       "seqlens_q = 3,200\nseqlens_kv = 0, 333\n"
                       "head_dim_qk = 72\nhead_dim_v = 104\n"
                       "layout = sbhd\nstride_gap = 8\n"
                       "mask = padding_causal_bottom_right\n"
                       "window = 64,0\n"
                       "scale = 0.125\n"
                       "backward = yes\n"
                       "seed = 0xfeed\n"
                       "data = normal:0.5 outlier_channels:2:30 zeros:0.1\n"
                       "backend = cpu\nengine = all\n";
    CHECK(parse(full, &c, &e) == 0);
    CHECK(c.dtype == AF_DT_BF16 && c.batch == 2 && c.heads_q == 8 && c.heads_kv == 2);
    CHECK(c.has_seqlens && c.seqlens_q[0] == 3 && c.seqlens_kv[0] == 0 && c.seqlens_kv[1] == 333);
    CHECK(c.mask == AF_MASK_CAUSAL && c.align == AF_ALIGN_BOTTOM_RIGHT);
    CHECK(c.window_left == 64 && c.window_right == 0);
    CHECK(c.has_scale && c.scale == 0.125f && c.backward && c.seed == 0xfeed);
    CHECK(c.n_data == 3 && c.data[1].kind == AF_DATA_OUTLIER_CHANNELS && c.data[1].p1 == 30);
    CHECK(af_case_len_q(&c, 0) == 3 && af_case_len_kv(&c, 1) == 333);
    CHECK(!strcmp(af_mask_text(&c), "padding_causal"));
    roundtrip(full);
    roundtrip("layout = thd\nbatch = 3\nseqlens_q = 0,1,16\nseqlens_kv = 5,1,0\nthd_gap = 3\nmask = causal\n");
    roundtrip("packing = qkv\nheads = 4\nseqlen = 64\nhead_dim = 32\n");
    roundtrip("page_size = 4\nseqlen_kv = 37\n");
    roundtrip("page_size = 4\nseqlen_kv = 37\npage_tail = nan\n");
    roundtrip("dtype = fp8_e4m3\ncp = 2 a2a+p2p\nseqlen = 64\n");
    roundtrip("dtype = mxfp8\ndata = uniform:2 sink:50 low_lse:0.25:40 block_range:12\n");
    roundtrip("scale = 0.3\n");
    roundtrip("data = normal:1 low_lse:1e-310:1\n"); /* a subnormal parameter prints and reads back */
    /* the same case written two ways prints the same bytes */
    {
        af_case a, b;
        CHECK(parse("mask = causal_bottom_right\nheads = 2\n", &a, &e) == 0);
        CHECK(parse("heads_kv = 2\nalign = bottom_right\nheads_q = 2\nmask = causal\n", &b, &e) == 0);
        CHECK(af_case_equal(&a, &b));
    }

    /* syntax errors */
    expect_error("dtype = fp16\nbogus = 3\n", 2, "bogus", "unknown key");
    expect_error("\n\nno equals sign\n", 3, "line", "expected 'key = value'");
    expect_error("batch =\n", 1, "batch", "missing value");
    expect_error(" = 3\n", 1, "line", "missing key");
    expect_error("batch = 2\nbatch = 3\n", 2, "batch", "repeated (first set on line 1)");
    expect_error("batch = two\n", 1, "batch", "not an integer");
    expect_error("batch = 0\n", 1, "batch", "not an integer in [1, 128]");
    expect_error("batch = 3x\n", 1, "batch", "not an integer");
    expect_error("dtype = fp32\n", 1, "dtype", "not one of");
    expect_error("layout = nhwc\n", 1, "layout", "not one of");
    expect_error("packing = all\n", 1, "packing", "not one of");
    expect_error("mask = sliding\n", 1, "mask", "not one of");
    expect_error("align = middle\n", 1, "align", "not one of");
    expect_error("window = 3\n", 1, "window", "left,right");
    expect_error("window = -2,0\n", 1, "window", "left,right");
    expect_error("scale = 0\n", 1, "scale", "non-zero");
    expect_error("scale = nan\n", 1, "scale", "finite");
    expect_error("backward = maybe\n", 1, "backward", "yes or no");
    expect_error("cp = 2\n", 1, "cp", "SIZE COMM");
    expect_error("cp = 2 ring\n", 1, "cp", "SIZE COMM");
    expect_error("seed = -1\n", 1, "seed", "unsigned");
    expect_error("data = gaussian:1\n", 1, "data", "unknown term");
    expect_error("data = : normal:1\n", 1, "data", "empty term"); /* a term of colons only (a libFuzzer find) */
    expect_error("data = normal\n", 1, "data", "takes 1 parameter");
    expect_error("data = normal:x\n", 1, "data", "bad number");
    expect_error("backend = a b\n", 1, "backend", "white space");
    expect_error("dtype = fp16\x01\n", 1, "line", "control character");
    expect_error("head_dim = 64\nhead_dim_v = 32\n", 1, "head_dim", "together with");
    expect_error("heads = 2\nheads_q = 4\n", 1, "heads", "together with");
    expect_error("seqlen = 2\nseqlen_kv = 4\n", 1, "seqlen", "together with");

    /* impossible combinations */
    expect_error("heads_q = 6\nheads_kv = 4\n", 2, "heads_kv", "not a multiple of heads_kv = 4");
    expect_error("batch = 2\nseqlens_q = 3\nseqlens_kv = 3,3\nmask = padding\n", 2, "seqlens_q",
                 "1 lengths for batch = 2");
    expect_error("seqlen_q = 8\nseqlens_q = 9\nseqlens_kv = 3\nmask = padding\n", 2, "seqlens_q",
                 "length 9 > seqlen_q = 8");
    expect_error("seqlens_q = 3\nseqlens_kv = 3\n", 0, "mask", "has no padding");
    expect_error("seqlens_q = 3\n", 1, "seqlens_q", "without seqlens_kv");
    expect_error("mask = padding\n", 1, "mask", "needs seqlens_q");
    expect_error("layout = thd\n", 1, "layout", "needs seqlens_q");
    expect_error("thd_gap = 2\n", 1, "thd_gap", "needs layout = thd");
    expect_error("packing = qkv\nheads_q = 2\n", 1, "packing", "heads_q == heads_kv");
    expect_error("packing = qkv\nseqlen_kv = 32\n", 1, "packing", "seqlen_q == seqlen_kv");
    expect_error("packing = kv\nhead_dim_v = 32\n", 1, "packing", "head_dim_qk == head_dim_v");
    roundtrip("page_size = 5\nseqlen_kv = 37\nbatch = 2\n"); /* any page size, not only powers of two */
    roundtrip("page_size = 1\nseqlen_kv = 65536\n");         /* 65536 pages in one sequence */
    roundtrip("batch = 128\npage_size = 48\nseqlen_kv = 100\n");
    expect_error("batch = 129\n", 1, "batch", "129");
    expect_error("page_size = -1\n", 1, "page_size", "-1");
    expect_error("page_size = 1\nseqlen_kv = 65537\n", 1, "page_size", "65537 pages");
    /* ragged queries over paged K/V (the serving layout): valid, prints and reads back;
     * still forward only and separate K/V */
    roundtrip("layout = thd\nbatch = 3\nseqlen_q = 4\nseqlen_kv = 37\nseqlens_q = 4,0,1\nseqlens_kv = 37,12,9\n"
              "thd_gap = 3\npage_size = 5\nmask = causal_bottom_right\n");
    expect_error("layout = thd\nseqlens_q = 3\nseqlens_kv = 9\nseqlen_kv = 9\npage_size = 4\nbackward = yes\n", 5,
                 "page_size", "forward only");
    expect_error("layout = thd\nseqlens_q = 3\nseqlens_kv = 3\npacking = kv\npage_size = 4\n", 5, "page_size",
                 "packing = separate");
    expect_error("page_size = 3\nbatch = 128\nseqlen_kv = 1537\n", 1, "page_size", "the page table holds");
    expect_error("page_size = 4\nbackward = yes\n", 1, "page_size", "forward only");
    expect_error("page_tail = nan\n", 1, "page_tail", "needs page_size");
    expect_error("page_size = 4\npage_tail = zero\n", 2, "page_tail", "finite or nan");
    expect_error("dtype = fp8_e4m3\npacking = kv\n", 2, "packing", "needs packing = separate");
    /* fp8_e5m2: parses, prints, holds headroom (per-tensor scales); the fp8 rules name it */
    roundtrip("dtype = fp8_e5m2\nbackward = yes\nfp8_headroom = 0,1,0,2,3\n");
    CHECK(parse("dtype = fp8_e5m2\n", &c, &e) == 0 && c.dtype == AF_DT_FP8_E5M2 && af_dtype_is_fp8_tensor(c.dtype));
    {
        char printed[4096];
        af_case_print(&c, printed, sizeof printed);
        CHECK_MSG(strstr(printed, "dtype = fp8_e5m2\n") != NULL, "%s", printed);
    }
    expect_error("dtype = fp8_e5m2\npacking = qkv\n", 2, "packing", "fp8_e5m2 needs packing = separate");
    expect_error("dtype = fp8_e5m2\nstride_gap = 4\n", 2, "stride_gap", "fp8_e5m2 needs stride_gap = 0");
    expect_error("dtype = fp8_e5m2\nsoftcap = 30\n", 2, "softcap", "dtype fp8_e5m2");
    expect_error("dtype = fp8_e5m3\n", 1, "dtype", "fp8_e5m3");
    /* outputs: printed only when not lse; fp16 / bf16 only, no cp; unknown names refused */
    roundtrip("outputs = max_sumexp\n");
    roundtrip("dtype = bf16\nmask = causal\noutputs = max_logit\n");
    CHECK(parse("outputs = max_logit\n", &c, &e) == 0 && c.outputs == AF_OUTPUTS_MAX_LOGIT &&
          af_case_field_printed(&c, AF_CF_OUTPUTS));
    CHECK(parse("outputs = lse\n", &c, &e) == 0 && !af_case_field_printed(&c, AF_CF_OUTPUTS));
    expect_error("dtype = fp8_e4m3\noutputs = max_sumexp\n", 2, "outputs", "fp16 and bf16 only");
    expect_error("heads = 2\ncp = 2 p2p\noutputs = max_logit\n", 3, "outputs", "context parallelism");
    expect_error("outputs = max\n", 1, "outputs", "max_sumexp");
    /* out_dtype: printed only when set, for per-tensor fp8 dtypes only, no o headroom */
    roundtrip("dtype = fp8_e4m3\nout_dtype = bf16\nbackward = yes\nfp8_headroom = 1,0,0,2,0\n");
    roundtrip("dtype = fp8_e5m2\nout_dtype = fp16\n");
    CHECK(parse("dtype = fp8_e4m3\nout_dtype = fp16\n", &c, &e) == 0 && c.out_dtype == AF_OUT_FP16);
    CHECK(af_case_field_printed(&c, AF_CF_OUT_DTYPE));
    CHECK(parse("dtype = fp8_e4m3\nout_dtype = same\n", &c, &e) == 0 && !af_case_field_printed(&c, AF_CF_OUT_DTYPE));
    expect_error("out_dtype = fp16\n", 1, "out_dtype", "needs fp8_e4m3 or fp8_e5m2");
    expect_error("dtype = mxfp8\nout_dtype = bf16\n", 2, "out_dtype", "needs fp8_e4m3 or fp8_e5m2");
    expect_error("dtype = fp8_e4m3\nout_dtype = fp32\n", 2, "out_dtype", "fp32");
    expect_error("dtype = fp8_e4m3\nout_dtype = bf16\nfp8_headroom = 0,0,0,0,1\n", 3, "fp8_headroom",
                 "O has no output scale");
    /* kv_dtype: printed only when set, fp16 / bf16 forward only, K and V apart from Q */
    roundtrip("kv_dtype = fp8_e4m3\nheads_q = 4\nheads_kv = 2\npage_size = 16\n");
    roundtrip("dtype = bf16\nkv_dtype = fp8_e5m2\npacking = kv\n");
    CHECK(parse("kv_dtype = fp8_e5m2\n", &c, &e) == 0 && c.kv_dtype == AF_KV_FP8_E5M2);
    CHECK(af_case_field_printed(&c, AF_CF_KV_DTYPE));
    CHECK(parse("kv_dtype = same\n", &c, &e) == 0 && !af_case_field_printed(&c, AF_CF_KV_DTYPE));
    expect_error("dtype = fp8_e4m3\nkv_dtype = fp8_e4m3\n", 2, "kv_dtype", "needs dtype fp16 or bf16");
    expect_error("dtype = mxfp8\nkv_dtype = fp8_e5m2\n", 2, "kv_dtype", "needs dtype fp16 or bf16");
    expect_error("kv_dtype = fp8_e4m3\nbackward = yes\n", 1, "kv_dtype", "forward only");
    expect_error("kv_dtype = fp8_e4m3\npacking = qkv\n", 1, "kv_dtype", "packing = separate or kv");
    expect_error("kv_dtype = int8\n", 1, "kv_dtype", "int8");
    /* descale: printed only when head, per-tensor fp8 dtypes forward only, heads_v == heads_kv */
    roundtrip("dtype = fp8_e4m3\ndescale = head\nbatch = 2\nheads_q = 4\nheads_kv = 2\nout_dtype = bf16\n");
    roundtrip("dtype = fp8_e5m2\ndescale = head\nfp8_headroom = 1,2,0,0,0\n");
    CHECK(parse("dtype = fp8_e4m3\ndescale = head\n", &c, &e) == 0 && c.descale_head);
    CHECK(af_case_field_printed(&c, AF_CF_DESCALE));
    CHECK(parse("dtype = fp8_e4m3\ndescale = tensor\n", &c, &e) == 0 && !af_case_field_printed(&c, AF_CF_DESCALE));
    expect_error("descale = head\n", 1, "descale", "needs dtype fp8_e4m3 or fp8_e5m2");
    expect_error("dtype = mxfp8\ndescale = head\n", 2, "descale", "needs dtype fp8_e4m3 or fp8_e5m2");
    expect_error("dtype = fp8_e4m3\ndescale = head\nbackward = yes\n", 2, "descale", "forward only");
    expect_error("dtype = fp8_e4m3\ndescale = head\nheads_q = 4\nheads_kv = 2\nheads_v = 4\n", 2, "descale",
                 "heads_v == heads_kv");
    expect_error("dtype = fp8_e4m3\ndescale = channel\n", 2, "descale", "channel");
    expect_error("cp = 4 p2p\nseqlen = 20\n", 1, "cp", "divisible by 2*cp = 8");
    expect_error("data = normal:-1\n", 1, "data", "out of range");
    expect_error("data = zeros:0.5\n", 1, "data", "first term must be a base");
    expect_error("data = normal:1 uniform:1\n", 1, "data", "base distribution");
    expect_error("data = normal:1 zeros:0.1 zeros:0.2\n", 1, "data", "appears twice");
    expect_error("data = normal:1 outlier_channels:100:3\nhead_dim = 64\n", 1, "data", "out of range");
    expect_error("mask = causal_bottom_right\nalign = top_left\n", 2, "align", "contradicts");
    /* a window that leaves no row any key: bottom-right causal with sq > skv and window right bound
       below the first diagonal */
    expect_error("seqlen_q = 4\nseqlen_kv = 8\nwindow = 0,0\nalign = bottom_right\nmask = padding_causal\nseqlens_q = "
                 "4\nseqlens_kv = 0\n",
                 3, "window", "no visible key");
    expect_error("batch = 64\nheads = 64\nseqlen = 65536\nhead_dim = 128\n", 1, "batch", "4e9 limit");
    /* gaps count: 64 sequences of 1 token with 4096 pad tokens each, 256 heads */
    {
        char big[2048] = "layout = thd\nbatch = 64\nheads_q = 256\nheads_kv = 1\nseqlen = 4\nhead_dim = 8\nthd_gap = "
                         "4096\nseqlens_q = 1";
        for (int i = 1; i < 64; i++) strcat(big, ",1");
        strcat(big, "\nseqlens_kv = 1");
        for (int i = 1; i < 64; i++) strcat(big, ",1");
        strcat(big, "\nstride_gap = 2048\n");
        expect_error(big, 2, "batch", "4e9 limit");
    }

    /* dropout = P SEED OFFSET: parsed, printed canonically, p = 0 not printed */
    roundtrip("dropout = 0.25 12345 18446744073709551615\nbackward = yes\n");
    CHECK(parse("dropout = 0.1   7\t9\n", &c, &e) == 0 && c.dropout_p == 0.1 && c.dropout_seed == 7 &&
          c.dropout_offset == 9 && af_case_has_features(&c));
    {
        char printed[8192];
        af_case_print(&c, printed, sizeof printed);
        CHECK_MSG(strstr(printed, "dropout = 0.1 7 9\n") != NULL, "canonical dropout line missing:\n%s", printed);
        CHECK(parse("dropout = 0 5 6\n", &c, &e) == 0 && c.dropout_p == 0.0 && !af_case_has_features(&c));
        af_case_print(&c, printed, sizeof printed);
        CHECK_MSG(!strstr(printed, "dropout"), "p = 0 printed a dropout line:\n%s", printed);
    }
    expect_error("dropout = 1 2 3\n", 1, "dropout", "P in [0, 1)");
    expect_error("seed = 1\ndropout = -0.1 2 3\n", 2, "dropout", "P in [0, 1)");
    expect_error("dropout = 0.5 2\n", 1, "dropout", "'P SEED OFFSET'");
    expect_error("dropout = 0.5 2 -3\n", 1, "dropout", "unsigned 64-bit");
    expect_error("dropout = 0.5 x 3\n", 1, "dropout", "unsigned 64-bit");
    expect_error("dropout = 0.5 1 2\ndtype = fp8_e4m3\n", 1, "dropout", "fp16 and bf16 only");
    expect_error("cp = 2 p2p\nseqlen = 64\ndropout = 0.5 1 2\n", 3, "dropout", "context parallelism");
    af_case_defaults(&c);
    c.dropout_p = 1.0;
    CHECK(af_case_validate(&c, &e) == -1 && !strcmp(e.field, "dropout") && strstr(e.message, "outside [0, 1)"));

    /* dropout_rng = attnfuzz | kernel: printed only for kernel, needs dropout, resets with it */
    roundtrip("dropout = 0.5 3 4\ndropout_rng = kernel\n");
    CHECK(parse("dropout = 0.5 3 4\ndropout_rng = kernel\n", &c, &e) == 0 && c.dropout_rng == AF_DROPOUT_RNG_KERNEL);
    {
        char printed[8192];
        af_case_print(&c, printed, sizeof printed);
        CHECK_MSG(strstr(printed, "dropout = 0.5 3 4\ndropout_rng = kernel\n") != NULL, "dropout_rng line:\n%s",
                  printed);
        af_case_field_reset(&c, AF_CF_DROPOUT); /* dropout off takes the kernel's stream with it */
        CHECK(c.dropout_p == 0.0 && c.dropout_rng == AF_DROPOUT_RNG_ATTNFUZZ && af_case_validate(&c, &e) == 0);
        CHECK(parse("dropout = 0.5 3 4\ndropout_rng = attnfuzz\n", &c, &e) == 0);
        af_case_print(&c, printed, sizeof printed);
        CHECK_MSG(!strstr(printed, "dropout_rng"), "attnfuzz's stream printed:\n%s", printed);
    }
    expect_error("seed = 2\ndropout_rng = kernel\n", 2, "dropout_rng", "needs dropout");
    expect_error("dropout = 0.5 3 4\ndropout_rng = philox\n", 2, "dropout_rng", "attnfuzz");

    /* validate() on a hand-built case has no line */
    af_case_defaults(&c);
    c.heads_q = 3;
    c.heads_kv = 2;
    CHECK(af_case_validate(&c, &e) == -1 && e.line == 0 && !strcmp(e.field, "heads_kv"));

    /* load from a file: a missing file names the file */
    CHECK(af_case_load("no/such/file.case", &c, &e) == -1 && strstr(e.message, "cannot open") &&
          !strcmp(e.file, "no/such/file.case"));

    /* printing into a short buffer reports the size needed */
    af_case_defaults(&c);
    char tiny[8];
    size_t need = af_case_print(&c, tiny, sizeof tiny);
    CHECK(need > sizeof tiny && strlen(tiny) == sizeof tiny - 1);
    CHECK_DONE("test_case");
}
