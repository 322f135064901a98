#!/usr/bin/env python3
"""Check skills/rules/search.yaml against gate/frameworks/*.yaml.

Every move's lever must exist in at least one adapter; a `key` must name a key (or env variable) of that
lever somewhere; a `set` value must be inside the domain of at least one key of the lever; every move
must have a `why`. Run from the repository root:  python3 skills/scripts/check-rules.py
Exit 0 when clean, 1 with one line per problem.
"""
import glob, sys
import yaml

def domain_ok(rule, value):
    t = rule.get("type", "any")
    if "values" in rule:
        vals = rule["values"]
        return value in vals or (value is None and None in vals) or str(value) in [str(v) for v in vals]
    if t == "bool":
        return isinstance(value, bool)
    if t == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        lo, hi = rule.get("min"), rule.get("max")
        return (lo is None or value >= lo) and (hi is None or value <= hi)
    if t == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "string":
        return isinstance(value, str)
    return True  # any

def main():
    rules = yaml.safe_load(open("skills/rules/search.yaml"))
    by_lever = {}
    companions = {}
    for f in sorted(glob.glob("gate/frameworks/*.yaml")):
        a = yaml.safe_load(open(f))
        for k in a.get("keys", []) + a.get("env", []):
            if k.get("class") in ("performance", "numerics") and not k.get("trial_only"):
                by_lever.setdefault(k["lever"], []).append((a["framework"], k.get("path") or k.get("name"), k))
                # a move's `with` may also set a key declared a companion of its lever (the interpreter's rule)
                for primary in k.get("companion_of", []):
                    companions.setdefault(primary, []).append((a["framework"], k.get("path") or k.get("name"), k))
    problems = []
    if rules.get("version") != 1:
        problems.append("version must be 1")
    for ph in rules.get("phases", []):
        for m in ph.get("moves", []):
            where = f"{ph['name']}: {m}"
            lev = m.get("lever")
            if lev not in by_lever:
                problems.append(f"unknown lever: {where}"); continue
            if "why" not in m:
                problems.append(f"move without why: {where}")
            if ("set" in m) == ("step" in m):
                problems.append(f"a move needs exactly one of set/step: {where}")
            if m.get("step") not in (None, "up", "down"):
                problems.append(f"step must be up or down: {where}")
            cands = by_lever[lev]
            def matches(c, key):
                return (c[1] == key or c[1].endswith("." + key)
                        or (c[1].endswith("*") and key.startswith(c[1][:-1])))
            if "key" in m:
                keys = m["key"] if isinstance(m["key"], list) else [m["key"]]
                for key in keys:
                    if not any(matches(c, key) for c in cands):
                        problems.append(f"no key {key!r} for lever {lev}: {where}")
                cands = [c for c in cands if any(matches(c, k) for k in keys)]
                if not cands:
                    continue
            else:  # without `key`, only exact (non-glob) keys are targets
                cands = [c for c in cands if "*" not in c[1]]
                if "set" in m:
                    # the interpreter picks the first exact key whose domain holds the value; when a
                    # framework has several such keys the move must name its key
                    for fw in sorted({c[0] for c in cands}):
                        hits = [c[1] for c in cands if c[0] == fw and domain_ok(c[2], m["set"])]
                        if len(hits) > 1:
                            problems.append(f"ambiguous without key in {fw} ({', '.join(hits)}): {where}")
            if "set" in m and not any(domain_ok(c[2], m["set"]) for c in cands):
                problems.append(f"value {m['set']!r} outside every domain of {lev}: {where}")
            for wkey, wval in (m.get("with") or {}).items():
                wc = [c for c in by_lever[lev] + companions.get(lev, []) if matches(c, wkey)]
                if not wc:
                    problems.append(f"with: no key {wkey!r} of lever {lev}: {where}")
                elif not any(domain_ok(c[2], wval) for c in wc):
                    problems.append(f"with: value {wval!r} outside the domain of {wkey}: {where}")
            for req in (m.get("requires") or {}):
                if req not in by_lever:
                    problems.append(f"requires unknown lever {req}: {where}")
            for adj in (m.get("adjust") or {}):
                if adj not in by_lever:
                    problems.append(f"adjust names unknown lever {adj}: {where}")
    for s in rules.get("stop", []):
        if "when" not in s or "why" not in s:
            problems.append(f"stop rule needs when and why: {s}")
    for p in problems:
        print(p)
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main())
