"""flashinfer_map: case -> FlashInfer call arguments, declines, LSE base, page tables
(pure Python; run by ci/tests/test_serving_targets.sh)."""
import json
import math
import os
import tempfile
import unittest

from attnfuzz_worker import Problem
from attnfuzz_worker.examples import flashinfer_map as fm


def problem(**over):
    f = {"dtype": "fp16", "batch": 1, "heads_q": 4, "heads_kv": 2, "seqlen_q": 8, "seqlen_kv": 8,
         "head_dim_qk": 128, "head_dim_v": 128, "seqlens_q": [8], "seqlens_kv": [8], "mask": "none",
         "align": "top_left", "window_left": -1, "window_right": -1, "scale": 0.088388, "backward": False,
         "padded": False, "ragged": False, "paged": False, "layout": "bshd", "packing": "separate", "cp_size": 1,
         "features": [], "case": ""}
    f.update(over)
    if "seqlens_q" not in over:
        f["seqlens_q"] = [f["seqlen_q"]] * f["batch"]
    if "seqlens_kv" not in over:
        f["seqlens_kv"] = [f["seqlen_kv"]] * f["batch"]
    return Problem(f)


class Mask(unittest.TestCase):
    def test_flashinfer_mask_is_bottom_right_with_inclusive_left_window(self):
        # qo 2, kv 5: row 0's diagonal is key 3; window_left 1 keeps keys 2..3
        self.assertEqual(fm.visible_fi(2, 5, 0, True, 1), (2, 3))
        self.assertEqual(fm.visible_fi(2, 5, 1, True, -1), (0, 4))
        self.assertEqual(fm.visible_fi(2, 5, 0, False, 0), (3, 4))
        self.assertIsNone(fm.visible_fi(5, 2, 0, True, -1))  # qo > kv: row 0 sees nothing

    def test_causal_bottom_right_maps_as_is(self):
        p = problem(mask="causal", align="bottom_right", seqlen_q=3, seqlen_kv=9)
        self.assertEqual(fm.mask(p), ((True, -1), None))

    def test_top_left_maps_only_where_it_equals_bottom_right(self):
        self.assertEqual(fm.mask(problem(mask="causal", align="top_left")), ((True, -1), None))
        m, why = fm.mask(problem(mask="causal", align="top_left", seqlen_q=3, seqlen_kv=9))
        self.assertIsNone(m)
        self.assertIn("sequence 0 row 0 sees keys 0..0 in the case, 0..6 in FlashInfer", why)

    def test_window_maps_inclusive_and_only_when_it_changes_a_row(self):
        p = problem(mask="causal", align="bottom_right", window_left=3, seqlen_q=4, seqlen_kv=12)
        self.assertEqual(fm.mask(p), ((True, 3), None))
        wide = problem(mask="causal", align="bottom_right", window_left=50, seqlen_q=4, seqlen_kv=12)
        self.assertEqual(fm.mask(wide), ((True, -1), None))  # no window variant needed

    def test_right_window_zero_is_causal_and_a_wider_one_declines(self):
        self.assertEqual(fm.mask(problem(window_right=0, align="bottom_right")), ((True, -1), None))
        self.assertEqual(fm.mask(problem(window_right=7)), ((False, -1), None))  # reaches past the last key
        m, why = fm.mask(problem(window_right=2))
        self.assertIsNone(m)
        self.assertIn("no right window", why)
        self.assertIn("row 0 sees keys 0..2 in the case, 0..7 in FlashInfer", why)

    def test_fully_masked_rows_agree(self):
        p = problem(mask="causal", align="bottom_right", seqlen_q=5, seqlen_kv=3)
        self.assertEqual(fm.mask(p), ((True, -1), None))


