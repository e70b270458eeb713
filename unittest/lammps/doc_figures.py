"""The figures the pages quote from the committed example logs, and the versions table, against
their sources. Reads files and runs nothing (a second or so); doc_snippets.py runs it first, and it
runs on its own:

    python3 unittest/lammps/doc_figures.py --repo .

A page (README.md, */README.md, doc/*.rst) quotes a committed log by its path in backquotes, a
colon, and figures separated by commas, each a number and what it measures:

    (``examples/mace/log.7Dec26.mace.g++.1``: 10 ms a step, 361 ghost atoms)

What a figure can measure, always in the log's last run: ``ms a step`` and ``s a step`` (its "Loop
time" over its steps), ``atoms`` (of that line), ``ghost atoms`` and ``neighbors`` (LAMMPS'
"Nghost" and "Neighs", averaged over ranks), a unit of its "Performance" line (``timesteps/s``,
``katom-step/s``, ``ns/day``, ``tau/day``, ...), and ``<column> at step <N>`` (a thermo value, from
the last thermo table holding step N). A quoted number agrees when it is the log's value rounded to
the digits the page prints: within half a unit of its last digit. Every log path a page names must
exist, and a figure whose measure is none of these fails instead of going unchecked.

The versions table of doc/Build_nvalchemi.rst (its section "Versions") must state every pin of the
set-up scripts, each as the package's name followed by its version (``torch==2.13.0``,
``e3nn 0.6.0``, or the name in the first column and the version opening the second): the LAMMPS
source package (``lammps``) and ``torch`` of tools/install-deps.sh, ``libkokkos-dev`` of
tools/install-kokkos.sh, the frameworks and e3nn of tools/install-export-venvs.sh.

Before the pages it checks itself on a committed log: a wrong number, an unknown measure, a log
that does not exist and a table without a pin must each fail, and right quotes pass.
"""

import argparse
import glob
import os
import re
import sys

LOG_PATH = re.compile(r"`{1,2}(examples/[^`\s]+/log\.[^`\s]+)`{1,2}")
# the text of a quote's figures: after the path's colon, up to the end of its clause or a parenthesis
FIGURES = re.compile(r":[ \t\n]+(.*?)(?=[();]|\.\s|\.\Z|\n\s*\n|\Z)", re.DOTALL)
FIGURE = re.compile(r"([-+]?\d[\d.]*(?:[eE][-+]?\d+)?)\s+(.+)")
LOOP = re.compile(r"^Loop time of ([\d.eE+-]+) on \d+ procs for (\d+) steps with (\d+) atoms", re.MULTILINE)


def half_unit(number):
    """Half a unit of the last digit a number is printed with: '30' 0.5, '1.43' 0.005, '2e-13' 5e-14."""
    mantissa, _, exponent = number.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def thermo_value(log, column, step):
    """Thermo `column` at `step`, from the last thermo table of the log that holds that step."""
    value = None
    for header, body in re.findall(r"^\s*(Step\s.*?)\n(.*?)\nLoop time", log, re.DOTALL | re.MULTILINE):
        names = header.split()
        if column not in names:
            continue
        for line in body.splitlines():
            words = line.split()
            if len(words) == len(names) and re.fullmatch(r"\d+", words[0]) and int(words[0]) == step:
                value = float(words[names.index(column)])
    return value


