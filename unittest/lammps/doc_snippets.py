"""Every LAMMPS snippet of README.md and doc/*.rst runs as shown, with the package's shipped
models (potentials/) and hook modules (examples/dd/); the Python blocks import the installed
package (nvalchemi_lammps).

Snippets: the ```lammps blocks of README.md and the `.. code-block:: LAMMPS` blocks of doc/*.rst
outside "Syntax" sections; each paragraph (lines between blank lines) is one input. It runs on 2
ranks after a small LJ-units system (as many atom types as its `pair_coeff * *` names; the
package's LJ model when it sets no pair style) and before `run 2`, in a directory where
`potentials/`, `examples/`, `models/` and `build-plugin/` are the repository's folders and the built
plugin's (which `build/nvalchemi/plugin/` names too, as after `make`). The `.. code-block:: python`
blocks run too, from the same directory. The JSON block of
doc/Howto_nvalchemi_spec.rst must be the effective spec LAMMPS prints for potentials/lj_ar.pt2.
The quick start page (RUN_IN_ORDER) is one workflow, in one directory, as a user would follow
it: its Python and LAMMPS blocks saved as the files their first lines name, its bash blocks run
in order; the log it leaves must show the validation.

First, before any run: the figures the pages quote from the committed example logs are what the
logs say, and the versions table of doc/Build_nvalchemi.rst states the pins of tools/
(doc_figures.py, which checks itself first: a wrong quote must fail).
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import doc_figures
from harness import run_lammps

SYSTEM = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box {ntypes} box
create_atoms 1 box
mass * 1.0
velocity all create 1.0 4928 loop geom
"""
DEFAULT_PAIR = "pair_style nvalchemi potentials/lj_ar.pt2\npair_coeff * * {elements}\n"
# pages whose blocks make one workflow, run in order, bash blocks included (run_in_order): the
# file their run must leave and what it must say
RUN_IN_ORDER = {"Howto_nvalchemi_quickstart.rst": ("log.quickstart", ["fix nvalchemi/dd validate step 50: largest",
                                                                       "fix nvalchemi/dd validate step 100: largest"])}
HEADING_UNDERLINE = re.compile(r'^(["=\-~^*#])\1{3,}$')


def rst_blocks(path):
    """(language, first line number, text) of each code block outside Syntax sections."""
    lines = open(path).read().splitlines()
    blocks, section, i = [], "", 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip() and HEADING_UNDERLINE.match(lines[i + 1]):
            section = lines[i].strip()
        match = re.match(r"\s*\.\. code-block:: (\w+)", lines[i])
        if match:
            body, j = [], i + 1
            while j < len(lines) and (not lines[j].strip() or lines[j].startswith("   ")):
                body.append(lines[j][3:])
                j += 1
            if section != "Syntax":
                blocks.append((match.group(1).lower(), i + 1, "\n".join(body).strip("\n")))
            i = j
            continue
        i += 1
    return blocks


def markdown_blocks(path):
    text = open(path).read()
    return [("lammps", text[:m.start()].count("\n") + 1, m.group(1).strip("\n"))
            for m in re.finditer(r"```lammps\n(.*?)```", text, re.DOTALL)]


def paragraphs(text):
    """Independent inputs of a snippet: its paragraphs, continuation lines ('&') joined."""
    return [p.replace("&\n", " ") for p in re.split(r"\n\s*\n", text) if p.strip()]


def atom_types(snippet):
    """Atom types the snippet's `pair_coeff * *` line maps (1 without one)."""
    for line in snippet.splitlines():
        words = line.split("#")[0].split()
        if words[:3] == ["pair_coeff", "*", "*"]:
            names = words[3:]
            if names and names[0] == "nvalchemi":    # a hybrid sub-style (with its index)
                names = names[2:] if len(names) > 1 and names[1].isdigit() else names[1:]
            return len(names)
    return 1


def lammps_input(snippet):
    ntypes = atom_types(snippet)
    text = SYSTEM.format(ntypes=ntypes)
    if not re.search(r"^\s*pair_style", snippet, re.MULTILINE):
        text += DEFAULT_PAIR.format(elements=" ".join(["Ar"] * ntypes))
    text += snippet + "\n"
    if not re.search(r"^\s*(run|minimize)\s", snippet, re.MULTILINE):
        text += "fix snippet_nve all nve\nrun 2\n"
    return text


def judged(label, proc, text):
    """(printed) whether a snippet's run succeeded: exit 0 and no ERROR; its failure, or None."""
    output = proc.stdout + proc.stderr
    ok = proc.returncode == 0 and "ERROR" not in output
    print(f"{'ok' if ok else 'FAIL':4s} {label}")
    return None if ok else f"{label}:\n{text}\nexit {proc.returncode}:\n{output[-2500:]}"


def file_name(snippet):
    """The file a block of a page run in order is saved as: the name its first line gives
    ('# in.name: ...', '# script.py: ...')."""
    match = re.match(r"#\s*([\w.]+):", snippet)
    return match.group(1) if match else None