class Pages(unittest.TestCase):
    def test_the_harness_page_table_is_used_as_it_is(self):
        p = problem(batch=2, seqlen_kv=12, seqlens_kv=[9, 4], seqlens_q=[8, 8], paged=True, padded=True)
        pg = fm.pages(p, {"page_size": 4, "pages_per_seq": 3, "page_table": [5, 0, 3, 1, 4, 2]})
        self.assertEqual(pg["indptr"], [0, 3, 4])
        self.assertEqual(pg["indices"], [5, 0, 3, 1])
        self.assertEqual(pg["last_page_len"], [1, 4])
        self.assertEqual(pg["num_pages"], 6)
        self.assertEqual(pg["slots"][0][8], (3, 0))  # key 8: third page of sequence 0, slot 0
        self.assertEqual(pg["slots"][1], [(1, 0), (1, 1), (1, 2), (1, 3)])

    def test_an_unpaged_case_is_paged_in_order(self):
        p = problem(batch=2, seqlen_kv=20, seqlens_kv=[20, 3], padded=True)
        pg = fm.pages(p)
        self.assertEqual(pg["page_size"], fm.DEFAULT_PAGE_SIZE)
        self.assertEqual((pg["indptr"], pg["indices"], pg["last_page_len"]), ([0, 2, 3], [0, 1, 2], [4, 3]))

    def test_a_table_too_short_for_a_sequence_is_an_error(self):
        p = problem(seqlen_kv=9, seqlens_kv=[9], paged=True)
        with self.assertRaises(ValueError):
            fm.pages(p, {"page_size": 4, "pages_per_seq": 2, "page_table": [0, 1]})


class Plan(unittest.TestCase):
    def test_default_engine_follows_the_case(self):
        self.assertEqual(fm.default_engine(problem(paged=True)), "fa2-paged")
        self.assertEqual(fm.default_engine(problem(batch=2, seqlen_q=1)), "fa2-decode")
        self.assertEqual(fm.default_engine(problem()), "fa2-single")
        self.assertEqual(fm.default_engine(problem(batch=3)), "fa2-ragged")
        self.assertNotIn("fa3-decode", fm.ENGINES)

    def test_declines_name_what_flashinfer_lacks(self):
        cases = [(problem(dtype="fp8_e4m3"), "", "fp16 and bf16"), (problem(backward=True), "", "forward only"),
                 (problem(), "fa2-decode", "one query per sequence"), (problem(), "fa4-single", "unknown engine"),
                 (problem(batch=2, seqlens_kv=[8, 0], padded=True), "fa2-ragged", "sequence 1 has queries and no keys"),
                 (problem(seqlen_q=1, head_dim_v=64), "fa2-decode", "one head dim"),
                 (problem(mask="causal", align="bottom_right", seqlen_q=2, seqlen_kv=1), "fa2-single",
                  "causal single prefill needs kv_len >= qo_len")]
        for p, engine, want in cases:
            call, why = fm.plan(p, engine)
            self.assertIsNone(call, want)
            self.assertIn(want, why)
        # the same mask with kv_len >= qo_len, or on the ragged wrapper, still maps
        self.assertIsNotNone(fm.plan(problem(mask="causal", align="bottom_right", seqlen_q=2, seqlen_kv=2),
                                     "fa2-single")[0])
        self.assertIsNotNone(fm.plan(problem(mask="causal", align="bottom_right", seqlen_q=2, seqlen_kv=1),
                                     "fa2-ragged")[0])

    def test_ragged_call(self):
        p = problem(batch=2, seqlens_q=[3, 8], seqlens_kv=[5, 8], padded=True, mask="causal", align="bottom_right",
                    layout="bhsd")
        call, why = fm.plan(p, "fa3-ragged")
        self.assertIsNone(why)
        self.assertEqual((call["backend"], call["kind"], call["causal"], call["window_left"]), ("fa3", "ragged", True, -1))
        self.assertEqual((call["qo_indptr"], call["kv_indptr"]), ([0, 3, 11], [0, 5, 13]))
        self.assertEqual((call["lse"], call["kv_layout"]), ("ln", "NHD"))  # ragged: packed NHD
        self.assertEqual(call["module"], "fa3 batch fp16 d128/128")

    def test_paged_and_decode_calls(self):
        p = problem(layout="bhsd", paged=True, seqlen_kv=9, seqlens_kv=[9], seqlen_q=1)
        paging = {"page_size": 8, "pages_per_seq": 2, "page_table": [1, 0]}
        call, _ = fm.plan(p, "fa2-paged", paging=paging)
        self.assertEqual((call["kv_layout"], call["lse"], call["pages"]["indices"]), ("HND", "ln", [1, 0]))
        call, _ = fm.plan(p, "fa2-decode", paging=paging)
        self.assertEqual((call["module"], call["lse"], call["pages"]["last_page_len"]), ("fa2 decode fp16 d128/128",
                                                                                       "log2", [1]))

    def test_ragged_queries_over_paged_kv_go_to_the_paged_wrapper(self):
        # thd + page_size: qo_indptr from the query lengths (gaps dropped: the worker packs
        # dense queries), the harness's own page table for the keys
        p = problem(batch=2, layout="thd", ragged=True, paged=True, seqlen_q=5, seqlens_q=[5, 2], seqlen_kv=9,
                    seqlens_kv=[9, 4])
        paging = {"page_size": 5, "pages_per_seq": 2, "page_table": [3, 0, 2, 1]}
        self.assertEqual(fm.default_engine(p), "fa2-paged")
        call, why = fm.plan(p, "", paging=paging)
        self.assertIsNone(why)
        self.assertEqual((call["kind"], call["qo_indptr"]), ("paged", [0, 5, 7]))
        self.assertEqual((call["pages"]["indptr"], call["pages"]["indices"], call["pages"]["last_page_len"]),
                         ([0, 2, 3], [3, 0, 2], [4, 4]))

    def test_window_and_softcap_select_their_module_variants(self):
        p = problem(mask="causal", align="bottom_right", window_left=2, seqlen_q=4, seqlen_kv=12, dtype="bf16")
        p.softcap = 30.0
        call, _ = fm.plan(p, "fa2-single")
        self.assertEqual(call["module"], "fa2 single bf16 d128/128 window softcap")
        self.assertEqual((call["window_left"], call["logits_soft_cap"], call["lse"]), (2, 30.0, "log2"))

    def test_sinks_go_to_run_on_paged_and_decode_only(self):
        p = problem(seqlen_q=1)
        p.sink = [0.5, -1.0, 0.0, 2.0]
        self.assertEqual(fm.plan(p, "fa2-decode")[0]["sinks"], [0.5, -1.0, 0.0, 2.0])
        self.assertEqual(fm.plan(p, "fa2-paged")[0]["sinks"], [0.5, -1.0, 0.0, 2.0])
        for engine in ("fa2-single", "fa2-ragged"):
            self.assertIn("takes no sinks", fm.plan(p, engine)[1])
        self.assertIsNone(fm.plan(problem(), "fa2-single")[0]["sinks"])

    def test_a_module_outside_the_menu_is_declined_with_its_key(self):
        menu = fm.menu_keys(fm.MENUS["small"])
        self.assertIsNone(fm.plan(problem(), "fa2-single", menu=menu)[1])
        call, why = fm.plan(problem(head_dim_qk=64, head_dim_v=64), "fa2-single", menu=menu)
        self.assertIsNone(call)
        self.assertIn("module 'fa2 single fp16 d64/64' is not in the compiled menu (6 modules", why)