def log_value(log, measure):
    """What `measure` (a figure's words after its number) is in the log's last run; None when the
    measure is not one this check knows or the log does not print it."""
    loops = list(LOOP.finditer(log))
    if not loops:
        return None
    last = loops[-1]
    seconds, steps, atoms = float(last.group(1)), int(last.group(2)), int(last.group(3))
    after = log[last.end():]
    measure = " ".join(measure.split())
    if measure in ("ms a step", "s a step"):
        return seconds / steps * (1000.0 if measure == "ms a step" else 1.0)
    if measure == "atoms":
        return float(atoms)
    statistics = {"ghost atoms": "Nghost", "neighbors": "Neighs"}
    if measure in statistics:
        match = re.search(rf"^{statistics[measure]}:\s+([\d.eE+-]+) ave", after, re.MULTILINE)
        return float(match.group(1)) if match else None
    performance = re.search(r"^Performance:(.*)$", after, re.MULTILINE)
    if performance:
        for value, unit in re.findall(r"([\d.eE+-]+) ([\w/-]+)", performance.group(1)):
            if unit == measure:
                return float(value)
    match = re.fullmatch(r"(\S+) at step (\d+)", measure)
    if match:
        return thermo_value(log, match.group(1), int(match.group(2)))
    return None


def quotes(text):
    """(log path, [(number as printed, measure)], line) of every committed log a text names."""
    found = []
    for match in LOG_PATH.finditer(text):
        path, line = match.group(1), text[:match.start()].count("\n") + 1
        figures = []
        clause = FIGURES.match(text, match.end())
        if clause:
            for chunk in re.split(r",\s+|\s+and\s+", " ".join(clause.group(1).split())):
                figure = FIGURE.fullmatch(chunk.strip())
                if not figure:
                    break
                figures.append((figure.group(1), figure.group(2)))
        found.append((path, figures, line))
    return found


def check_text(repo, where, text):
    """Failures of the log quotes of one page's text (a list of messages), and the figures checked."""
    failures, checked = [], 0
    for path, figures, line in quotes(text):
        if "*" in path or "<" in path:
            continue
        full = os.path.join(repo, path)
        if not os.path.isfile(full):
            failures.append(f"{where}:{line}: names {path}, which is not a committed log")
            continue
        log = open(full).read()
        for number, measure in figures:
            value = log_value(log, measure)
            if value is None:
                failures.append(f"{where}:{line}: {path}: '{number} {measure}': the log has no such figure "
                                "(measures: ms a step, s a step, atoms, ghost atoms, neighbors, a unit of its "
                                "Performance line, <column> at step <N>)")
                continue
            checked += 1
            quoted = float(number)
            if abs(value - quoted) > half_unit(number) * (1 + 1e-9) + 1e-12 * abs(value):
                failures.append(f"{where}:{line}: {path}: the page says {number} {measure}, the log {value:.6g}")
    return failures, checked


VERSIONS_PAGE = os.path.join("doc", "Build_nvalchemi.rst")


def pins(repo):
    """(name, version) of every pin of the set-up scripts."""
    def script(name):
        return open(os.path.join(repo, "tools", name)).read()
    deps, kokkos, venvs = script("install-deps.sh"), script("install-kokkos.sh"), script("install-export-venvs.sh")
    found = [("lammps", re.search(r"^lammps_version=(\S+)", deps, re.MULTILINE).group(1)),
             ("torch", re.search(r"^torch_version=(\S+)", deps, re.MULTILINE).group(1)),
             ("libkokkos-dev", re.search(r"^version=(\S+)", kokkos, re.MULTILINE).group(1))]
    for array in re.findall(r"^\w+_pins=\((.*)\)", venvs, re.MULTILINE):
        found += [tuple(pin.split("==")) for pin in array.split()]
    return sorted(set(found))


def versions_rows(page_text):
    """The rows (each its text, lines joined) of the list-table of a page's section "Versions"."""
    section = re.search(r"^Versions\n-+\n(.*?)(?=^\S[^\n]*\n[-=^]{3,}\n|\Z)", page_text, re.DOTALL | re.MULTILINE)
    if not section:
        return []
    return [" ".join(row.split()) for row in re.split(r"^\s*\* - ", section.group(1), flags=re.MULTILINE)[1:]]


