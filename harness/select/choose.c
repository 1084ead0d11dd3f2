/* select/choose.c — matching a case against policy entries (choose.h). */
#include "select/choose.h"

#include <stdio.h>
#include <string.h>

#include "select/features.h"

void af_select_facts_unknown(af_select_facts *f) { memset(f, 0, sizeof *f); }

static int mask_class(const af_case *c) {
    const char *m = af_mask_text(c);
    if (!strcmp(m, "causal")) return AF_PMASK_CAUSAL;
    if (!strcmp(m, "padding")) return AF_PMASK_PADDING;
    if (!strcmp(m, "padding_causal")) return AF_PMASK_PADDING_CAUSAL;
    return AF_PMASK_NONE;
}

static bool in_range(int v, af_int_range r) { return v >= r.lo && v <= r.hi; }

static void range_text(af_int_range r, char *buf, size_t cap) {
    if (r.lo == r.hi)
        snprintf(buf, cap, "%d", r.lo);
    else
        snprintf(buf, cap, "%d..%d", r.lo, r.hi);
}

static void version_text(int v, char *buf, size_t cap) {
    snprintf(buf, cap, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
}

int af_policy_entry_claims(const af_policy_entry *e, const af_case *c, const af_select_facts *f, char *why,
                           size_t cap) {
    char r[64];
    bool windowed = c->window_left >= 0 || c->window_right >= 0;
    if (!(e->dtypes & (1u << c->dtype))) {
        snprintf(why, cap, "dtype %s not claimed", af_dtype_name(c->dtype));
        return 0;
    }
    if (!in_range(c->head_dim_qk, e->head_dim_qk)) {
        range_text(e->head_dim_qk, r, sizeof r);
        snprintf(why, cap, "head_dim_qk %d outside the claimed %s", c->head_dim_qk, r);
        return 0;
    }
    if (!in_range(c->head_dim_v, e->head_dim_v)) {
        range_text(e->head_dim_v, r, sizeof r);
        snprintf(why, cap, "head_dim_v %d outside the claimed %s", c->head_dim_v, r);
        return 0;
    }
    if (c->head_dim_qk % e->head_dim_multiple || c->head_dim_v % e->head_dim_multiple) {
        snprintf(why, cap, "head dims %d, %d: not multiples of %d", c->head_dim_qk, c->head_dim_v,
                 e->head_dim_multiple);
        return 0;
    }
    if (e->equal_head_dims && c->head_dim_qk != c->head_dim_v) {
        snprintf(why, cap, "head_dim_qk %d != head_dim_v %d (claims equal head dims only)", c->head_dim_qk,
                 c->head_dim_v);
        return 0;
    }
    if (!in_range(c->seqlen_q, e->seqlen_q)) {
        range_text(e->seqlen_q, r, sizeof r);
        snprintf(why, cap, "seqlen_q %d outside the claimed %s", c->seqlen_q, r);
        return 0;
    }
    if (!in_range(c->seqlen_kv, e->seqlen_kv)) {
        range_text(e->seqlen_kv, r, sizeof r);
        snprintf(why, cap, "seqlen_kv %d outside the claimed %s", c->seqlen_kv, r);
        return 0;
    }
    if (!(e->masks & (1u << mask_class(c)))) {
        snprintf(why, cap, "mask %s not claimed", af_mask_text(c));
        return 0;
    }
    if ((c->mask == AF_MASK_CAUSAL || windowed) && !(e->aligns & (1u << c->align))) {
        snprintf(why, cap, "alignment %s not claimed", c->align == AF_ALIGN_BOTTOM_RIGHT ? "bottom_right" : "top_left");
        return 0;
    }
    if (windowed && e->windows == AF_WINDOWS_NONE) {
        snprintf(why, cap, "window %d,%d: claims no windows", c->window_left, c->window_right);
        return 0;
    }
    if (windowed && e->windows == AF_WINDOWS_LEFT && c->window_right > 0) {
        snprintf(why, cap, "window %d,%d: claims left windows only (right -1 or 0)", c->window_left, c->window_right);
        return 0;
    }
    if (!(e->layouts & (1u << c->layout))) {
        snprintf(why, cap, "layout %s not claimed", af_layout_name(c->layout));
        return 0;
    }
    if (!(e->packings & (1u << c->packing))) {
        snprintf(why, cap, "packing %s not claimed", af_packing_name(c->packing));
        return 0;
    }
    if (!e->gqa && c->heads_q != c->heads_kv) {
        snprintf(why, cap, "GQA (heads %d/%d) not claimed", c->heads_q, c->heads_kv);
        return 0;
    }
    if (!e->backward && c->backward) {
        snprintf(why, cap, "backward not claimed");
        return 0;
    }
    if (!e->paged && c->page_size > 0) {
        snprintf(why, cap, "paged KV (page_size %d) not claimed", c->page_size);
        return 0;
    }
    unsigned unclaimed_features = af_policy_case_features(c) & ~e->features;
    if (unclaimed_features) {
        char names[128], claimed[128];
        af_policy_features_text(unclaimed_features, names, sizeof names);
        af_policy_features_text(e->features, claimed, sizeof claimed);
        snprintf(why, cap, "feature %s not claimed (claims: %s)", names, claimed[0] ? claimed : "none");
        return 0;
    }
    int cp_bit = c->cp_size > 1 ? (int)c->cp_comm : 0; /* af_cp_comm: AF_CP_NONE = 0 */
    if (!(e->cp_comms & (1u << cp_bit))) {
        if (c->cp_size > 1)
            snprintf(why, cap, "cp %d %s not claimed", c->cp_size, af_cp_comm_name(c->cp_comm));
        else
            snprintf(why, cap, "cp 1 (no context parallelism) not claimed");
        return 0;
    }
    if (c->cp_size > 1 && windowed && !e->cp_window) {
        snprintf(why, cap, "a window with cp %d not claimed", c->cp_size);
        return 0;
    }
    if (e->arch_lo) {
        if (!f || !f->sm) {
            snprintf(why, cap, "needs GPU arch sm%d..sm%d; the arch is unknown here (no GPU)", e->arch_lo, e->arch_hi);
            return 0;
        }
        if (f->sm < e->arch_lo || f->sm > e->arch_hi) {
            snprintf(why, cap, "needs GPU arch sm%d..sm%d; this GPU is sm%d", e->arch_lo, e->arch_hi, f->sm);
            return 0;
        }
    }
    if (e->library[0]) {
        char lo[16], hi[16];
        version_text(e->lib_lo, lo, sizeof lo);
        version_text(e->lib_hi, hi, sizeof hi);
        if (!f || strcmp(f->library, e->library) || !f->library_version) {
            snprintf(why, cap, "needs %s %s..%s; its version is unknown here", e->library, lo, hi);
            return 0;
        }
        if (f->library_version < e->lib_lo || f->library_version > e->lib_hi) {
            char have[16];
            version_text(f->library_version, have, sizeof have);
            snprintf(why, cap, "needs %s %s..%s; found %s", e->library, lo, hi, have);
            return 0;
        }
    }
    return 1;
}

void af_policy_choose(const af_policy *p, const af_case *c, const af_select_facts *f, af_choice *out) {
    memset(out, 0, sizeof *out);
    out->chosen = -1;
    for (int i = 0; i < p->n; i++) {
        const af_policy_entry *e = &p->entries[i];
        char why[320];
        int claims = af_policy_entry_claims(e, c, f, why, sizeof why);
        if (out->chosen < 0 && claims) {
            out->chosen = i;
            out->served = true;
            out->entry = e;
            snprintf(out->backend, sizeof out->backend, "%s", e->backend);
            snprintf(out->engine, sizeof out->engine, "%s", e->engine_pin);
            continue;
        }
        if (claims)
            snprintf(why, sizeof why, "also claims it; lower priority than %s (line %d)", out->backend,
                     out->entry->line);
        af_choice_reason *r = &out->reasons[out->n_reasons++];
        r->claims = claims;
        snprintf(r->backend, sizeof r->backend, "%s", e->backend);
        r->line = e->line;
        snprintf(r->reason, sizeof r->reason, "%s", why);
    }
}

void af_choice_print(const af_choice *ch, const char *label, FILE *out) {
    if (ch->served) {
        fprintf(out, "chosen: %s", ch->backend);
        if (ch->engine[0]) fprintf(out, " engine %s", ch->engine);
        if (ch->entry)
            fprintf(out, " (%s:%d)\n", label, ch->entry->line);
        else
            fprintf(out, " (%s)\n", label);
    } else
        fprintf(out, "chosen: none (%s)\n", label);
    for (int i = 0; i < ch->n_reasons; i++) {
        const af_choice_reason *r = &ch->reasons[i];
        if (r->line)
            fprintf(out, "  not %s (%s:%d): %s\n", r->backend, label, r->line, r->reason);
        else
            fprintf(out, "  not %s: %s\n", r->backend, r->reason);
    }
}