def run_in_order(args, source, workdir):
    """The page's blocks, in order, in a directory of their own: Python scripts and complete LAMMPS
    inputs saved under the name their first line gives, bash blocks run with lmp and the
    package's venv (python, the tools) first on PATH. Returns (blocks run, failures)."""
    pagedir = os.path.join(workdir, os.path.splitext(os.path.basename(source))[0])
    bindir = os.path.join(pagedir, ".bin")
    os.makedirs(bindir)
    os.symlink(os.path.abspath(args.lmp), os.path.join(bindir, "lmp"))
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1",
               PATH=os.pathsep.join([bindir, os.path.dirname(args.python), os.environ.get("PATH", "")]))
    ran, failures = 0, []
    where = os.path.relpath(source, args.repo)
    for language, line, text in rst_blocks(source):
        label = f"{where}:{line}"
        if language in ("lammps", "python"):
            name = file_name(text)
            if not name:
                failures.append(f"{label}: a {language} block of this page must name its file in its first "
                                "line ('# name: ...')")
                continue
            with open(os.path.join(pagedir, name), "w") as f:
                f.write(text + "\n")
            print(f"ok   {label} (saved as {name})")
            continue
        if language != "bash":
            continue
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=pagedir, env=env,
                              capture_output=True, text=True, timeout=600)
        ran += 1
        failures += filter(None, [judged(f"{label} (bash)", proc, text)])
    result, expected = RUN_IN_ORDER[os.path.basename(source)]
    path = os.path.join(pagedir, result)
    found = open(path).read() if os.path.exists(path) else ""
    missing = [text for text in expected if text not in found]
    print(f"{'FAIL' if missing else 'ok':4s} {where}: {result} says {expected}")
    if missing:
        failures.append(f"{where}: {result} lacks {missing}")
    return ran, failures


def effective_spec(log):
    match = re.search(r"^effective spec:\n(\{\n.*?\n\})\n", log, re.DOTALL | re.MULTILINE)
    return json.loads(match.group(1)) if match else None


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("--plugin", required=True, help="the built nvalchemiplugin.so")
    parser.add_argument("--repo", required=True)
    args = parser.parse_args()

    failures = doc_figures.check(args.repo)
    sources = [os.path.join(args.repo, "README.md")] + sorted(glob.glob(os.path.join(args.repo, "doc", "*.rst")))
    ran, lj_spec = 0, None
    with tempfile.TemporaryDirectory(prefix="nvalchemi-doc-") as workdir:
        for name in ("potentials", "examples", "models"):
            os.symlink(os.path.join(args.repo, name), os.path.join(workdir, name))
        # the built plugin's folder where a plugin build of one's own (Build_nvalchemi) and where
        # make (build/nvalchemi/plugin) put it
        plugin_dir = os.path.dirname(os.path.abspath(args.plugin))
        os.symlink(plugin_dir, os.path.join(workdir, "build-plugin"))
        os.makedirs(os.path.join(workdir, "build", "nvalchemi"))
        os.symlink(plugin_dir, os.path.join(workdir, "build", "nvalchemi", "plugin"))
        for source in sources:
            if os.path.basename(source) in RUN_IN_ORDER:
                page_ran, page_failures = run_in_order(args, source, workdir)
                ran, failures = ran + page_ran, failures + page_failures
                continue
            blocks = markdown_blocks(source) if source.endswith(".md") else rst_blocks(source)
            where = os.path.relpath(source, args.repo)
            for language, line, text in blocks:
                label = f"{where}:{line}"
                if language == "python":
                    proc = subprocess.run([args.python, "-c", text], cwd=workdir, capture_output=True, text=True)
                    ran += 1
                    print(f"{'ok' if proc.returncode == 0 else 'FAIL':4s} {label} (python)")
                    if proc.returncode != 0:
                        failures.append(f"{label}: python snippet failed:\n{proc.stderr[-2000:]}")
                    continue
                if language != "lammps":
                    continue
                for n, snippet in enumerate(paragraphs(text)):
                    rundir = os.path.join(workdir, f"{os.path.basename(source)}.{line}.{n}")
                    os.makedirs(rundir)
                    for name in ("potentials", "examples", "models", "build-plugin", "build"):
                        os.symlink(os.path.join(workdir, name), os.path.join(rundir, name))
                    with open(os.path.join(rundir, "in.snippet"), "w") as f:
                        f.write(lammps_input(snippet))
                    proc = run_lammps(args.lmp, args.mpirun, 2, "in.snippet", rundir, timeout=180)
                    ran += 1
                    failures += filter(None, [judged(f"{label} paragraph {n + 1}", proc, snippet)])
                    if lj_spec is None and re.search(r"pair_style\s+nvalchemi\s+potentials/lj_ar\.pt2?\s*(#.*)?$",
                                                     snippet, re.MULTILINE):
                        lj_spec = effective_spec(proc.stdout)

        spec_doc = [text for language, _, text in rst_blocks(os.path.join(args.repo, "doc", "Howto_nvalchemi_spec.rst"))
                    if language == "json"]
        if lj_spec is None or len(spec_doc) != 1 or json.loads(spec_doc[0]) != lj_spec:
            failures.append("doc/Howto_nvalchemi_spec.rst: its JSON block is not the effective spec printed for "
                            f"potentials/lj_ar.pt2:\n{json.dumps(lj_spec, indent=2)}")
        else:
            print("ok   doc/Howto_nvalchemi_spec.rst JSON block = the effective spec of potentials/lj_ar.pt2")
    print(f"{ran} snippets run")
    if ran < 12:
        failures.append(f"only {ran} snippets found: the extraction is broken")
    if failures:
        sys.exit("FAIL:\n" + "\n\n".join(failures))


if __name__ == "__main__":
    main()
