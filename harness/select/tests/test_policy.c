/* test_policy.c — policy files: parsing, errors with file:line: key, the choice and the
 * reason given for every backend not chosen, command-selector answers. */
#include <stdio.h>
#include <string.h>

#include "model/case.h"
#include "select/choose.h"
#include "select/policy.h"
#include "select/selector.h"
#include "util/check.h"

static void expect_error(const char *text, int line, const char *field, const char *words) {
    af_policy p;
    af_error e;
    memset(&e, 0, sizeof e);
    CHECK_MSG(af_policy_parse(text, "t.policy", &p, &e) == -1, "accepted: %s", text);
    char msg[1024];
    af_error_format(&e, msg, sizeof msg);
    CHECK_MSG(e.line == line, "line %d, want %d: %s", e.line, line, msg);
    CHECK_MSG(!strcmp(e.field, field), "field '%s', want '%s': %s", e.field, field, msg);
    CHECK_MSG(strstr(msg, words) != NULL, "message lacks '%s': %s", words, msg);
    CHECK_MSG(strstr(msg, "t.policy:") == msg, "message does not start with the file: %s", msg);
}

static af_case make_case(const char *text) {
    af_case c;
    af_error e;
    CHECK_MSG(af_case_parse(text, "t.case", &c, &e) == 0, "case: %s", e.message);
    return c;
}

static const char *policy_text = "# two backends\n"
                                 "backend = fast   # bf16 causal only\n"
                                 "dtypes = bf16\n"
                                 "masks = causal\n"
                                 "head_dim_qk = 16..128\n"
                                 "head_dim_v = 16..128\n"
                                 "head_dim_multiple = 16\n"
                                 "engine_pin = eng3\n"
                                 "\n"
                                 "backend = gpuonly\n"
                                 "arch = sm90\n"
                                 "library = cudnn 9.14..9.19\n"
                                 "backend = cpu\n"
                                 "cp = none\n";

