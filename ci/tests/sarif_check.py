#!/usr/bin/env python3
"""sarif_check.py FILE [--want-provenance] — check a SARIF log against the SARIF 2.1.0
schema's required properties, types and enums for what attnfuzz writes (no network, no
jsonschema package): sarifLog {version "2.1.0", runs}, run.tool.driver {name, version},
rules {id, shortDescription.text, defaultConfiguration.level}, invocations
{executionSuccessful (required), commandLine, arguments, startTimeUtc / endTimeUtc as
date-time, machine, properties}, results {message.text or .id, ruleId / ruleIndex
agreeing with the rules, level, locations[].physicalLocation.artifactLocation.uri
(relative, its uriBaseId declared in originalUriBaseIds), region.startLine >= 1,
partialFingerprints of strings}. --want-provenance also requires driver.version and at
least one invocation with commandLine, startTimeUtc and endTimeUtc. Prints one line per
error and exits 1 when there is any."""
import json, re, sys

LEVELS = {"none", "note", "warning", "error"}
DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
errors = []


def err(path, what):
    errors.append(f"{path}: {what}")


def want(obj, key, types, path, required=True):
    if not isinstance(obj, dict):
        err(path, "not an object")
        return None
    if key not in obj:
        if required:
            err(path, f"missing required '{key}'")
        return None
    v = obj[key]
    if types is int and isinstance(v, bool) or not isinstance(v, types):
        err(f"{path}.{key}", f"{type(v).__name__}, want {types}")
        return None
    return v


def message(obj, path):
    m = want(obj, "message", dict, path)
    if m is not None and not isinstance(m.get("text"), str) and not isinstance(m.get("id"), str):
        err(f"{path}.message", "needs 'text' or 'id' (a string)")


def check_run(run, i, want_provenance):
    p = f"runs[{i}]"
    tool = want(run, "tool", dict, p)
    driver = want(tool, "driver", dict, f"{p}.tool") if tool is not None else None
    rules = []
    if driver is not None:
        want(driver, "name", str, f"{p}.tool.driver")
        want(driver, "version", str, f"{p}.tool.driver", required=want_provenance)
        rules = want(driver, "rules", list, f"{p}.tool.driver", required=False) or []
        for j, r in enumerate(rules):
            rp = f"{p}.tool.driver.rules[{j}]"
            want(r, "id", str, rp)
            sd = want(r, "shortDescription", dict, rp, required=False)
            if sd is not None:
                want(sd, "text", str, f"{rp}.shortDescription")
            dc = want(r, "defaultConfiguration", dict, rp, required=False)
            if dc is not None and dc.get("level", "warning") not in LEVELS:
                err(f"{rp}.defaultConfiguration.level", f"{dc.get('level')!r} not in {sorted(LEVELS)}")
    invocations = want(run, "invocations", list, p, required=want_provenance) or []
    if want_provenance and not invocations:
        err(f"{p}.invocations", "empty")
    for j, inv in enumerate(invocations):
        ip = f"{p}.invocations[{j}]"
        want(inv, "executionSuccessful", bool, ip)
        want(inv, "commandLine", str, ip, required=want_provenance)
        args = want(inv, "arguments", list, ip, required=False)
        if args is not None and not all(isinstance(a, str) for a in args):
            err(f"{ip}.arguments", "not all strings")
        for key in ("startTimeUtc", "endTimeUtc"):
            t = want(inv, key, str, ip, required=want_provenance and j == len(invocations) - 1)
            if t is not None and not DATE_TIME.match(t):
                err(f"{ip}.{key}", f"{t!r} is no date-time")
        want(inv, "machine", str, ip, required=False)
        want(inv, "properties", dict, ip, required=False)
    bases = want(run, "originalUriBaseIds", dict, p, required=False) or {}
    for name, loc in bases.items():
        if not isinstance(loc, dict):
            err(f"{p}.originalUriBaseIds.{name}", "not an artifactLocation object")
    results = want(run, "results", list, p, required=False) or []
    for j, r in enumerate(results):
        rp = f"{p}.results[{j}]"
        message(r, rp)
        rule_id = want(r, "ruleId", str, rp, required=False)
        idx = want(r, "ruleIndex", int, rp, required=False)
        if idx is not None:
            if not -1 <= idx < len(rules):
                err(f"{rp}.ruleIndex", f"{idx} outside the {len(rules)} rules")
            elif idx >= 0 and rule_id is not None and rules[idx].get("id") != rule_id:
                err(f"{rp}.ruleIndex", f"rules[{idx}].id {rules[idx].get('id')!r} != ruleId {rule_id!r}")
        if r.get("level", "warning") not in LEVELS:
            err(f"{rp}.level", f"{r.get('level')!r}")
        for k, loc in enumerate(want(r, "locations", list, rp, required=False) or []):
            lp = f"{rp}.locations[{k}]"
            phys = want(loc, "physicalLocation", dict, lp, required=False)
            if phys is None:
                continue
            art = want(phys, "artifactLocation", dict, f"{lp}.physicalLocation")
            if art is not None:
                uri = want(art, "uri", str, f"{lp}.physicalLocation.artifactLocation")
                if uri is not None and (uri.startswith("/") or re.match(r"^[a-z]+:", uri)):
                    err(f"{lp}...uri", f"{uri!r} is not relative")
                base = art.get("uriBaseId")
                if base is not None and base not in bases:
                    err(f"{lp}...uriBaseId", f"{base!r} not declared in originalUriBaseIds")
            region = want(phys, "region", dict, f"{lp}.physicalLocation", required=False)
            if region is not None and want(region, "startLine", int, f"{lp}.region", required=False) is not None:
                if region["startLine"] < 1:
                    err(f"{lp}.region.startLine", "< 1")
        fps = want(r, "partialFingerprints", dict, rp, required=False) or {}
        if not all(isinstance(v, str) for v in fps.values()):
            err(f"{rp}.partialFingerprints", "values must be strings")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: sarif_check.py FILE [--want-provenance]")
    want_provenance = "--want-provenance" in sys.argv[2:]
    try:
        log = json.load(open(sys.argv[1]))
    except (OSError, ValueError) as e:
        print(f"{sys.argv[1]}: {e}")
        sys.exit(1)
    if log.get("version") != "2.1.0":
        err("version", f"{log.get('version')!r}, want '2.1.0'")
    if "$schema" in log and not isinstance(log["$schema"], str):
        err("$schema", "not a string")
    runs = want(log, "runs", list, "sarifLog") or []
    for i, run in enumerate(runs):
        check_run(run, i, want_provenance)
    for e in errors:
        print(f"{sys.argv[1]}: {e}")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
