"""Tiny random nequip-framework models from minimal configs (fixed seeds, H and O, r_max 3 A):
a 2-layer NequIP and a 2-layer Allegro, each saved with torch.save as the oracle's source, and
their exports by nequip_export (python/nvalchemi_lammps/nequip_export.py): NequIP in halo modes
layerwise and deep as TorchScript (the layerwise one updating owned rows only:
owned_rows_only.py); Allegro as TorchScript; and both as nequip-compile writes them for
pair_style nequip and allegro (nequip.nequip.pth, allegro.nequip.pth). And the path a user takes: nequip-train on
nequip_train.yaml (one epoch of a Cu NequIP) writes a checkpoint, which the
nvalchemi-nequip-export command exports (trained_cu.pt; --units required, the checkpoint not
recording them). With --packages, the AOTInductor packages (.pt2) of NequIP (layerwise, updating
owned rows only too) and Allegro instead, kept between runs (harness.kept_file) under a key of
the models' parameters, the exporter's sources and the versions that compile them (a test of
its own, so that the compile keeps no other test waiting). The same fixture compiles, with
nequip-compile --mode aotinductor itself, what pair_style allegro and nequip read: an Allegro
trained (one epoch, nequip_train.yaml with the model swapped on the command line; float64, and
float32 inside) for --target pair_allegro (allegro_trained.nequip.pt2, allegro32_trained...), and the trained Cu NequIP for --target
pair_nequip (nequip_trained.nequip.pt2, which pair_style nvalchemi refuses with the reason).

    python unittest/export/nequip_models.py [--packages] <output dir>
"""

import importlib.metadata
import os
import subprocess
import sys

import torch

from nvalchemi_lammps import nequip_export
from owned_rows_only import require_owned_rows_only

R_MAX = 3.0
COMMON = dict(seed=20261201, model_dtype="float64", r_max=R_MAX, type_names=["H", "O"], avg_num_neighbors=6.0,
              per_type_energy_scales={"H": 1.0, "O": 0.8}, per_type_energy_shifts={"H": -13.6, "O": -432.1})


def tiny_models():
    from nequip.utils.global_state import set_global_state
    set_global_state()
    from nequip.model import NequIPGNNModel
    from allegro.model import AllegroModel
    nequip = NequIPGNNModel(num_layers=2, l_max=1, num_features=8, radial_mlp_width=16, **COMMON)
    allegro = AllegroModel(num_layers=2, l_max=1, num_scalar_features=8, num_tensor_features=4,
                           radial_chemical_embed={"_target_": "allegro.nn.TwoBodyBesselScalarEmbed", "num_bessels": 4},
                           radial_chemical_embed_dim=8, scalar_embed_mlp_hidden_layers_width=16,
                           allegro_mlp_hidden_layers_width=16, readout_mlp_hidden_layers_width=8, **COMMON)
    return {"nequip": nequip.eval(), "allegro": allegro.eval()}


def compile_torchscript(model, path: str) -> None:
    """The file pair_style nequip and allegro read (.nequip.pth), which pair_style nvalchemi reads as it
    is: written by the function nequip-compile --mode torchscript calls, with the metadata it gives (the
    command itself refuses torch 2.10 and newer and wants a training checkpoint)."""
    from nequip.model.inference_models.torchscript import save_torchscript_model
    from nequip.utils.global_state import get_latest_global_state
    metadata = dict(model.metadata)
    metadata.update(get_latest_global_state(only_metadata_related=True))
    metadata = {key: str(int(value)) if isinstance(value, bool) else value for key, value in metadata.items()}
    save_torchscript_model(model, metadata, path, "cpu")


