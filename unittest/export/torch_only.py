"""The export tools as a user installs them: `pip install ./python` into a virtual
environment that holds PyTorch and nothing else (not ase, not numpy), then the documented
nvalchemi-export command (doc/Howto_nvalchemi_export.rst, with element symbols), nvalchemi-check
on what it wrote, and the framework exporters stopping with a message, not a traceback, where
their framework is missing or the output is not what they write.

    python torch_only.py --venv-python <venv>/bin/python --repo <repository>
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--venv-python", required=True)
    parser.add_argument("--repo", required=True)
    args = parser.parse_args()
    bin_dir = os.path.dirname(args.venv_python)
    failures = []

    def run(label, cmd, expect_ok=True, texts=()):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        out = proc.stdout + proc.stderr
        missing = [t for t in texts if t not in out]
        ok = (proc.returncode == 0) == expect_ok and not missing and "Traceback" not in out
        print(f"{'ok  ' if ok else 'FAIL'} {label}: exit {proc.returncode}")
        if not ok:
            failures.append(f"{label}: exit {proc.returncode}, missing {missing}\n{out[-3000:]}")
        return out

    with tempfile.TemporaryDirectory(prefix="nvalchemi-torch-only-") as workdir:
        # a copy, so that building the package writes nothing into the repository
        source = os.path.join(workdir, "python")
        shutil.copytree(os.path.join(args.repo, "python"), source,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
        schnet = shutil.copy(os.path.join(args.repo, "models", "schnet.py"), workdir)  # a user's model file
        run("pip install ./python", [args.venv_python, "-m", "pip", "install", "-q", "--no-deps",
                                         "--no-build-isolation", "--force-reinstall", source])
        run("the environment has no ase and no numpy", [args.venv_python, "-c",
            "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) for m in ('ase', 'numpy')))"])
        model = os.path.join(workdir, "schnet.pt")
        os.chdir(workdir)  # nothing of the repository on the path: only what pip installed
        run("nvalchemi-export with element symbols",
            [os.path.join(bin_dir, "nvalchemi-export"), f"{schnet}:SchNet", "--kwargs", '{"layerwise": true}',
             "-o", model, "--cutoff", "2.5", "--species", "Ar", "--units", "lj", "--spec",
             '{"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 3}'], texts=['"species": [18]'])
        run("nvalchemi-check on it", [os.path.join(bin_dir, "nvalchemi-check"), model],
            texts=["PASS  in step", "PASS  split", "is ready for pair_style nvalchemi"])
        run("nvalchemi-export refuses a symbol that is no element",
            [os.path.join(bin_dir, "nvalchemi-export"), f"{schnet}:SchNet", "-o", model, "--cutoff", "2.5",
             "--species", "Xx", "--units", "lj"], expect_ok=False, texts=["'Xx' is not a chemical element symbol"])
        run("nvalchemi-mace-export without mace-torch", [os.path.join(bin_dir, "nvalchemi-mace-export"),
                                                         "my.model", "-o", "my.pt"],
            expect_ok=False, texts=["mace-torch is not installed"])
        run("nvalchemi-nequip-export without nequip", [os.path.join(bin_dir, "nvalchemi-nequip-export"),
                                                       "my.ckpt", "-o", "my.pt", "--units", "metal"],
            expect_ok=False, texts=["the nequip framework is not installed"])
    if failures:
        sys.exit("FAIL:\n" + "\n".join(failures))


if __name__ == "__main__":
    main()