int main(void) {
    af_policy p;
    af_error e;
    CHECK(af_policy_parse(policy_text, "t.policy", &p, &e) == 0);
    CHECK(p.n == 3);
    CHECK(!strcmp(p.entries[0].backend, "fast") && p.entries[0].line == 2);
    CHECK(p.entries[0].dtypes == (1u << AF_DT_BF16));
    CHECK(p.entries[0].head_dim_qk.lo == 16 && p.entries[0].head_dim_qk.hi == 128);
    CHECK(!strcmp(p.entries[0].engine_pin, "eng3"));
    CHECK(p.entries[1].arch_lo == 90 && p.entries[1].arch_hi == 90);
    CHECK(p.entries[1].lib_lo == 91400 && p.entries[1].lib_hi == 91900);
    CHECK(af_version_parse("9.14.2") == 91402 && af_version_parse("9.x") == -1);

    af_select_facts f;
    af_select_facts_unknown(&f);
    af_choice ch;
    /* causal bf16 d64: the first entry, its pinned engine; the others say why not */
    af_case c = make_case("dtype = bf16\nmask = causal\nhead_dim = 64\n");
    af_policy_choose(&p, &c, &f, &ch);
    CHECK(ch.served && ch.chosen == 0 && !strcmp(ch.backend, "fast") && !strcmp(ch.engine, "eng3"));
    CHECK(ch.n_reasons == 2);
    CHECK_MSG(strstr(ch.reasons[0].reason, "arch is unknown") != NULL, "%s", ch.reasons[0].reason);
    CHECK_MSG(ch.reasons[1].claims && strstr(ch.reasons[1].reason, "lower priority than fast (line 2)"), "%s",
              ch.reasons[1].reason);
    /* head dim 72 is not a multiple of 16: fast declines, gpuonly needs a GPU, cpu serves */
    c = make_case("dtype = bf16\nmask = causal\nhead_dim = 72\n");
    af_policy_choose(&p, &c, &f, &ch);
    CHECK(ch.served && !strcmp(ch.backend, "cpu") && ch.engine[0] == 0);
    CHECK_MSG(strstr(ch.reasons[0].reason, "not multiples of 16") != NULL, "%s", ch.reasons[0].reason);
    CHECK_MSG(strstr(ch.reasons[1].reason, "arch is unknown here") != NULL, "%s", ch.reasons[1].reason);
    /* with an sm90 and cuDNN 9.19.0 the GPU entry serves; cuDNN 9.20 is outside */
    f.sm = 90;
    snprintf(f.library, sizeof f.library, "cudnn");
    f.library_version = 91900;
    af_policy_choose(&p, &c, &f, &ch);
    CHECK(ch.served && !strcmp(ch.backend, "gpuonly"));
    f.library_version = 92000;
    af_policy_choose(&p, &c, &f, &ch);
    CHECK(!strcmp(ch.backend, "cpu"));
    CHECK_MSG(strstr(ch.reasons[1].reason, "found 9.20.0") != NULL, "%s", ch.reasons[1].reason);
    /* no backend: every entry's reason */
    af_select_facts_unknown(&f);
    c = make_case("dtype = fp16\ncp = 2 p2p\nseqlen = 64\n");
    af_policy_choose(&p, &c, &f, &ch);
    CHECK(!ch.served && ch.chosen == -1 && ch.n_reasons == 3);
    CHECK_MSG(strstr(ch.reasons[0].reason, "dtype fp16 not claimed") != NULL, "%s", ch.reasons[0].reason);
    CHECK_MSG(strstr(ch.reasons[2].reason, "cp 2 p2p not claimed") != NULL, "%s", ch.reasons[2].reason);
    char printed[2048];
    FILE *mem = fmemopen(printed, sizeof printed, "w");
    af_choice_print(&ch, "t.policy", mem);
    fclose(mem);
    CHECK_MSG(strstr(printed, "chosen: none (t.policy)\n  not fast (t.policy:2): dtype fp16") == printed, "%s",
              printed);

    /* every error path names file:line and the key */
    expect_error("dtypes = fp16\n", 1, "dtypes", "before the first 'backend = NAME'");
    expect_error("backend = a\ndtypes = fp16,fp32\n", 2, "dtypes", "'fp32' is not one of fp16 bf16");
    expect_error("backend = a\nhead_dim_qk = 9..8\n", 2, "head_dim_qk", "not a range");
    expect_error("backend = a\nbackward = maybe\n", 2, "backward", "not yes or no");
    expect_error("backend = a\nwindows = some\n", 2, "windows", "not no, left or yes");
    expect_error("backend = a\narch = hopper\n", 2, "arch", "not any, smNN");
    expect_error("backend = a\nlibrary = cudnn\n", 2, "library", "NAME VERSION");
    expect_error("backend = a\nlibrary = cudnn 9.x\n", 2, "library", "version range");
    expect_error("backend = a\nmasks = causal\nmasks = none\n", 3, "masks",
                 "repeated in this entry (first set on line 2)");
    expect_error("backend = a\ncolour = red\n", 2, "colour", "unknown key");
    expect_error("backend = a\nnonsense\n", 2, "line", "expected 'key = value'");
    expect_error("backend = a\ndtypes =\n", 2, "dtypes", "missing value");
    expect_error("backend = a b\n", 1, "backend", "not a backend name");
    expect_error("# nothing\n", 0, "backend", "no 'backend = NAME' entry");
    expect_error("backend = a\nengine_pin = x,y\n", 2, "engine_pin", "not an engine name");
    CHECK(af_policy_load("harness/select/tests/no-such.policy", &p, &e) == -1 && e.line == 0 &&
          !strcmp(e.field, "file"));

    /* the shipped default policy parses; on this CPU machine cudnn declines (arch unknown)
     * and cpu serves; mxfp8 backward has no backend */
    CHECK_MSG(af_policy_load("policies/default.policy", &p, &e) == 0, "%s:%d: %s: %s", e.file, e.line, e.field,
              e.message);
    c = make_case("dtype = bf16\nmask = causal\nbackward = yes\n");
    af_policy_choose(&p, &c, &f, &ch);
    CHECK(ch.served && !strcmp(ch.backend, "cpu"));
    CHECK_MSG(strstr(ch.reasons[0].reason, "arch is unknown") != NULL, "%s", ch.reasons[0].reason);
    c = make_case("dtype = mxfp8\nbackward = yes\nseqlen = 64\nhead_dim = 64\n");
    af_policy_choose(&p, &c, &f, &ch);
    CHECK(!ch.served);

    /* a command selector's answers */
    CHECK(af_selector_parse_answer("flash_ref", &ch, printed, sizeof printed) == 0 && ch.served &&
          !strcmp(ch.backend, "flash_ref"));
    CHECK(af_selector_parse_answer("none: head dim 512 unsupported", &ch, printed, sizeof printed) == 0 && !ch.served &&
          !strcmp(ch.reasons[0].reason, "head dim 512 unsupported"));
    CHECK(af_selector_parse_answer("none:", &ch, printed, sizeof printed) == -1);
    CHECK(af_selector_parse_answer("two words", &ch, printed, sizeof printed) == -1);
    CHECK(af_selector_parse_answer("none", &ch, printed, sizeof printed) == -1);
    CHECK(af_selector_parse_answer("", &ch, printed, sizeof printed) == -1);
    /* the per-head packings are words of their own: an entry that lists kv claims no kv_h */
    {
        af_policy pk;
        CHECK(af_policy_parse("backend = blocked\npackings = separate,kv\nbackend = perhead\npackings = kv_h,qkv_h\n",
                              "t.policy", &pk, &e) == 0);
        CHECK(pk.entries[1].packings == ((1u << AF_PACK_KV_H) | (1u << AF_PACK_QKV_H)));
        af_select_facts_unknown(&f);
        c = make_case("packing = kv_h\n");
        af_policy_choose(&pk, &c, &f, &ch);
        CHECK(ch.served && !strcmp(ch.backend, "perhead"));
        CHECK_MSG(strstr(ch.reasons[0].reason, "packing kv_h not claimed") != NULL, "%s", ch.reasons[0].reason);
    }
    CHECK_DONE("test_policy");
}
