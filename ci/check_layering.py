#!/usr/bin/env python3
"""ci/check_layering.py [ROOT] — the stage order of the tree, as a check.

Each folder is one stage of the data flow (LAYOUT: case -> inputs -> run -> oracle ->
probes -> verdict -> minimise -> triage). A file may include headers of its own stage and
of the stages listed for it below, never one above:

    util < model < kernels < {oracle, backends} < judge < {triage, fuzz, minimize}
         < campaign < gate < {cli, targets}
    select (selection policies) sits on backends beside judge; gate may use it.

Extra rules:
  * every project include names its stage ("judge/verdict.h", "oracle/oracle.h"); the only
    public header is "attnfuzz/plugin.h" (the plugin ABI), which anyone may include;
  * backends/ and kernels/ never include oracle/ (the judge stays independent of what it
    judges); the oracle reads only the dense inputs: of model/ it may include
    model/dense.h, model/numeric.h and model/mask_rule.h (the mask rule, written once),
    never the case struct; backends and kernels never include model/mask_rule.h or model/case_mask.h;
  * plugins (harness/plugins) see only the ABI, model/numeric.h, model/mathf.h,
    model/dropout.h (the backends' dropout mask; its .c is compiled into the plugin) and
    their own plugins/metadata_check.h (the test plugins' metadata checks, ABI only);
  * the oracle may use the GPU plumbing of kernels/ (buffers, error codes) for its GPU
    tier; its mask and arithmetic are its own;
  * a test (a file under some tests/ folder) may also include oracle/ headers: tests are
    where a backend meets its ground truth. The other rules hold for tests too;
  * a name says its stage: an external function whose name starts with one of PREFIXES'
    prefixes is defined (outside tests/) in one of that prefix's folders (af_camp_ in
    campaign/, af_cp_ (context parallelism) in backends/cp/, the CP criterion and the case
    model's CP fields, ...).

  * no circle of calls across files of different folders (file A calls a function file B
    defines, and B, through any chain, calls back into A); the circles inside a folder are
    those listed in KEPT_CIRCLES with why a review keeps them (docs/architecture.md lists
    them too); a new one, or a listed one that is gone, is reported.

Prints one line per violation, "file:line: why", and exits 1 when there is any.
"""
import os
import re
import sys

DEPS = {
    'util': [],
    'model': ['util'],
    'kernels': ['util', 'model'],
    'oracle': ['util', 'model', 'kernels'],
    'backends': ['util', 'model', 'kernels'],
    'select': ['util', 'model', 'kernels', 'backends'],
    'judge': ['util', 'model', 'oracle', 'kernels', 'backends'],
    'triage': ['util', 'model', 'oracle', 'kernels', 'backends', 'judge'],
    'fuzz': ['util', 'model', 'oracle', 'kernels', 'backends', 'judge'],
    'minimize': ['util', 'model', 'oracle', 'kernels', 'backends', 'judge'],
    'campaign': ['util', 'model', 'oracle', 'kernels', 'backends', 'judge', 'triage', 'fuzz', 'minimize'],
}
DEPS['gate'] = DEPS['campaign'] + ['campaign', 'select']
DEPS['cli'] = DEPS['gate'] + ['gate']
DEPS['targets'] = DEPS['campaign'] + ['campaign']
STAGES = set(DEPS)
ORACLE_MODEL_OK = {'model/dense.h', 'model/numeric.h', 'model/mask_rule.h'}
MASK_RULE = ('model/mask_rule.h', 'model/case_mask.h')
PLUGIN_OK = {'attnfuzz/plugin.h', 'model/numeric.h', 'model/mathf.h', 'model/dropout.h', 'plugins/metadata_check.h'}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# name prefix -> the folders (path prefixes from the root) that may define such a function
PREFIXES = {
    'af_camp_': ('harness/campaign/',), 'af_session_': ('harness/campaign/',),
    'af_stats_': ('harness/campaign/',), 'af_campaign_': ('harness/campaign/',),
    'af_cp_': ('harness/backends/cp/', 'harness/judge/criterion/criterion_cp.c', 'harness/judge/criterion/', 'harness/model/'),
    'af_cli_': ('harness/cli/',), 'af_gate_': ('harness/gate/',), 'af_claims_': ('harness/gate/',),
    'af_oracle_': ('oracle/',), 'af_mpfr_': ('oracle/',), 'af_fp64_': ('oracle/',), 'af_cert_': ('oracle/',),
    'af_fuzz_': ('harness/fuzz/',), 'af_fz_': ('harness/fuzz/',), 'af_min_': ('harness/minimize/',),
    'af_probe_': ('harness/judge/probes/',), 'af_probes_': ('harness/judge/probes/',),
    'af_criterion_': ('harness/judge/criterion/',), 'af_cudnn_': ('harness/backends/cudnn/',),
    'af_sdpa_': ('harness/backends/cudnn/',), 'af_worker_': ('harness/backends/worker/',),
    'af_triage_': ('triage/',), 'af_case_': ('harness/model/',), 'af_policy_': ('harness/select/',),
    'af_selector_': ('harness/select/',), 'af_proc_': ('harness/util/',), 'af_parfor_': ('harness/util/',),
}
# an external function definition: at column 0, not static, a name and an opening parenthesis, no ';'
DEFINITION = re.compile(r'^(?!static\b|typedef\b|extern\b|#)[A-Za-z_][\w \*]*?\b(af_\w+)\s*\([^;{]*(\{.*)?$')