class Lse(unittest.TestCase):
    def test_base_two_to_natural(self):
        self.assertEqual(fm.lse_log2_to_ln(1.0), math.log(2.0))
        self.assertAlmostEqual(fm.lse_log2_to_ln(10.0 / math.log(2.0)), 10.0, places=12)
        self.assertEqual(fm.lse_log2_to_ln(-math.inf), -math.inf)


class Menu(unittest.TestCase):
    def test_small_menu(self):
        self.assertEqual(fm.menu_keys(fm.MENUS["small"]), {
            "fa2 batch fp16 d128/128", "fa2 decode fp16 d128/128", "fa2 single fp16 d128/128",
            "fa2 batch bf16 d128/128", "fa2 decode bf16 d128/128", "fa2 single bf16 d128/128"})
        full = fm.MENUS["full"]
        self.assertEqual(len(full), len(set(full)))
        self.assertTrue(set(fm.MENUS["small"]) <= set(full))
        self.assertFalse(any(b == "fa3" and k == "decode" for b, k, *_ in full))

    def test_load_menu_takes_compiled_and_cached_modules_only(self):
        self.assertIn("ATTNFUZZ_FLASHINFER_MENU", fm.load_menu("")[1])
        with tempfile.TemporaryDirectory() as d:
            self.assertIn("menu.json", fm.load_menu(d)[1])
            with open(os.path.join(d, fm.MENU_FILE), "w") as f:
                json.dump({"modules": [{"key": "a", "status": "compiled"}, {"key": "b", "status": "cached"},
                                       {"key": "c", "status": "failed"}, {"key": "d", "status": "skipped"}]}, f)
            self.assertEqual(fm.load_menu(d), ({"a", "b"}, None))


if __name__ == "__main__":
    unittest.main()