def main(outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    models = tiny_models()
    for name, model in models.items():
        torch.save(model, os.path.join(outdir, f"{name}.model"))
    for name, file, halo in (("nequip", "nequip_layerwise.pt", "layerwise"), ("nequip", "nequip_deep.pt", "deep"),
                             ("allegro", "allegro.pt", "layerwise")):
        nequip_export.export(models[name], os.path.join(outdir, file), units="metal", halo=halo)
    require_owned_rows_only(os.path.join(outdir, "nequip_layerwise.pt"))
    for name, model in models.items():
        compile_torchscript(model, os.path.join(outdir, f"{name}.nequip.pth"))

    bin_dir = os.path.dirname(sys.executable)
    here = os.path.dirname(os.path.abspath(__file__))
    train_dir = os.path.join(outdir, "train")
    subprocess.run([os.path.join(bin_dir, "nequip-train"), "-cp", here, "-cn", "nequip_train.yaml",
                    f"hydra.run.dir={train_dir}"], check=True)
    command = [os.path.join(bin_dir, "nvalchemi-nequip-export"), os.path.join(train_dir, "last.ckpt"),
               "-o", os.path.join(outdir, "trained_cu.pt")]
    # the checkpoint does not record its units: the export must ask for them, not assume metal
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode == 0 or "give --units" not in proc.stderr:
        sys.exit(f"FAIL: nvalchemi-nequip-export without --units did not stop with a message:\n{proc.stderr[-2000:]}")
    subprocess.run(command + ["--units", "metal"], check=True)
    for run_dir, dtype in (("train_allegro", "float64"), ("train_allegro32", "float32")):
        subprocess.run([os.path.join(bin_dir, "nequip-train"), "-cp", here, "-cn", "nequip_train.yaml",
                        f"hydra.run.dir={os.path.join(outdir, run_dir)}", *ALLEGRO_TRAINING,
                        f"training_module.model.model_dtype={dtype}"], check=True)


# nequip_train.yaml's model made an Allegro (hydra overrides), the sizes of tiny_models' Allegro
ALLEGRO_TRAINING = [
    "training_module.model._target_=allegro.model.AllegroModel",
    "~training_module.model.num_features", "~training_module.model.radial_mlp_width",
    "+training_module.model.num_scalar_features=8", "+training_module.model.num_tensor_features=4",
    "+training_module.model.radial_chemical_embed={_target_: allegro.nn.TwoBodyBesselScalarEmbed, num_bessels: 4}",
    "+training_module.model.radial_chemical_embed_dim=8",
    "+training_module.model.scalar_embed_mlp_hidden_layers_width=16",
    "+training_module.model.allegro_mlp_hidden_layers_width=16",
    "+training_module.model.readout_mlp_hidden_layers_width=8"]


# the packages the tests run: (model, file, halo)
PACKAGES = (("nequip", "nequip_layerwise.pt2", "layerwise"), ("allegro", "allegro.pt2", "layerwise"))
# nequip-compile's packages for the frameworks' pair styles: (checkpoint, file, target)
NEQUIP_COMPILED = (("train_allegro/last.ckpt", "allegro_trained.nequip.pt2", "pair_allegro"),
                   ("train_allegro32/last.ckpt", "allegro32_trained.nequip.pt2", "pair_allegro"),
                   ("train/last.ckpt", "nequip_trained.nequip.pt2", "pair_nequip"))


def checkpoint_parameters(path: str):
    """The arrays of a training checkpoint's weights (its bytes record more than the model)."""
    def arrays(state):
        for value in state.values():
            if isinstance(value, dict):
                yield from arrays(value)
            elif isinstance(value, torch.Tensor):
                yield value.numpy()
    return list(arrays(torch.load(path, weights_only=False)["state_dict"]))


def packages(outdir: str) -> None:
    """The AOTInductor packages of the models main saved."""
    import nequip
    from harness import kept_file, package_key
    allegro_version = importlib.metadata.version("nequip-allegro")
    from nequip.utils.global_state import set_global_state
    set_global_state()
    for name, file, halo in PACKAGES:
        model = torch.load(os.path.join(outdir, f"{name}.model"), weights_only=False)
        parameters = [value.numpy() for value in model.state_dict().values()]
        key = package_key(*parameters, nequip.__version__, allegro_version, name, halo)
        kept_file(key, os.path.join(outdir, file),
                  lambda path: nequip_export.export(model, path, units="metal", halo=halo))
    require_owned_rows_only(os.path.join(outdir, "nequip_layerwise.pt2"))
    compile_command = os.path.join(os.path.dirname(sys.executable), "nequip-compile")
    for checkpoint, file, target in NEQUIP_COMPILED:
        checkpoint = os.path.join(outdir, checkpoint)
        key = package_key(*checkpoint_parameters(checkpoint), nequip.__version__, allegro_version, target)
        kept_file(key, os.path.join(outdir, file),
                  lambda path: subprocess.run([compile_command, checkpoint, path, "--mode", "aotinductor",
                                               "--device", "cpu", "--target", target], check=True))


if __name__ == "__main__":
    if sys.argv[1] == "--packages":
        packages(sys.argv[2])
    else:
        main(sys.argv[1])