def check_prefixes(rel, lines, out):
    """Functions defined in rel whose name prefix belongs to another folder."""
    if '/tests/' in '/' + rel or not rel.endswith(('.c', '.cu')):
        return
    for n, line in enumerate(lines, 1):
        m = DEFINITION.match(line)
        if not m:
            continue
        name = m.group(1)
        for prefix, homes in PREFIXES.items():
            if name.startswith(prefix) and not rel.startswith(homes):
                out.append('%s:%d: %s is defined outside its prefix\'s folder (%s belongs in %s)' % (
                    rel, n, name, prefix, ' or '.join(homes)))


def stage_of(path):
    """Stage of a file from its path relative to the root, or None (not checked)."""
    parts = path.split('/')
    if parts[0] in ('oracle', 'triage', 'kernels'):
        return parts[0]
    if parts[0] == 'harness' and len(parts) > 2:
        if parts[1] == 'plugins':
            return 'plugins'
        if parts[1] == 'include':
            return 'public'
        if parts[1] in STAGES:
            return parts[1]
    return None


# circles of calls a review keeps, each inside one folder: the files, and why
KEPT_CIRCLES = {
    frozenset({'harness/model/case.c', 'harness/model/case_measure.c'}):
        'validation bounds a case by its element count (a measure); the measures walk the field table',
    frozenset({'oracle/src/oracle.c', 'oracle/src/oracle_pipeline.c'}):
        'the pipelined certification is the oracle run\'s own sampled MPFR pass, on threads',
    frozenset({'harness/backends/plugin_adapter.c', 'harness/backends/plugin_loader.c',
               'harness/backends/plugin_probe.c'}):
        'loading a plugin probes it in a child that loads it again, then adapts it',
    frozenset({'harness/backends/plugin_scan.c', 'harness/backends/registry.c'}):
        'the registry starts by scanning the plugin folders, and the scan adds what it finds',
    frozenset({'harness/backends/worker/worker_backend.c', 'harness/backends/worker/worker_config.c'}):
        'a worker config builds a worker backend, which frees its config',
    frozenset({'harness/campaign/session.c', 'harness/campaign/session_child.c', 'harness/campaign/worker_pool.c'}):
        'the session starts its worker pool, whose workers run the session\'s case runner',
    frozenset({'harness/cli/cli_run.c', 'harness/cli/cli_run_pool.c', 'harness/cli/cli_select.c'}):
        '`run` hands cases to its pool and to the claim check, which print verdicts as `run` does',
}
IDENT = re.compile(r'\baf_\w+\b')