def check_versions(rows, repo_pins):
    """Failures: pins that no row states as the name followed by the version."""
    failures = []
    for name, version in repo_pins:
        stated = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])[`\s=:(-]*{re.escape(version)}(?![\w+-]|\.\d)",
                            re.IGNORECASE)
        if not any(stated.search(row) for row in rows):
            naming = [row for row in rows if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", row, re.IGNORECASE)]
            failures.append(f"{VERSIONS_PAGE}: the versions table does not state {name} {version} "
                            f"(rows naming {name}: {naming or 'none'})")
    return failures


def self_check(repo):
    """Failures of the check itself: quotes of a committed log that must fail and must pass."""
    logs = sorted(glob.glob(os.path.join(repo, "examples", "*", "log.*")))
    if not logs:
        return ["doc_figures: no committed example log to check the check with"]
    path = os.path.relpath(logs[0], repo)
    log = open(logs[0]).read()
    step_ms = log_value(log, "ms a step")
    header = re.findall(r"^\s*(Step\s.*?)\n\s*(\d+)\s", log, re.MULTILINE)[-1]
    column, step = header[0].split()[-1], int(header[1])
    thermo = thermo_value(log, column, step)
    cases = [(f"(``{path}``: {step_ms:.2f} ms a step, {column} at step {step} = ignored)", True),
             (f"``{path}``: {step_ms:.1f} ms a step and {thermo!r} {column} at step {step}.", True),
             (f"``{path}``: {step_ms * 1.2 + 1:.1f} ms a step", False),
             (f"``{path}``: {thermo + 1:.6g} {column} at step {step}", False),
             (f"``{path}``: {step_ms:.1f} ms per step", False),
             ("``examples/lj/log.1Jan00.lj.g++.1``: 1 ms a step", False)]
    failures = []
    for text, passes in cases:
        found, checked = check_text(repo, "self-check", text)
        if (not found and checked > 0) != passes:
            failures.append(f"doc_figures is broken: '{text}' should {'pass' if passes else 'fail'}: {found}")
    rows = ["mace-torch - 0.3.16, with e3nn 0.4.4 (accepted: 0.3.14 to 0.3.17)"]
    if (not check_versions(rows, [("mace-torch", "0.3.17")]) or not check_versions(rows, [("mace-torch", "0.3.1")])
            or check_versions(rows, [("mace-torch", "0.3.16"), ("e3nn", "0.4.4")])):
        failures.append("doc_figures is broken: the versions check does not tell a right pin from a wrong one")
    return failures


def pages(repo):
    return ([os.path.join(repo, "README.md")] + sorted(glob.glob(os.path.join(repo, "*", "README.md"))) +
            sorted(glob.glob(os.path.join(repo, "doc", "*.rst"))))


def check(repo):
    """Failures of the self-check, the pages' log quotes and the versions table; prints what it checked."""
    failures = self_check(repo)
    print(f"{'FAIL' if failures else 'ok':4s} doc_figures: a wrong quote, an unknown measure, a missing log and a wrong pin fail")
    checked = 0
    for page in pages(repo):
        where = os.path.relpath(page, repo)
        page_failures, page_checked = check_text(repo, where, open(page).read())
        checked += page_checked
        if page_checked or page_failures:
            print(f"{'FAIL' if page_failures else 'ok':4s} {where}: {page_checked} figures of committed logs")
        failures += page_failures
    rows = versions_rows(open(os.path.join(repo, VERSIONS_PAGE)).read())
    repo_pins = pins(repo)
    version_failures = check_versions(rows, repo_pins) if rows else [f"{VERSIONS_PAGE}: no section 'Versions' with a list-table"]
    print(f"{'FAIL' if version_failures else 'ok':4s} {VERSIONS_PAGE}: the versions table states the "
          f"{len(repo_pins)} pins of tools/")
    failures += version_failures
    if checked == 0:
        failures.append("doc_figures: no page quotes a committed log: the extraction is broken")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True)
    failures = check(parser.parse_args().repo)
    if failures:
        sys.exit("FAIL:\n" + "\n".join(failures))


if __name__ == "__main__":
    main()
