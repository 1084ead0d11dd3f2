/* select/policy.h — backend selection rules as data: a policy file lists backends in
 * priority order, each with the envelope of cases it claims to serve.
 *
 * Text (the case conventions of model/kv_text.h: `key = value`, `#` comments, errors name
 * file:line and the key). `backend = NAME` opens an entry; the keys after it, up to the
 * next `backend`, describe that entry. A key left out claims everything along its axis
 * (an entry with only `backend = cpu` claims every case). One backend may have several
 * entries (e.g. cudnn's fp16/bf16 envelope, then a narrower fp8 one); the first entry
 * whose envelope holds the case is chosen.
 *
 *   backend = NAME                  cpu | cudnn | planted:BUG | flash_ref | plugin:PATH ...
 *   dtypes = fp16,bf16              of fp16 bf16 fp8_e4m3 mxfp8
 *   head_dim_qk = 8..256            a range LO..HI or one value
 *   head_dim_v = 8..256
 *   head_dim_multiple = 8           both head dims a multiple of it
 *   equal_head_dims = yes           yes: head_dim_qk == head_dim_v required
 *   masks = none,causal             of none causal padding padding_causal
 *   aligns = top_left,bottom_right  diagonal alignment (matters with causal or a window)
 *   windows = no | left | yes       no: none; left: right side unbounded or 0; yes: any
 *   layouts = bshd,sbhd,bhsd,thd,shbd,hbsd,hsbd
 *   packings = separate,kv,qkv,kv_h,qkv_h   (an entry that lists packings claims those only)
 *   gqa = yes                       heads_q != heads_kv allowed
 *   backward = yes
 *   paged = yes                     paged KV (page_size > 0)
 *   features = yes | no | LIST      LIST of softcap sinks bias alibi log2_stats dlse
 *                                   fp8_headroom (blanks or commas; select/features.h):
 *                                   the case features the entry serves
 *   seqlen_q = 1..65536, seqlen_kv = 1..65536
 *   cp = none,p2p,all_gather,a2a,a2a+p2p    none = cp 1
 *   cp_window = yes                 a window together with cp > 1
 *   deterministic = yes             the entry claims bitwise-deterministic runs (a
 *                                   nondeterministic finding is then a claim mismatch)
 *   arch = sm90 | sm80..sm90        GPU architecture the entry needs (matched against
 *                                   af_select_facts: unknown on a machine without GPU)
 *   library = cudnn 9.14..9.19      library and version range (MAJOR.MINOR[.PATCH])
 *   engine_pin = NAME               the engine that must run (a different one is a
 *                                   claim mismatch: the silent-fallback class)
 *   engine_bar = NAME,NAME          engines that must not run
 */
#ifndef ATTNFUZZ_SELECT_POLICY_H
#define ATTNFUZZ_SELECT_POLICY_H

#include <stdbool.h>

#include "model/case.h"

#define AF_POLICY_MAX_ENTRIES 32
#define AF_POLICY_MAX_BARRED  8

typedef struct {
    int lo, hi; /* inclusive */
} af_int_range;

typedef enum { AF_WINDOWS_NONE = 0, AF_WINDOWS_LEFT, AF_WINDOWS_ANY } af_policy_windows;

/* Mask classes of af_mask_text: bit (1 << AF_PMASK_*). */
enum { AF_PMASK_NONE = 0, AF_PMASK_CAUSAL, AF_PMASK_PADDING, AF_PMASK_PADDING_CAUSAL, AF_PMASK_COUNT };

typedef struct {
    char backend[AF_NAME_MAX];
    int line;                                                    /* of its `backend =` line */
    unsigned dtypes, masks, aligns, layouts, packings, cp_comms; /* bit sets over the enums */
    af_int_range head_dim_qk, head_dim_v, seqlen_q, seqlen_kv;
    int head_dim_multiple; /* 1 = any */
    bool equal_head_dims;
    af_policy_windows windows;
    bool gqa, backward, paged, cp_window;
    unsigned features; /* AF_PFEAT_* set claimed (select/features.h); default all */
    bool deterministic;
    int arch_lo, arch_hi;         /* SM numbers (90 = sm90); 0 = any arch, also none */
    char library[32];             /* "" = no library requirement */
    int lib_lo, lib_hi;           /* versions as MAJOR*10000 + MINOR*100 + PATCH */
    char engine_pin[AF_NAME_MAX]; /* "" = none */
    int n_barred;
    char engine_bar[AF_POLICY_MAX_BARRED][AF_NAME_MAX];
} af_policy_entry;

typedef struct {
    char name[256]; /* the file it came from */
    int n;
    af_policy_entry entries[AF_POLICY_MAX_ENTRIES];
} af_policy;

/* Parse policy text; name is used in messages. 0, or -1 with *err (file:line: key). */
int af_policy_parse(const char *text, const char *name, af_policy *p, af_error *err);
/* Read and parse a policy file. 0, -1 with *err (a missing or unreadable file has
 * line 0 and field "file"). */
int af_policy_load(const char *path, af_policy *p, af_error *err);
/* An entry that claims everything (backend name given). */
void af_policy_entry_defaults(af_policy_entry *e, const char *backend);
/* "9.14.0" -> 91400; -1 when malformed. */
int af_version_parse(const char *s);

#endif
