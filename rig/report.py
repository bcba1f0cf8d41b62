#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""rig/report.py - judge what a guest recorded, and add every result up.

Each unit of a run (a tier, the lint, the rig's self-test) ends up as a
result.json: {"unit": ..., "desc": ..., "tests": [{"group", "name",
"status": "pass"|"fail"|"skip", "detail"}]}.

  report.py tier DIR KUNIT_PY    judge the tier run in DIR (rig/tier.sh)
  report.py record FILE UNIT GROUP NAME STATUS [DETAIL]
                                 add one result to FILE
  report.py expect FILE GROUP [NAME]
                                 succeed when FILE has a failure, and every
                                 failure is in GROUP (and of the test NAME)
  report.py total [--line FILE] RESULT...
                                 the summary and the final line (also
                                 written to FILE); exit 1 on any failure
"""

import json
import os
import re
import subprocess
import sys

# What the kernel prints when something went wrong.  Each pattern must match
# at the start of a kernel log message, after the timestamp: that is how the
# kernel prints these reports, and it is what keeps KTAP lines (which start
# with "ok", "not ok" or "#") from matching when a test's name or message
# happens to contain one of these words.  Lockdep's reports start with
# "WARNING:" ("WARNING: possible circular locking dependency detected",
# "WARNING: inconsistent lock state", "WARNING: possible recursive locking
# detected", "WARNING: suspicious RCU usage"); they are listed on their own
# too in case a kernel prints them another way.
BAD_LOG = [re.compile(p) for p in (
    r"BUG[: ]",                         # BUG: ..., and slab's "BUG kmalloc-64"
    r"kernel BUG at ",
    r"WARNING:",                        # WARN*() and lockdep
    r"Oops",
    r"Kernel panic",
    r"general protection fault",
    r"(BUG|WARNING|ERROR): KASAN",
    r"KASAN",
    r"UBSAN",
    r"\s*Call Trace:",
    r"(possible circular locking|inconsistent lock state|"
    r"possible recursive locking|suspicious RCU usage)",
    r"INFO: (task .* blocked for more than|rcu_\w+ (self-)?detected stall)",
    r"rcu: INFO: ",
    r"watchdog: ",                      # soft and hard lockups
    r"unreferenced object",             # kmemleak
)]

# "[    1.234567] " and, with CONFIG_PRINTK_CALLER, "[T123] "
LOG_PREFIX = re.compile(r"^(<\d+>)?(\[\s*\d+\.\d+\])?(\[\s*[TC]\d+\])?\s?")
MARK = "htw-rig: "

TAP_RESULT = re.compile(r"^(not ok|ok)\b\s*(\d+)?\s*(?:- )?([^#]*?)\s*(?:#\s*(.*))?$")
TAP_PLAN = re.compile(r"^1\.\.(\d+)\s*(?:#\s*(.*))?$")


def read(path, default=""):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return default


def read_steps(path):
    """Lines of "what... rc" as [(what, rc)]."""
    steps = []
    for line in read(path).splitlines():
        words = line.split()
        if len(words) >= 2 and words[-1].lstrip("-").isdigit():
            steps.append((" ".join(words[:-1]), int(words[-1])))
    return steps


class Unit:
    def __init__(self, unit, desc=""):
        self.unit, self.desc, self.tests = unit, desc, []

    def add(self, group, name, status, detail=""):
        if status is True:
            status = "pass"
        elif status is False:
            status = "fail"
        self.tests.append({"group": group, "name": name, "status": status,
                           "detail": detail})

    def save(self, path):
        with open(path, "w") as f:
            json.dump({"unit": self.unit, "desc": self.desc,
                       "tests": self.tests}, f, indent=1)

    @staticmethod
    def load(path):
        with open(path) as f:
            d = json.load(f)
        u = Unit(d["unit"], d.get("desc", ""))
        u.tests = d["tests"]
        return u


def log_messages(text):
    for n, line in enumerate(text.splitlines(), 1):
        yield n, LOG_PREFIX.sub("", line, count=1)


def scan_log(text, label):
    """The lines of a kernel log that report a problem."""
    found = []
    for n, msg in log_messages(text):
        if any(p.match(msg) for p in BAD_LOG):
            found.append("%s:%d: %s" % (label, n, msg.strip()))
    return found


def crash_summary(text):
    """The first report in a kernel log, in a few lines: the step it came
    in, its first line, where it was (RIP) and the functions of its trace,
    innermost first, so that a crash is diagnosable from the summary."""
    msgs = [m for _, m in log_messages(text)]
    first = next((i for i, m in enumerate(msgs)
                  if any(p.match(m) for p in BAD_LOG)), None)
    if first is None:
        return []
    step = next((m[len(MARK):] for m in reversed(msgs[:first])
                 if m.startswith(MARK)), "boot")
    out = ["in step %s: %s" % (step.strip(), msgs[first].strip())]
    trace, inside = [], False
    for m in msgs[first + 1:first + 80]:
        m = m.strip()
        if m.startswith("RIP:") and len(out) < 2:
            out.append(m)
        elif m.startswith("Call Trace:"):
            inside = True
        elif inside and (m.startswith("</") or m.startswith("---[ end")):
            if trace:
                break
        elif inside:
            fn = re.match(r"(\? )?([\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+)( \[\w+\])?", m)
            if fn and not fn.group(1):
                trace.append(fn.group(2) + (fn.group(3) or ""))
    if trace:
        out.append("trace: " + " < ".join(trace[:12]))
    return out


def log_segment(text, step):
    """The kernel messages between the marker of @step and the next one."""
    out, inside = [], False
    for line in text.splitlines():
        msg = LOG_PREFIX.sub("", line, count=1)
        if msg.startswith(MARK):
            if inside:
                break
            inside = msg[len(MARK):].strip() == step
        elif inside:
            out.append(line)
    return "\n".join(out) + "\n"


def has_kunit_suites(ko):
    """A module that KUnit will run suites from on load."""
    try:
        with open(ko, "rb") as f:
            return b".kunit_test_suites" in f.read()
    except OSError:
        return False


def kunit_leaves(group, path=""):
    """The cases that have no subtests, as ("suite.case", status)."""
    for case in group.get("test_cases", []):
        yield path + case["name"], case["status"]
    for sub in group.get("sub_groups", []):
        yield from kunit_leaves(sub, path + sub["name"] + ".")


# (K)TAP lines that say nothing about why a test failed
TAP_NOISE = re.compile(r"^(KTAP version|TAP version|1\.\.|# Subtest:|"
                       r"# module:|# Starting |#\s+RUN |#\s+FAIL |#\s+OK )")


def tap_diagnostics(text):
    """What (K)TAP said before each failed result: {name: [lines]}."""
    diag, lines = {}, []
    for _, msg in log_messages(text):
        msg = msg.strip()
        m = TAP_RESULT.match(msg)
        if m:
            if m.group(1) == "not ok":
                diag[m.group(3)] = lines
            lines = []
        elif msg and not TAP_NOISE.match(msg):
            lines.append(msg)
    return diag


def judge_kunit(unit, d, mod, dmesg, kunit_py):
    seg = log_segment(dmesg, "load " + mod)
    base = os.path.join(d, "kunit-" + mod)
    with open(base + ".log", "w") as f:
        f.write(seg)
    if "TAP version" not in seg:
        unit.add("kunit", mod, False, "no KTAP in the kernel log")
        return
    with open(base + ".txt", "w") as out:
        rc = subprocess.call([sys.executable, kunit_py, "parse",
                              "--json=" + base + ".json", base + ".log"],
                             stdout=out, stderr=subprocess.STDOUT)
    try:
        with open(base + ".json") as f:
            tree = json.load(f)
    except (OSError, ValueError):
        tree = {}
    bad = 0
    diag = tap_diagnostics(seg)
    for case, kstatus in kunit_leaves(tree):
        status = {"PASS": "pass", "SKIP": "skip"}.get(kstatus, "fail")
        bad += status == "fail"
        detail = ""
        if status != "pass":
            detail = "\n".join([kstatus] + diag.get(case.split(".")[-1], [])[:6])
        unit.add("kunit", case, status, detail)
    # kunit.py also fails a run whose plan and results disagree.
    if rc and not bad:
        unit.add("kunit", mod, False,
                 "kunit.py parse failed; see " + base + ".txt")


def judge_tap(unit, name, text, rc):
    results, plan, skip_all = 0, None, None
    bad = 0
    diag = tap_diagnostics(text)
    for line in text.splitlines():
        m = TAP_PLAN.match(line)
        if m:
            plan = int(m.group(1))
            if plan == 0 and (m.group(2) or "").upper().startswith("SKIP"):
                skip_all = m.group(2)
            continue
        m = TAP_RESULT.match(line)
        if not m:
            continue
        results += 1
        ok, test, directive = m.group(1) == "ok", m.group(3), m.group(4) or ""
        test = test or "test %s" % (m.group(2) or results)
        if directive.upper().startswith("SKIP"):
            unit.add("user", "%s: %s" % (name, test), "skip", directive)
        else:
            bad += not ok
            unit.add("user", "%s: %s" % (name, test), ok,
                     "" if ok else "\n".join([line] + diag.get(test, [])[:6]))
    # One more failure for the program itself when it did not finish
    # cleanly, however many of its tests that cost.
    problems = []
    if skip_all is not None:
        unit.add("user", name, "skip", skip_all)
    elif plan is None or results < plan:
        problems.append("reported %d of %s tests" %
                        (results, plan if plan is not None else "?"))
    if rc >= 128:
        problems.append("killed by signal %d" % (rc - 128))
    elif rc not in (0, 4) and not bad:
        problems.append("exit status %d" % rc)
    if problems:
        unit.add("user", name, False, ", ".join(problems))


def cmd_tier(d, kunit_py):
    d = os.path.abspath(d)      # kunit.py changes its directory
    name = os.path.basename(os.path.normpath(d))
    unit = Unit(name, read(os.path.join(d, "kernel")).strip())
    host = dict(read_steps(os.path.join(d, "steps")))
    out = os.path.join(d, "out")

    if host.get("prepare", 1):
        unit.add("rig", "kernel ready", False, "see the rig's messages above")
        return unit
    unit.add("rig", "kernel ready", True)
    if host.get("build", 1):
        build_log = os.path.join(d, "build.log")
        errors = [l for l in read(build_log).splitlines() if "error" in l]
        unit.add("rig", "modules built", False,
                 "\n".join(errors[:8] + ["see " + os.path.relpath(build_log)]))
        return unit
    unit.add("rig", "modules built", True)
    warnings = [l for l in read(os.path.join(d, "build.log")).splitlines()
                if ": warning: " in l]
    unit.add("rig", "no compiler warnings", not warnings,
             "\n".join(warnings[:8]))

    boot = host.get("boot", 1)
    done = os.path.exists(os.path.join(out, "done"))
    if boot in (124, 137):
        unit.add("rig", "guest finished", False,
                 "did not finish within the time bound")
    # A guest that died has no dmesg.txt; its console has the kernel log.
    log_file = os.path.join(out, "dmesg.txt")
    if not os.path.exists(log_file):
        log_file = os.path.join(d, "console.log")
    log = read(log_file)

    if boot in (124, 137):
        unit.add("rig", "guest finished", False,
                 "did not finish within the time bound")
    elif boot or not done:
        unit.add("rig", "guest finished", False,
                 "exit status %d, %s" % (boot, "results complete" if done
                                         else "no results"))
    else:
        unit.add("rig", "guest finished", True)

    # The kernel log next: what else failed may follow from what it says.
    found = scan_log(log, os.path.relpath(log_file))
    with open(os.path.join(d, "log-findings.txt"), "w") as f:
        f.write("".join(x + "\n" for x in found))
    unit.add("rig", "kernel log clean", not found,
             "\n".join(crash_summary(log) + found[:8]) +
             ("\n..." if len(found) > 8 else ""))

    guest = read_steps(os.path.join(out, "steps"))
    gdict = dict(guest)
    modules = [m for m in read(os.path.join(d, "modules")).split() if m]

    for ko in modules:
        mod = os.path.basename(ko)[:-3].replace("-", "_")
        rc = gdict.get("load " + mod)
        unit.add("rig", "load " + mod, rc == 0,
                 "" if rc == 0 else "not attempted" if rc is None
                 else "insmod: exit status %d" % rc)
        if rc != 0:
            continue
        rc = gdict.get("unload " + mod)
        unit.add("rig", "unload " + mod, rc == 0,
                 "" if rc == 0 else "not attempted" if rc is None
                 else "rmmod: exit status %d" % rc)
        if has_kunit_suites(ko):
            judge_kunit(unit, d, mod, log, kunit_py)

    ran = {w[len("test "):]: rc for w, rc in guest if w.startswith("test ")}
    tests = os.path.join(d, "..", "bin", "tests")
    for t in sorted(os.listdir(tests)) if os.path.isdir(tests) else []:
        if t not in ran:
            unit.add("user", t, False, "did not run, or did not finish")
            continue
        judge_tap(unit, t, read(os.path.join(out, "tests", t + ".tap")),
                  ran[t])

    # A kernel with kmemleak must have been scanned: a guest that could not
    # (debugfs missing) proves nothing about leaks.
    leaks_file = os.path.join(out, "kmemleak.txt")
    if os.path.exists(leaks_file):
        blocks = read(leaks_file).split("unreferenced object")[1:]
        leaks = ["unreferenced object" + b for b in blocks if "htw" in b]
        unit.add("rig", "kmemleak clean", not leaks,
                 "".join(leaks[:2])[:2000])
    elif "kmemleak: Kernel memory leak detector initialized" in log:
        unit.add("rig", "kmemleak clean", False,
                 "the kernel has kmemleak, but the guest did not scan with it")

    return unit


def counts(tests):
    c = {"pass": 0, "fail": 0, "skip": 0}
    for t in tests:
        c[t["status"]] += 1
    return c


def summary_line(unit):
    groups = []
    for g in dict.fromkeys(t["group"] for t in unit.tests):
        c = counts([t for t in unit.tests if t["group"] == g])
        s = "%s %d/%d" % (g, c["pass"], c["pass"] + c["fail"])
        if c["skip"]:
            s += " (%d skipped)" % c["skip"]
        groups.append(s)
    c = counts(unit.tests)
    verdict = "FAIL" if c["fail"] else "ok"
    return "  %-4s %-10s %s%s" % (verdict, unit.unit, ", ".join(groups),
                                  "  [" + unit.desc + "]" if unit.desc else "")


def print_failures(unit):
    for t in unit.tests:
        if t["status"] == "fail":
            group = t["group"] + " " if t["group"] != unit.unit else ""
            print("       %s: %s%s" % (unit.unit, group, t["name"]))
            for line in t["detail"].splitlines():
                print("           " + line)


def cmd_total(files, summary=None):
    units = [Unit.load(f) for f in files if os.path.exists(f)]
    total = {"pass": 0, "fail": 0, "skip": 0}
    print("\nhtw test summary")
    for u in units:
        print(summary_line(u))
        print_failures(u)
        for k, v in counts(u.tests).items():
            total[k] += v
    line = "%d passed, %d failed" % (total["pass"], total["fail"])
    if total["skip"]:
        line += ", %d skipped" % total["skip"]
    if summary:
        with open(summary, "w") as f:
            f.write(line + "\n")
    print(line)
    return 1 if total["fail"] or not units else 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "tier":
        unit = cmd_tier(argv[1], argv[2])
        unit.save(os.path.join(argv[1], "result.json"))
        print(summary_line(unit))
        print_failures(unit)
        return 0
    if len(argv) >= 6 and argv[0] == "record":
        f = argv[1]
        unit = Unit.load(f) if os.path.exists(f) else Unit(argv[2])
        unit.add(argv[3], argv[4], argv[5], argv[6] if len(argv) > 6 else "")
        unit.save(f)
        return 0
    if len(argv) in (3, 4) and argv[0] == "expect":
        unit = Unit.load(argv[1])
        fails = [t for t in unit.tests if t["status"] == "fail"]
        return 0 if fails and all(t["group"] == argv[2] and
                                  (len(argv) == 3 or t["name"] == argv[3])
                                  for t in fails) else 1
    if len(argv) >= 4 and argv[:2] == ["total", "--line"]:
        return cmd_total(argv[3:], argv[2])
    if len(argv) >= 2 and argv[0] == "total":
        return cmd_total(argv[1:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
