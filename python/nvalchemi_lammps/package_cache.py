"""The exporters' cache of compiled AOTInductor packages: one compile per program, kept by what
the compiled code depends on, so that exporting the same model again (another name, another
session, the test suite's reference models) copies the package instead of compiling it for
minutes (doc/Howto_nvalchemi_export.rst, "TorchScript or AOTInductor").

The key is the exported program (its graph's code and every parameter, buffer and constant,
bytes included), the metadata and entries the package records, and what compiles it: torch's
version, the machine, the CPU target (ATEN_CPU_CAPABILITY, Inductor's -march, and for the
default -march=native this CPU's model and flags, so that a cache shared between machines never
hands one CPU's code to another), the device, and every TORCHINDUCTOR_* and AOT_INDUCTOR_*
setting of the environment but the Inductor cache's folder.

NVALCHEMI_PACKAGE_CACHE names the folder (default: $XDG_CACHE_HOME/nvalchemi-lammps/packages,
~/.cache when unset); "off" turns the cache off. Delete the folder to reclaim its space.
"""

import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
from typing import Dict, Optional

import torch


def cache_folder() -> Optional[str]:
    """The cache's folder, or None where NVALCHEMI_PACKAGE_CACHE is "off"."""
    chosen = os.environ.get("NVALCHEMI_PACKAGE_CACHE")
    if chosen == "off":
        return None
    if chosen:
        return chosen
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "nvalchemi-lammps", "packages")


def _update_tensor(digest, name: str, tensor: torch.Tensor) -> None:
    digest.update(f"{name} {tensor.dtype} {tuple(tensor.shape)}".encode())
    digest.update(tensor.detach().contiguous().cpu().view(-1).view(torch.uint8).numpy().tobytes())


def _this_cpu() -> str:
    """The CPU's model name and flags (/proc/cpuinfo): what -march=native compiles for."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = f.read().split("\n\n")[0].splitlines()
    except OSError:
        return platform.processor()
    return " ".join(line for line in lines if line.startswith(("model name", "flags")))


def package_key(program, recorded: Dict[str, str], device: str) -> str:
    """The sha256 of everything the package compiled from `program` (a torch.export program)
    with the metadata entries `recorded` depends on, compiled for `device`."""
    digest = hashlib.sha256()
    digest.update(program.graph_module.print_readable(print_output=False).encode())  # subgraphs included
    digest.update(str(program.graph_signature).encode())
    digest.update(str(program.range_constraints).encode())
    for name, tensor in sorted(program.state_dict.items()):
        _update_tensor(digest, name, tensor)
    for name, value in sorted(program.constants.items()):
        if isinstance(value, torch.Tensor):
            _update_tensor(digest, name, value)
        else:
            digest.update(f"{name} {value!r}".encode())
    # what changes the code (not where Inductor keeps its own cache)
    settings = {name: value for name, value in os.environ.items()
                if (name.startswith(("TORCHINDUCTOR_", "AOT_INDUCTOR_")) or name == "ATEN_CPU_CAPABILITY")
                and name != "TORCHINDUCTOR_CACHE_DIR"}
    march = torch._inductor.config.cpp.march
    gpu = torch.cuda.get_device_name() if device.startswith("cuda") and torch.cuda.is_available() else ""
    digest.update(json.dumps({"recorded": recorded, "device": device, "gpu": gpu, "torch": torch.__version__,
                              "machine": platform.machine(),
                              "cpu": torch.backends.cpu.get_cpu_capability(), "march": march,
                              # native: any instruction of this CPU, so the CPU itself
                              "this cpu": _this_cpu() if march in (None, "native") else "",
                              "settings": settings},
                             sort_keys=True).encode())
    return digest.hexdigest()


def reuse(key: str, path: str) -> bool:
    """Copy the package `key` names to `path` where the cache holds it; whether it did."""
    folder = cache_folder()
    kept = os.path.join(folder, key + ".pt2") if folder else None
    if not kept or not os.path.isfile(kept):
        return False
    shutil.copyfile(kept, path)
    print(f"reused the package compiled before for this program ({kept}; NVALCHEMI_PACKAGE_CACHE=off compiles "
          "anew)", file=sys.stderr, flush=True)
    return True


def keep(key: str, path: str) -> None:
    """Keep a copy of the package just written to `path` under `key` (whole or not at all); a
    cache that cannot be written is said and skipped."""
    folder = cache_folder()
    if not folder:
        return
    partial = None
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".partial", delete=False) as copy, open(path, "rb") as f:
            partial = copy.name
            shutil.copyfileobj(f, copy)
        os.replace(partial, os.path.join(folder, key + ".pt2"))
    except OSError as exc:
        print(f"note: the package cache {folder} could not keep {path}: {exc}", file=sys.stderr)
        if partial and os.path.exists(partial):
            os.remove(partial)


def forget(key: str) -> None:
    """Remove the package `key` names from the cache (one that failed the exporter's check)."""
    folder = cache_folder()
    kept = os.path.join(folder, key + ".pt2") if folder else None
    if kept and os.path.isfile(kept):
        os.remove(kept)