def call_circles(root, files):
    """Strongly connected components (more than one file) of the graph 'file A uses a
    function file B defines', over the non-test .c / .cu files."""
    defs, uses = {}, {}
    for rel in files:
        with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
            text = f.read()
        text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
        text = re.sub(r'//[^\n]*', '', text)
        for line in text.split('\n'):
            m = DEFINITION.match(line)
            if m:
                defs.setdefault(m.group(1), rel)
        uses[rel] = set(IDENT.findall(text))
    graph = {a: sorted({defs[n] for n in uses[a] if n in defs and defs[n] != a}) for a in files}
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan, iterative over an explicit stack of (node, next edge)
        work = [(v, 0)]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, i = work[-1]
            if i < len(graph[node]):
                work[-1] = (node, i + 1)
                w = graph[node][i]
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, 0))
                elif w in on:
                    low[node] = min(low[node], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    comps.append(frozenset(comp))

    for v in files:
        if v not in index:
            visit(v)
    return comps


def check_circles(root, files, out):
    found = call_circles(root, files)
    for comp in found:
        names = ', '.join(sorted(comp))
        if len({os.path.dirname(f) for f in comp}) > 1:
            out.append('%s: a circle of calls across folders (%s): break it' % (sorted(comp)[0], names))
        elif comp not in KEPT_CIRCLES:
            out.append('%s: a new circle of calls (%s): break it, or list it in KEPT_CIRCLES with why' % (
                sorted(comp)[0], names))
    for comp in KEPT_CIRCLES:
        if comp not in found and all(os.path.exists(os.path.join(root, f)) for f in comp):
            out.append('%s: KEPT_CIRCLES lists a circle that is gone (%s): remove it there and in '
                       'docs/architecture.md' % (sorted(comp)[0], ', '.join(sorted(comp))))


def check_file(root, rel, out):
    stage = stage_of(rel)
    if stage is None:
        return
    is_test = '/tests/' in '/' + rel
    with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
        lines = f.readlines()
    if stage not in ('plugins', 'public'):
        check_prefixes(rel, lines, out)
    for n, line in enumerate(lines, 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        inc = m.group(1)
        where = '%s:%d' % (rel, n)
        top = inc.split('/')[0]
        if inc == 'attnfuzz/plugin.h':
            continue
        if stage == 'plugins':
            if inc not in PLUGIN_OK:
                out.append('%s: a plugin includes "%s"; plugins see only %s' % (where, inc, ', '.join(sorted(PLUGIN_OK))))
            continue
        if stage == 'public':
            out.append('%s: the public ABI header includes "%s"; it must stand alone' % (where, inc))
            continue
        if top not in STAGES or '/' not in inc:
            out.append('%s: include "%s" does not name its stage (one of %s)' % (where, inc, ', '.join(sorted(STAGES))))
            continue
        if top == stage:
            continue
        if stage in ('backends', 'kernels') and inc in MASK_RULE and not is_test:
            out.append('%s: %s/ includes "%s": backends and kernels keep their own mask code' % (where, stage, inc))
            continue
        if stage in ('backends', 'kernels') and top == 'oracle' and not is_test:
            out.append('%s: %s/ includes "%s": backends and kernels never include the oracle' % (where, stage, inc))
            continue
        if stage == 'oracle' and top == 'model' and inc not in ORACLE_MODEL_OK and not is_test:
            out.append('%s: the oracle includes "%s"; it reads only %s' % (where, inc, ', '.join(sorted(ORACLE_MODEL_OK))))
            continue
        if top in DEPS[stage] or (is_test and top == 'oracle'):
            continue
        out.append('%s: %s/ includes "%s", a stage above it (%s may include %s)' % (
            where, stage, inc, stage, ', '.join(DEPS[stage]) or 'nothing else'))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    out = []
    sources = []
    for base in ('harness', 'oracle', 'triage', 'kernels'):
        for d, dirs, files in os.walk(os.path.join(root, base)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(('.c', '.h', '.cu', '.cuh')):
                    rel = os.path.relpath(os.path.join(d, name), root)
                    check_file(root, rel, out)
                    stage = stage_of(rel)
                    if name.endswith(('.c', '.cu')) and stage not in (None, 'plugins', 'public') and \
                            '/tests/' not in '/' + rel:
                        sources.append(rel)
    check_circles(root, sources, out)
    for line in out:
        print(line)
    if out:
        print('check_layering: %d violation(s) of the stage order' % len(out), file=sys.stderr)
        return 1
    print('check_layering: ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
